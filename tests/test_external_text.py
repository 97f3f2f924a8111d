"""What external memory systems (mem0, letta, cognee, llamaindex, mcp, graphiti) are given
for each dataset's messages: the benchmark's own text, with ``[time] speaker:`` put before
it only for what the text does not already show (``Message.shows``). Before that rule,
Cognee stored "[2024-03-02T10:00:00] Ana: [2024-03-02T10:00] Ana: We land at 6." (issue 28).

No external system runs here: message_text, chunk_text and graphiti's episode_body are
called on samples that the dataset builders load from the real releases in ../shared/data,
the repository's fixtures, or small files in the release layout."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

from memplug.adapters import graphiti
from memplug.adapters.external import chunk_text, message_text
from memplug.chunking import chunk_messages
from memplug.datasets.conversations.builder import ConversationsBuilder
from memplug.datasets.locomo.builder import LoCoMoBuilder
from memplug.datasets.locomo_plus.builder import LoCoMoPlusBuilder
from memplug.datasets.longmemeval.builder import LongMemEvalBuilder
from memplug.datasets.membench.builder import MemBenchBuilder
from memplug.datasets.memsim.generator import MemSimBuilder
from memplug.datasets.memsim.memdaily import MemDailyLoader
from memplug.datasets.perltqa.builder import PerLTQABuilder
from memplug.errors import DataError
from memplug.models import Chunk, Message, Sample
from memplug.options import resolve
from memplug.protocols import BuildOptions
from memplug.serialize import dumps_sample, sample_from_dict

FIXTURES = Path(__file__).parent / "fixtures"
CAROLINE = 'Caroline said, "Hey Mel! Good to see you! How have you been?"'


def messages(builder: Any, data: Path | None = None, samples: int = 1, **given: str) -> list[Message]:
    """The messages of the first ``samples`` samples the builder makes with these -o values
    (``Any``: a builder's literal ``options`` tuple is not the protocol's ``tuple[Option, ...]``)."""
    values = resolve(builder.options, given, "test")
    built = islice(builder.build(BuildOptions(values=values, data=data, seed=1)), samples)
    return [m for s in built for m in s.messages]


def test_a_message_that_shows_nothing_gets_time_and_speaker():
    m = Message("1", "We land at 6.", time="2024-03-02T10:00:00", speaker="Ana")
    assert message_text(m) == "[2024-03-02T10:00:00] Ana: We land at 6."
    assert message_text(Message("1", "x", time="t", speaker="Ana", shows=["time"])) == "Ana: x"
    assert message_text(Message("1", "x", time="t", speaker="Ana", shows=["speaker"])) == "[t] x"
    assert message_text(Message("1", "x", time="t", speaker="Ana", shows=["speaker", "time"])) == "x"
    assert message_text(Message("1", "x")) == "x"


def test_shows_takes_only_time_and_speaker_in_one_order():
    assert Message("1", "x", shows=["speaker", "time", "speaker"]).shows == ("time", "speaker")
    with pytest.raises(ValueError, match="unknown"):
        Message("1", "x", shows=["date"])


def test_conversations_text_is_stored_once(tmp_path: Path) -> None:
    """The issue's own example: the layout writes "[date] speaker: text" itself."""
    path = tmp_path / "trip.jsonl"
    row = {
        "id": "trip",
        "sessions": [
            {
                "id": "S1",
                "date": "2024-03-02T10:00",
                "turns": [{"speaker": "Ana", "text": "We land at 6."}, {"speaker": "Bo", "text": "I'll be there."}],
            }
        ],
        "qa": [{"question": "When do we land?", "answers": ["6"]}],
    }
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    dated = messages(ConversationsBuilder(), path)
    assert chunk_text(Chunk(0, dated)) == "[2024-03-02T10:00] Ana: We land at 6.\n[2024-03-02T10:00] Bo: I'll be there."
    undated = messages(ConversationsBuilder(), path, dates="false")
    assert message_text(undated[0]) == "[2024-03-02T10:00:00] Ana: We land at 6."


def test_locomo_line_is_the_official_rag_line(shared_data: Path) -> None:
    conv26 = shared_data / "locomo" / "locomo_conv26.json"
    first = messages(LoCoMoBuilder(), conv26)[0]
    assert message_text(first) == first.text == f"1:56 pm on 8 May, 2023: {CAROLINE}"
    assert graphiti.episode_body((first,)) == first.text
    undated = messages(LoCoMoBuilder(), conv26, dates="false")[0]
    assert message_text(undated) == f"[2023-05-08T13:56:00] {CAROLINE}"


def test_locomo_plus_stitched_turns_name_their_speaker_once(shared_data: Path) -> None:
    found = messages(
        LoCoMoPlusBuilder(),
        shared_data / "locomo_plus" / "locomo_plus_sample.json",
        locomo=str(shared_data / "locomo" / "locomo_conv26.json"),
        categories="cognitive",
    )
    cue = next(m for m in found if m.id == "cue:1")
    assert (
        message_text(cue) == f"[{cue.time}] Caroline said, \"After learning to say 'no', I’ve felt a lot "
        'less stressed overall."'
    )


def test_longmemeval_official_text_carries_its_date_and_role():
    path = FIXTURES / "longmemeval" / "longmemeval_s_cleaned.json"
    first = messages(LongMemEvalBuilder(), path)[0]
    assert message_text(first) == first.text and first.text.startswith("Session Date: 2023/05/20 (Sat) 02:21\n")
    plain = messages(LongMemEvalBuilder(), path, text="plain")[0]
    assert message_text(plain) == "[2023-05-20T02:21:00] user: Can you suggest a good recipe for banana bread?"


def test_memsim_stamp_is_its_time():
    stamped = messages(MemSimBuilder(), n="6")[0]
    assert stamped.time == "2024-04-01T19:25"
    assert message_text(stamped) == (
        "user: My assistant's phone number is 2067497795. (place: Atlanta, time: April 1, 2024, Monday, 19:25)"
    )
    bare = messages(MemSimBuilder(), n="6", stamp="false")[0]
    assert message_text(bare) == "[2024-04-01T19:25] user: My assistant's phone number is 2067497795."


def test_memdaily_stamp_is_its_time(shared_data: Path) -> None:
    first = messages(MemDailyLoader(), shared_data / "memdaily" / "01_simple_roles.json")[0]
    assert (
        message_text(first) == "user: 我的上司就只有高中学历。 (消息地点 广东深圳, 消息时间 2024年04月01日 周一 08:39)"
    )


def test_membench_steps_carry_their_time(tmp_path: Path) -> None:
    step = {
        "mid": 0,
        "message": "I watched The Godfather again.",
        "time": "'2024-10-01 08:00' Tuesday",
        "place": "Boston, MA",
    }
    qa: dict[str, Any] = {
        "qid": 0,
        "question": "Which film?",
        "answer": "The Godfather",
        "target_step_id": [0],
        "choices": dict(zip("ABCD", "wxyz")),
        "ground_truth": "A",
        "time": "'2024-10-03 08:13' Thursday",
    }
    (tmp_path / "ThirdAgent").mkdir()
    (tmp_path / "ThirdAgent" / "simple.json").write_text(
        json.dumps({"roles": [{"tid": 0, "message_list": [step], "QA": qa}]}), encoding="utf-8"
    )
    (first,) = messages(MemBenchBuilder(), tmp_path)
    assert (
        message_text(first) == "user: 0[|]I watched The Godfather again. (place: Boston, MA; "
        "time'2024-10-01 08:00' Tuesday)"
    )


def test_perltqa_events_and_dialogues_carry_their_time():
    found = messages(PerLTQABuilder(), FIXTURES / "perltqa" / "perltmem_en_v2.json", samples=3)
    dialogue = next(m for m in found if m.meta.get("kind") == "dialogues")
    assert message_text(dialogue) == dialogue.text and dialogue.text.startswith(f"[{dialogue.time}]\n")
    event = next(m for m in messages(PerLTQABuilder(), samples=1) if m.meta.get("kind") == "events")
    assert message_text(event) == event.text and f"({event.time}):" in event.text


def test_graphiti_episode_writes_what_the_text_does_not_show():
    shown = Message("D1:1", CAROLINE, time="2023-05-08T13:56:00", speaker="Caroline", shows=["speaker"])
    later = Message("D2:1", "Bye.", time="2023-05-09T10:00:00", speaker="Melanie")
    assert (
        graphiti.episode_body((shown, later)) == f"[2023-05-08T13:56:00] {CAROLINE}\n"
        "[2023-05-09T10:00:00] Melanie: Bye."
    )


def test_a_split_message_gives_each_later_part_its_time_and_speaker():
    long = Message(
        "s1:2",
        "Session Date: 2023/05/20 (Sat) 02:21\n" + " ".join(f"word{i}" for i in range(200)),
        time="2023-05-20T02:21:00",
        speaker="assistant",
        shows=["time", "speaker"],
    )
    parts = [m for c in chunk_messages([long], 50) for m in c.messages]
    assert len(parts) > 1 and message_text(parts[0]) == parts[0].text
    assert all(message_text(p) == f"[2023-05-20T02:21:00] assistant: {p.text}" for p in parts[1:])


def test_shows_survives_a_samples_file():
    sample = Sample("s", [Message("1", "[t] Ana: hi", time="t", speaker="Ana", shows=["speaker", "time"])], [])
    line = dumps_sample(sample)
    assert '"shows": ["time", "speaker"]' in line
    assert sample_from_dict(json.loads(line)) == sample
    bad = {"id": "s", "messages": [{"id": "1", "text": "x", "shows": ["date"]}], "questions": []}
    with pytest.raises(DataError, match=r"line 4, messages\[0\]\.shows\[0\]: 'date' is not one of time, speaker"):
        sample_from_dict(bad, "s.jsonl", 4)
