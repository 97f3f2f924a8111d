"""The editable memory graph: extraction, partitions, the three edits, traversal, answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memplug.adapters.emg import EMGAgent
from memplug.adapters.emg.extract import Triple, extract_triple
from memplug.adapters.emg.graph import DELETION, INSERTION, REPLACEMENT, MemoryGraph, differs_in_value_only
from memplug.adapters.emg.taxonomy import partition_of
from memplug.models import AgentQuestion, Chunk, Message
from memplug.protocols import AgentConfig


@pytest.mark.parametrize(
    "sentence, triple",
    [
        ("Roy Rogers is married to Dale Evans.", ("Roy Rogers", "is married to", "Dale Evans")),
        (
            "Gabe Newell is a citizen of United States of America.",
            ("Gabe Newell", "is a citizen of", "United States of America"),
        ),
        ("Hines Ward plays the position of wide receiver.", ("Hines Ward", "plays the position of", "wide receiver")),
        ("The capital of Romania is Bucharest.", ("Romania", "capital is", "Bucharest")),
        (
            "The univeristy where Joan Didion was educated is University of California, Berkeley.",
            ("Joan Didion", "univeristy where was educated is", "University of California, Berkeley"),
        ),
        (
            "The Wheel of Time was written in the language of English.",
            ("The Wheel of Time", "was written in the language of", "English"),
        ),
        (
            "310. goaltender is associated with the sport of ice hockey.",
            ("goaltender", "is associated with the sport of", "ice hockey"),
        ),
        (
            "Pedro Pierluisi worked in the city of Washington, D.C..",
            ("Pedro Pierluisi", "worked in the city of", "Washington, D.C."),
        ),
    ],
)
def test_rule_based_extraction(sentence, triple):
    assert extract_triple(sentence) == Triple(*triple)


def test_partitions_follow_the_seed_taxonomy():
    assert partition_of("Roy Rogers is married to") == ("Relationship", "spouse")
    assert partition_of("我的上司名叫") == ("Relationship", "colleague/friends")
    assert partition_of("zzz") == ("Attribute", "other")


def test_insertion_replacement_and_deletion():
    graph = MemoryGraph(extract_triple)
    first = graph.add("Roy Rogers is married to Dale Evans.", "1")
    other = graph.add("Roy Rogers was born in the city of Cincinnati.", "2")
    second = graph.add("Roy Rogers is married to John McVie.", "3")
    assert (first.operation, other.operation, second.operation) == (INSERTION, INSERTION, REPLACEMENT)
    assert not first.current and first.replaced_by == second.index and other.current and second.current
    voucher = graph.add("The hotel voucher is valid until 2024-05-14.", "4")
    assert voucher.operation == DELETION
    assert voucher.expires is not None
    assert voucher.valid_at(None) and not voucher.valid_at(voucher.expires + 1)


def test_value_only_difference_without_a_triple():
    assert differs_in_value_only("我的上司名叫王芳。", "我的上司名叫赵雅琳。")
    assert not differs_in_value_only("我表妹今年36岁。", "我表弟今年36岁。")


FACTS = [
    "The author of Our Mutual Friend is Charles Dickens.",
    "Charles Dickens is married to Catherine Hogarth.",
    "Catherine Hogarth is a citizen of United Kingdom.",
    "Charles Dickens is a citizen of France.",
    "Alta IF is associated with the sport of association football.",
    "Thomas Kyd was born in the city of London.",
    "Alta IF is associated with the sport of baseball.",
    "Catherine Hogarth is a citizen of Belgium.",
]


def agent_with_facts(**options: Any) -> EMGAgent:
    agent = EMGAgent(AgentConfig(options=options, top_k=3), Path("."))
    agent.ingest(Chunk(0, [Message(str(i), t) for i, t in enumerate(FACTS[:4])]))
    agent.ingest(Chunk(1, [Message(str(i + 4), t) for i, t in enumerate(FACTS[4:])]))
    return agent


def test_single_hop_answer_is_the_current_value_as_a_short_span():
    recall = agent_with_facts().recall(AgentQuestion("q", "Which sport is Alta IF associated with?", "sh"))
    assert recall.answer == "baseball"
    assert recall.items[0].message_ids == ("6",)  # the current fact outranks the replaced one
    assert ("4",) in [i.message_ids for i in recall.items][1:] or len(recall.items) == 3


def test_multi_hop_walks_the_graph_nearest_relation_first():
    question = "What is the country of citizenship of the spouse of the author of Our Mutual Friend?"
    recall = agent_with_facts().recall(AgentQuestion("q", question, "mh"))
    assert recall.answer == "Belgium"
    assert [i.message_ids[0] for i in recall.items[:3]] == ["0", "1", "7"]


def test_answer_never_leaves_the_answer_to_the_reader_and_expansion_still_gathers_facts():
    question = "What is the country of citizenship of the spouse of the author of Our Mutual Friend?"
    recall = agent_with_facts(answer="never", activate=1).recall(AgentQuestion("q", question, "mh"))
    assert recall.answer is None
    assert {"0", "1"} <= {i.message_ids[0] for i in recall.items}


def test_the_rules_recognise_every_mquake_relation_template(shared_data: Path) -> None:
    """FactConsolidation's facts are MQuAKE's cloze templates filled in: each one yields its triple."""
    import json

    cloze = json.loads((shared_data / "mquake" / "cloze_templates.json").read_text(encoding="utf-8"))
    assert len(cloze) >= 40
    for relation, template in cloze.items():
        sentence = template.replace("[X]", "Mount Vesuvius Corp").replace("__", "Eleanor Rigby Smith") + "."
        triple = extract_triple(sentence)
        assert triple is not None, (relation, sentence)
        assert triple.value == "Eleanor Rigby Smith" and "Vesuvius" in triple.subject, (relation, triple)


def test_sentences_outside_the_templates_fall_back_to_retrieval(tmp_path: Path) -> None:
    outside = [
        "Yesterday, it rained.",
        "我的上司名叫赵雅琳。",
        "Is it?",
        "...",
        "Lunch at noon with Ana, then the dentist",
    ]
    assert [extract_triple(s) for s in outside[:4]] == [None, None, None, None]
    agent = EMGAgent(AgentConfig(top_k=2), tmp_path)
    agent.ingest(Chunk(0, tuple(Message(f"m{i}", text) for i, text in enumerate(outside))))
    recall = agent.recall(AgentQuestion("q", "Who is my boss? 我的上司叫什么名字？", "open"))
    assert recall.answer is None  # no fact to walk: the reader answers from what was retrieved
    assert "m1" in {mid for item in recall.items for mid in item.message_ids}


def test_a_message_of_many_facts_is_one_memory_per_fact(tmp_path: Path) -> None:
    """FactConsolidation's official memory unit is a chunk of numbered facts: each becomes a memory."""
    from memplug.adapters.emg.agent import sentences

    chunk_text = (
        "<User> The following context is the facts I have learned: \n0. Roy Rogers is married to "
        "Dale Evans. 1. Roy Rogers is married to Ann Smith. 2. Pedro Pierluisi worked in the city of "
        "Washington, D.C.. 3. The capital of Romania is Bucharest."
    )
    parts = sentences(chunk_text)
    assert parts[1:] == [
        "Roy Rogers is married to Dale Evans.",
        "1. Roy Rogers is married to Ann Smith.",
        "2. Pedro Pierluisi worked in the city of Washington, D.C..",
        "3. The capital of Romania is Bucharest.",
    ]
    assert sentences("我的上司名叫赵雅琳。 (消息地点 广东深圳, 消息时间 2024)") == [
        "我的上司名叫赵雅琳。 (消息地点 广东深圳, 消息时间 2024)"
    ]
    agent = EMGAgent(AgentConfig(top_k=3), tmp_path)
    agent.ingest(Chunk(0, (Message("chunk0", chunk_text),)))
    recall = agent.recall(AgentQuestion("q", "Who is Roy Rogers married to?", "sh"))
    assert recall.answer == "Ann Smith"  # the later fact replaced the earlier one
    assert recall.items[0].message_ids == ("chunk0",)


def _naive_expand(agent: EMGAgent, start: int, scores: np.ndarray, depth: int, out: dict[int, float]) -> None:
    """The expansion as first written: every neighbour list read again at every memory."""
    if depth == 0:
        return
    for i in agent.graph.neighbours(agent.graph.memories[start]):
        if i not in out and scores[i] > 0:
            out[i] = float(scores[i])
            _naive_expand(agent, i, scores, depth - 1, out)


@pytest.mark.parametrize("per_hobby", [100, 400])  # 300 facts: lists in Python; 1,200: in numpy
def test_expansion_through_a_hub_skips_lists_already_read_and_keeps_the_same_memories(per_hobby: int) -> None:
    """A hub entity ("I") is read once per recall, not once per member; same result."""
    texts = [
        f"I started learning {h} with Anna Berg{i}." for i, h in enumerate(["chess", "yoga", "tennis"] * per_hobby)
    ]
    texts += [f"Anna Berg{i} is married to Ben Cruz{i}." for i in range(0, 300, 7)]
    agent = EMGAgent(AgentConfig(), Path("."))
    agent.ingest(Chunk(0, [Message(str(i), t) for i, t in enumerate(texts)]))
    scores = agent.retriever.scores("Who am I learning chess with, and who is Anna Berg14 married to?")
    fast: dict[int, float] = {}
    naive: dict[int, float] = {}
    done: set[tuple[str, str]] = set()
    for i in [0, 301, 14]:
        fast.setdefault(i, float(scores[i]))
        naive.setdefault(i, float(scores[i]))
        agent._expand(i, scores, 3, fast, done)
        _naive_expand(agent, i, scores, 3, naive)
    assert list(fast.items()) == list(naive.items()) and len(fast) > 300


def test_top1_votes_counted_in_numpy_pick_the_same_memory() -> None:
    graph = MemoryGraph(lambda text: None)  # no triples: top-1 by shared tokens
    for i in range(600):
        graph.add(f"my note {i % 7} about walks parks rivers {i % 11} and hills {i % 13}", str(i))
    probe = graph.memories[-1]
    postings = graph._postings[probe.partition]
    from memplug.adapters.emg.graph import tokenize

    lists = [postings[t] for t in set(tokenize(probe.text)) if 0 < len(postings[t]) <= 1000]
    votes: dict[int, int] = {}
    for hits in lists:
        for i in hits:
            if graph.memories[i].current:
                votes[i] = votes.get(i, 0) + 1
    assert sum(map(len, lists)) > 256
    assert graph._top1_numpy(lists) is graph.memories[max(votes, key=lambda i: (votes[i], i))]


def test_recall_through_a_hub_returns_at_most_max_items() -> None:
    texts = [f"I started learning {h} with Anna Berg{i}." for i, h in enumerate(["chess", "yoga", "tennis"] * 100)]
    chunk = Chunk(0, [Message(str(i), t) for i, t in enumerate(texts)])
    question = AgentQuestion("q", "Who am I learning chess with?", "test")
    sizes = {}
    for limit in (100, 0):
        agent = EMGAgent(AgentConfig(options={"max_items": limit}), Path("."))
        agent.ingest(chunk)
        sizes[limit] = agent.recall(question).items
    assert len(sizes[100]) == 100 and len(sizes[0]) > 100
    assert sizes[100] == sizes[0][:100]  # the cap keeps the order and cuts the tail


@pytest.mark.parametrize(
    "text, expires",
    [
        ("The pass expires on 2024-05-01.", 1714521600.0),
        ("VALID UNTIL 2024-01-01", 1704067200.0),
        ("membership EXPIRING 2025-01-01;", 1735689600.0),
        ("有效期至2024年5月1日。", 1714521600.0),
        ("untıl 2023-02-02", 1675296000.0),  # dotless i: Unicode case folding, so the expression decides
        ("Eugene moved from Paris to Oslo in 1963.", None),
    ],
)
def test_expiry_with_and_without_the_ascii_shortcut(text: str, expires: float | None) -> None:
    from memplug.adapters.emg.graph import expiry_of

    assert expiry_of(text) == expires


def test_a_hub_is_matched_in_numpy_with_the_same_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entity with many relations (HUB_RELATIONS or more) is matched against each word in
    one matrix product; the walks and recalls equal the one-relation-at-a-time walk's."""
    import memplug.adapters.emg.answer as answer

    hobbies = ["chess", "yoga", "tennis", "salsa", "pottery", "fencing", "sailing", "karate"]
    texts = [f"I started learning {h} level{i} in Oslo with Anna Berg{i}." for i, h in enumerate(hobbies * 15)]
    texts += [f"I started learning {h} with Anna Berg{i}." for i, h in enumerate(hobbies * 2)]
    texts += [f"Anna Berg{i} is married to Ben Cruz{i}." for i in range(0, 120, 7)]
    texts += ["My sister Ann works as a nurse in Oslo.", "I live in Paris."]
    questions = [
        "Who am I learning chess with?",
        "Where am I learning chess level16?",
        "Where do I live?",
        "Who is Anna Berg14 married to?",
        "Who is the spouse of the person I learn salsa with?",
        "What is my favourite colour?",
    ]
    recalls = {}
    for hub in (answer.HUB_RELATIONS, 10**9):
        monkeypatch.setattr(answer, "HUB_RELATIONS", hub)
        agent = EMGAgent(AgentConfig(), Path("."))
        agent.ingest(Chunk(0, [Message(str(i), t) for i, t in enumerate(texts)]))
        assert len(agent.answerer._relations("i")) >= 64
        recalls[hub] = [agent.recall(AgentQuestion(str(j), q, "test")) for j, q in enumerate(questions)]
    assert recalls[answer.HUB_RELATIONS] == recalls[10**9]
    assert sum(r.answer is not None for r in recalls[10**9]) >= 3
