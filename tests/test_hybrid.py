"""The `hybrid` agent: behaviour on a small hand-made conversation, and its LoCoMo figure
on the shared conv-26 (the bench's number, kept here so a change to it is seen)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memplug.adapters.hybrid import HybridAgent, date_intervals, strip_stamp, tokens
from memplug.models import AgentQuestion, Chunk, Message
from memplug.protocols import AgentConfig

CONV26 = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_conv26.json"

#: (session, date_time, iso, speaker, text)
TURNS = [
    ("D1", "1:56 pm on 8 May, 2023", "2023-05-08T13:56:00", "Anna", "Hey Ben! I went to a pottery class yesterday."),
    ("D1", "1:56 pm on 8 May, 2023", "2023-05-08T13:56:00", "Ben", "Nice, Anna! What did you make?"),
    ("D1", "1:56 pm on 8 May, 2023", "2023-05-08T13:56:00", "Anna", "A blue bowl for my mother."),
    ("D2", "3:10 pm on 2 June, 2023", "2023-06-02T15:10:00", "Ben", "Anna, I adopted a puppy called Rex last week!"),
    ("D2", "3:10 pm on 2 June, 2023", "2023-06-02T15:10:00", "Anna", "Ben, that is lovely. Dogs are great."),
    ("D2", "3:10 pm on 2 June, 2023", "2023-06-02T15:10:00", "Ben", "See ya!"),
    ("D3", "9:00 am on 20 October, 2023", "2023-10-20T09:00:00", "Anna", "I ran my first marathon in Chicago."),
    ("D3", "9:00 am on 20 October, 2023", "2023-10-20T09:00:00", "Ben", "Anna, congrats on the race!"),
    ("D3", "9:00 am on 20 October, 2023", "2023-10-20T09:00:00", "Anna", "Thanks Ben, my legs still hurt."),
]


def _messages():
    counters: dict[str, int] = {}
    for session, when, iso, speaker, text in TURNS:
        counters[session] = counters.get(session, 0) + 1
        yield Message(
            f"{session}:{counters[session]}",
            f'{when}: {speaker} said, "{text}"',
            time=iso,
            speaker=speaker,
            meta={"session": session},
        )


def _agent(**options: Any) -> HybridAgent:
    agent = HybridAgent(AgentConfig(options=options, top_k=options.pop("top_k", 3), sample_id="s"), Path("."))
    for i, m in enumerate(_messages()):
        agent.ingest(Chunk(i, (m,)))
    return agent


def _ask(agent: HybridAgent, text: str) -> list[str]:
    return [item.message_ids[0] for item in agent.recall(AgentQuestion("q", text, "c")).items]


def test_tokens_stem_drop_stopwords_and_names():
    assert tokens("What did Anna paint? Paintings!", frozenset({"anna"})) == ["paint", "paint"]
    assert tokens("我喜欢猫") == ["我", "喜", "欢", "猫", "我喜", "喜欢", "欢猫"]


def test_leading_timestamp_is_cut_and_dates_parse():
    assert strip_stamp('1:56 pm on 8 May, 2023: Anna said, "Hi"') == 'Anna said, "Hi"'
    assert strip_stamp("My sister is 41. (time: April 3, 2024)") == "My sister is 41. (time: April 3, 2024)"
    ((start, month, end),) = date_intervals("What did Anna do on December 4, 2023?")
    assert start is not None and end is not None
    assert (start.day, start.month, month, (end - start).days) == (4, 12, None, 1)
    assert date_intervals("What happened in October?") == [(None, 10, None)]
    assert len(date_intervals("2024年04月01日 做了什么")) == 1


def test_best_turn_first_and_name_alone_is_no_match():
    agent = _agent()
    # "See ya!" (Ben, short) must not win on the name; the puppy turn must
    assert _ask(agent, "What is the name of Ben's puppy?")[0] == "D2:1"
    assert _ask(agent, "What did Anna make in the pottery class?")[0] in {"D1:1", "D1:3"}


def test_speaker_prior_prefers_the_named_speaker():
    agent = _agent(dense=0.0, expand=0.0)
    scores = agent.scores("What does Anna think about dogs?")
    assert scores[4] > scores[3]  # Anna's "Dogs are great" over Ben's puppy news


def test_date_prior_reaches_the_session_of_that_month():
    with_date = _agent(keep=5, dense=0.0, expand=0.0).scores("What did Anna do in October 2023?")
    without = _agent(keep=5, dense=0.0, expand=0.0, date=0.0).scores("What did Anna do in October 2023?")
    assert (with_date - without)[6:].min() == pytest.approx(0.6) and (with_date - without)[:6].max() == 0


def test_session_aware_selection_spreads_sessions_and_keep_turns_it_off():
    spread = _ask(_agent(keep=1, top_k=3), "Anna Ben race bowl puppy")
    assert len({i.split(":")[0] for i in spread}) == 3
    plain = _agent(keep=3, top_k=3)
    ranked = plain.scores("Anna Ben race bowl puppy").argsort()[::-1][:3]
    assert _ask(plain, "Anna Ben race bowl puppy") == [plain.ids[i] for i in ranked]


def test_messages_without_sessions_are_plain_top_k_and_empty_memory_recalls_nothing():
    agent = HybridAgent(AgentConfig(options={}, top_k=2, sample_id="s"), Path("."))
    assert agent.recall(AgentQuestion("q", "anything", "c")).items == ()
    for i, text in enumerate(["My sister is a nurse.", "I like tea.", "My brother is a pilot."]):
        agent.ingest(Chunk(i, (Message(str(i), text, speaker="user"),)))
    assert _ask(agent, "What is my sister's job?")[0] == "0"
    assert len(_ask(agent, "What is my sister's job?")) == 2


def test_stored_lists_every_turn_with_its_message_id():
    """stored() lists the turns as recall returns them, in the form stored.jsonl takes."""
    from memplug import stored

    items = _agent().stored()
    assert [item.message_ids for item in items] == [(m.id,) for m in _messages()]
    assert [item.text for item in items] == [m.text for m in _messages()]
    assert items[3].meta == {"session": "D2", "speaker": "Ben"} and items[3].id == "3"
    assert HybridAgent(AgentConfig(options={}, sample_id="s"), Path(".")).stored() == []
    line = stored.entry("s", items)
    assert line["total"] == len(TURNS) and line["items"][0]["message_ids"] == ["D1:1"]


@pytest.mark.skipif(not CONV26.exists(), reason="the shared LoCoMo conversation is not here")
def test_conv26_figures():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from locomo_retrieval import evaluate

    from memplug.datasets.locomo.release import load_release

    result = evaluate(HybridAgent, {}, list(load_release(CONV26)), 5)
    # measured with bench/locomo_retrieval.py (docs/agents/hybrid.md); bm25 gets 0.4583 / 0.8400
    assert result["n"] == 150
    assert result["turn_recall@5"] == pytest.approx(0.6206, abs=1e-4)
    assert result["session_hit@5"] == pytest.approx(0.9533, abs=1e-4)
