"""BEAM: the loader on small folders in the release's layout (and the real 128K one), the
offline run and a judged run end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memplug.cli import cli
from memplug.datasets.beam.builder import BeamBuilder
from memplug.datasets.beam.release import ABILITIES, conversation_folders, load_release, parse_anchor, source_ids
from memplug.datasets.beam.scoring import BeamOrderLexical, lexically_equivalent
from memplug.errors import DataError, MemplugError
from memplug.models import Question
from memplug.protocols import BuildOptions, ScoreContext


def _msg(mid: int, role: str, content: str, anchor: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "id": mid, "content": content}
    if anchor:
        m.update(time_anchor=anchor, index=f"1,{mid}", question_type="main_question")
    return m


BATCHES = [
    {
        "batch_number": 1,
        "time_anchor": "March-15-2024",
        "turns": [
            [
                _msg(0, "user", "I plan the alpha launch of my budget app ->-> 1,1", "March-15-2024"),
                _msg(1, "assistant", "Great, let us plan the alpha launch."),
                _msg(2, "user", "My first sprint ends on March 29, then the beta test."),
                _msg(3, "assistant", "Noted: the sprint ends March 29."),
            ]
        ],
    },
    {
        "batch_number": 2,
        "time_anchor": "April-05-2024",
        "turns": [
            [
                _msg(4, "user", "The gamma release is done and latency is now 250ms ->-> 2,1", "April-05-2024"),
                _msg(5, "assistant", "Congratulations on the gamma release."),
            ]
        ],
    },
]
QUESTIONS = {
    "abstention": [
        {
            "question": "What did my manager say?",
            "ideal_response": "There is no information.",
            "rubric": ["Based on the provided chat, there is no information about the manager"],
        }
    ],
    "event_ordering": [
        {
            "question": "In what order did I bring up the releases?",
            "answer": "alpha, beta, gamma",
            "rubric": ["alpha launch", "beta test", "gamma release"],
            "source_chat_ids": [0, 2, 4],
        }
    ],
    "information_extraction": [
        {
            "question": "When does my first sprint end?",
            "answer": "March 29.",
            "rubric": ["LLM response should state: March 29"],
            "source_chat_ids": [2],
        }
    ],
    "knowledge_update": [
        {
            "question": "What is the latency now?",
            "answer": "250ms",
            "rubric": ["LLM response should state: 250ms"],
            "source_chat_ids": {"original_info": [2], "updated_info": [4, 99]},
        }
    ],
}


def write_conversation(folder: Path, batches: Any = None, questions: Any = None, chat_name: str = "chat.json") -> Path:
    (folder / "probing_questions").mkdir(parents=True)
    (folder / chat_name).write_text(json.dumps(BATCHES if batches is None else batches))
    (folder / "probing_questions" / "probing_questions.json").write_text(
        json.dumps(QUESTIONS if questions is None else questions)
    )
    (folder / "topic.json").write_text(json.dumps({"id": 1, "category": "Coding", "title": "Budget tracker"}))
    return folder


@pytest.fixture
def chats(tmp_path: Path) -> Path:
    write_conversation(tmp_path / "chats" / "100K" / "1")
    write_conversation(tmp_path / "chats" / "100K" / "10")
    write_conversation(tmp_path / "chats" / "100K" / "2")
    return tmp_path / "chats"


def test_a_conversation_is_a_sample_with_its_messages_and_ten_ability_categories(chats):
    (s,) = load_release(chats / "100K" / "1")
    assert s.id == "100K/1" and s.meta["title"] == "Budget tracker" and s.meta["size"] == "100K"
    assert [m.id for m in s.messages] == ["0", "1", "2", "3", "4", "5"]
    # a message without a time anchor is at the time of the last one that has one
    assert [m.time for m in s.messages] == ["2024-03-15"] * 4 + ["2024-04-05"] * 2
    assert s.messages[0].speaker == "user" and s.messages[0].meta == {"batch": 1, "turn": 1, "index": "1,0"}
    assert [q.category for q in s.questions] == [
        "abstention",
        "event_ordering",
        "information_extraction",
        "knowledge_update",
    ]
    ab, eo, ie, ku = s.questions
    assert eo.id == "100K/1:event_ordering:0" and eo.targets == ("0", "2", "4")
    assert eo.meta["rubric"] == ["alpha launch", "beta test", "gamma release"] and eo.meta["judge"] == "beam"
    assert ab.targets == () and ab.answers == ("There is no information.",)
    assert ie.answers == ("March 29.",)
    assert ku.targets == ("2", "4")  # the object of lists flattened; 99 names no message and is dropped


def test_folders_in_the_official_order_at_every_level(chats, tmp_path):
    assert [p.name for p in conversation_folders(chats / "100K")] == ["1", "2", "10"]
    assert [s.id for s in load_release(chats)] == ["100K/1", "100K/2", "100K/10"]
    lone = write_conversation(tmp_path / "elsewhere" / "7")
    assert [s.id for s in load_release(lone)] == ["7"]


def test_the_truncated_chat_is_read_where_it_exists(tmp_path):
    folder = write_conversation(tmp_path / "chats" / "1M" / "3")
    (folder / "chat_trunecated.json").write_text(json.dumps(BATCHES[:1]))
    (s,) = load_release(folder)
    assert s.meta["chat_file"] == "chat_trunecated.json" and len(s.messages) == 4


def test_the_10m_layout_of_plans(tmp_path):
    plan2 = [
        {
            "batch_number": 1,
            "time_anchor": "May-01-2024",
            "turns": [[_msg(6, "user", "Plan two starts ->-> 1,1", "May-01-2024"), _msg(7, "assistant", "ok")]],
        }
    ]
    folder = write_conversation(tmp_path / "chats" / "10M" / "1", batches=[{"plan-1": BATCHES}, {"plan-2": plan2}])
    (s,) = load_release(folder)
    assert len(s.messages) == 8 and s.messages[-1].meta == {"batch": 1, "turn": 1, "plan": "plan-2"}
    assert s.messages[-1].time == "2024-05-01" and s.id == "10M/1"


@pytest.mark.parametrize(
    ("batches", "questions", "message"),
    [
        ([{"turns": [[{"role": "user", "content": "x"}]]}], None, "needs 'role', 'content'"),
        ([{"turns": [[_msg(0, "user", "a"), _msg(0, "assistant", "b")]]}], None, "message id 0 repeats"),
        ({"turns": []}, None, "non-empty JSON list"),
        ([{"plan-1": None}], None, "10M plan"),
        (None, {"event_ordering": [{"question": "q"}]}, "missing 'rubric'"),
        (None, {"memory": []}, "'memory' is not one of"),
        (None, [1], "expected an object keyed by ability"),
    ],
)
def test_bad_release_files_fail_in_one_line(tmp_path, batches, questions, message):
    folder = write_conversation(tmp_path / "1", batches=batches, questions=questions)
    with pytest.raises(DataError, match=message) as err:
        list(load_release(folder))
    assert "\n" not in str(err.value)


def test_bad_data_paths_and_options(tmp_path, chats):
    builder = BeamBuilder()
    with pytest.raises(MemplugError, match="pass --data"):
        builder.build(BuildOptions())
    with pytest.raises(MemplugError, match="not a file"):
        builder.build(BuildOptions(data=chats / "100K" / "1" / "chat.json"))
    with pytest.raises(MemplugError, match="no BEAM conversation"):
        builder.build(BuildOptions(data=tmp_path))
    with pytest.raises(MemplugError, match="abilities='memory'"):
        builder.build(BuildOptions(values={"abilities": "memory"}, data=chats))
    with pytest.raises(MemplugError, match="unknown judge"):
        builder.build(BuildOptions(values={"judge": "nope"}, data=chats))
    (s, *_) = builder.build(BuildOptions(values={"abilities": "knowledge_update,event_ordering"}, data=chats))
    assert [q.category for q in s.questions] == ["event_ordering", "knowledge_update"]


def test_helpers():
    assert parse_anchor("March-15-2024") == "2024-03-15" and parse_anchor("Sept 3") is None
    assert source_ids({"first_event": [2], "second_event": [0, 2]}) == ["2", "0"]
    assert source_ids([4, 60, 60]) == ["4", "60"] and source_ids(None) == []


def test_lexical_event_ordering_variation():
    assert lexically_equivalent("Transaction error handling", "2) Implementing transactions with error handling")
    assert not lexically_equivalent("Security and deployment", "Core functionality")
    q = Question("q", "order?", (), category="event_ordering", meta={"rubric": ["alpha launch", "beta test"]})
    metric = BeamOrderLexical()
    import asyncio

    assert asyncio.run(metric.score(ScoreContext(q, "alpha launch\nbeta test", ()))) == pytest.approx(1.0)
    assert asyncio.run(metric.score(ScoreContext(q, "beta test\nalpha launch", ()))) == 0.0
    other = Question("r", "when?", ("x",), category="temporal_reasoning", meta={"rubric": ["x"]})
    assert asyncio.run(metric.score(ScoreContext(other, "x", ()))) is None


def test_the_real_128k_conversation(shared_data):
    (s,) = load_release(shared_data / "beam" / "chats" / "100K" / "1")
    assert s.id == "100K/1" and len(s.messages) == 188 and s.meta["title"].startswith("Building a Personal Budget")
    assert len(s.questions) == 20 and {q.category for q in s.questions} == set(ABILITIES)
    assert {m.time for m in s.messages} == {"2024-03-15", "2024-04-05", "2024-04-25"}
    by_id = {q.id: q for q in s.questions}
    assert by_id["100K/1:event_ordering:0"].targets == ("4", "60", "116")
    assert by_id["100K/1:knowledge_update:0"].targets == ("86", "114")


def _eval(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["eval", "--agent", "bm25", "--dataset", "beam", *args], env=env)


def test_offline_run_says_what_it_leaves_unscored(shared_data, tmp_path):
    out = _eval("--data", str(shared_data / "beam" / "chats" / "100K" / "1"), "--output", str(tmp_path))
    assert out.exit_code == 0, out.output
    assert "scored by the beam judge only" in out.output
    (run,) = tmp_path.iterdir()
    summary = json.loads((run / "summary.json").read_text())
    by_category = summary["metrics"]["by_category"]
    assert set(by_category) <= set(ABILITIES) and "judge" not in summary["metrics"]["overall"]
    assert set(by_category["event_ordering"]) == {"beam_order_lexical", "recall@5"}
    assert set(by_category["information_extraction"]) == {"recall@5"}  # no rubric score offline
    assert summary["n"]["overall"]["beam_order_lexical"] == 2
    run_json = json.loads((run / "run.json").read_text())
    assert run_json["resolved"]["protocol"]["variations"] == ["message-not-pair"]
    assert "scored by the beam judge only" in run_json["resolved"]["data_warnings"]["first"][0]


def _judged_run(chats: Path, tmp_path: Path, openai_stub: Any) -> tuple[Any, Path]:
    """`memplug eval` of the first 100K chat judged by the stub: its output and run directory."""
    out = _eval(
        "--data",
        str(chats / "100K" / "1"),
        "--judge",
        "openai/stub",
        "--api-base",
        openai_stub.base_url,
        "--output",
        str(tmp_path / "runs"),
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert out.exit_code == 0, out.output
    (run,) = (tmp_path / "runs").iterdir()
    return out, run


def test_judged_run_end_to_end(chats, tmp_path, openai_stub):
    def reply(body: dict[str, Any]) -> str:
        messages = body["messages"]
        if messages[0]["role"] == "system":  # llm_equivalence
            first, second = messages[1]["content"].split("Second snippet:")
            ref = first.removeprefix("First snippet:").strip().lower()
            return "YES" if ref and ref in second.lower() else "NO"
        return '{"score": 1.0, "reason": "ok"}'

    openai_stub.reply = reply
    out, run = _judged_run(chats, tmp_path, openai_stub)
    judge = json.loads((run / "run.json").read_text())["resolved"]["judge"]
    assert judge["name"] == "beam" and judge["judges"]["beam"]["sha256"] == judge["prompt_sha256"]
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    scores = {r["question_id"]: r["scores"] for r in records}
    rubric_calls = [b for b in openai_stub.chat_requests if "RUBRIC CRITERION" in b["messages"][-1]["content"]]
    assert len(rubric_calls) == 3  # one per rubric item of the three rubric questions
    assert all(b["temperature"] == 0 for b in rubric_calls)
    # event ordering: llm_equivalence's system and user messages, reply line by reference event
    assert any(
        b["messages"][0]["role"] == "system" and "binary classifier" in b["messages"][0]["content"]
        for b in openai_stub.chat_requests
    )
    assert all(s["judge"] == 1.0 for k, s in scores.items() if "event_ordering" not in k)
    eo = scores["100K/1:event_ordering:0"]
    assert eo["judge"] is not None and 0.0 <= eo["judge"] <= 1.0 and eo["beam_tau"] is not None


def test_a_rubric_reply_without_a_score_is_counted_unscored(chats, tmp_path, openai_stub):
    """BEAM's (and MemoryAgentBench's summary) judge scores through a scorer of its own,
    whose None for an unreadable reply left the question out of the mean unannounced; the
    judge's own prompts were counted in summary.json's `unscored` and printed."""
    openai_stub.reply = lambda body: "YES" if body["messages"][0]["role"] == "system" else "I cannot score this."
    out, run = _judged_run(chats, tmp_path, openai_stub)
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    rubric = [r for r in records if "event_ordering" not in r["question_id"] and r["question_meta"].get("rubric")]
    assert rubric and all(r["scores"].get("judge") is None and r["unscored"] for r in rubric)
    unscored = json.loads((run / "summary.json").read_text())["unscored"]
    assert unscored["judge"]["n"] == len(rubric)
    said = " ".join(out.output.split())
    assert f"judge: {len(rubric)} of " in said and "not scored (unreadable verdict)" in said, said
