"""`conversations`: the documented JSON-lines layout, its line-numbered check, and a run on the docs' example."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memplug.cli import cli
from memplug.datasets.conversations.builder import ConversationsBuilder
from memplug.datasets.conversations.layout import read_file
from memplug.errors import DataError
from memplug.protocols import BuildOptions

DOC = Path(__file__).resolve().parents[1] / "docs" / "datasets" / "conversations.md"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    found = re.search(r"```jsonl\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert found is not None, f"no jsonl block in {DOC}"
    block = found.group(1)
    path = tmp_path / "example.jsonl"
    path.write_text(block, encoding="utf-8")
    return path


def run_cli(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_the_docs_example_loads(example):
    trip, garden = ConversationsBuilder().build(BuildOptions(data=example))
    assert [m.id for m in trip.messages] == ["S1:1", "S1:2", "S2:1", "S2:2"]
    first = trip.messages[0]
    assert first.text == "[2024-03-02T10:00] Ana: We land in Lisbon on Friday the 8th." and first.speaker == "Ana"
    assert first.time == "2024-03-02T10:00:00" and first.meta["session"] == "S1"
    q1, q2, q3 = trip.questions
    assert q1.answers == ("Lisbon",) and q1.targets == ("S1:1",) and q1.category == "single-hop"
    assert q1.meta["time_text"] == "2024-03-12" and q1.meta["judge"] == "memplug"
    assert q2.targets == ("S1:2", "S2:1") and q3.meta["abstention"] and q3.answers == ()
    (g,) = garden.questions
    assert g.answers == ("8",) and g.id == "q1" and [m.id for m in garden.messages] == ["S1:1", "S2:1"]


def test_judge_option_reaches_the_questions(example):
    (trip, _) = ConversationsBuilder().build(BuildOptions(values={"judge": "locomo-j"}, data=example))
    assert {q.meta["judge"] for q in trip.questions} == {"locomo-j"}


BAD = [
    '{"id": "a", "sessions": [{"id": "S1", "turns": [{"speaker": "A", "text": "hi"}]}], "qa": [{"question": "x?", "answers": ["y"], "evidence": ["S4:2"]}]}',
    '{"id": "b", "sessions": [{"turns": [{"speaker": "A"}]}], "qa": [{"question": "x?", "answers": "y"}]}',
    "",
    '{"id": "c", "sessions": [',
    '{"id": "a", "sessions": [{"turns": [{"speaker": "A", "text": "hi"}]}], "qa": [{"question": "x?", "answers": [], "evidance": []}]}',
]


def test_every_problem_with_its_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD) + "\n")
    samples, reader = read_file(path)
    assert samples == []
    assert reader.problems == [
        "line 1: qa[0].evidence: 'S4:2' names no turn of this sample",
        "line 2: sessions[0].turns[0]: missing 'text' (non-empty strings)",
        "line 4: not JSON (Expecting value at column 26)",
        "line 5: id: 'a' is also the id of line 1",
        "line 5: qa[0]: unknown key 'evidance' (known: abstention, answers, category, choices, correct_choice, date, "
        "evidence, id, meta, question)",
        'line 5: qa[0].answers: empty: give answers, choices, or "abstention": true',
    ]
    with pytest.raises(DataError, match="line 1: qa.0..evidence.*and 5 more"):
        list(ConversationsBuilder().build(BuildOptions(data=path)))


def test_a_line_python_cannot_read_is_a_problem_not_a_crash(tmp_path):
    # json.loads raises a plain ValueError (no .msg, no .colno) for an integer of 5000 digits
    path = tmp_path / "big.jsonl"
    path.write_text('{"id": ' + "1" * 5000 + "}\n")
    samples, reader = read_file(path)
    (problem,) = reader.problems
    assert samples == [] and problem == (
        "line 1: an integer of more than 4,300 digits (no dataset holds one: a damaged file?)"
    )


def test_generate_check_lists_the_problems_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD) + "\n")
    out = tmp_path / "out.jsonl"
    res = run_cli("generate", "--dataset", "conversations", "--data", str(path), "--out", str(out), "--check")
    assert res.exit_code == 1 and not out.exists()
    report = json.loads(res.stdout)
    assert report["ok"] is False and report["n_problems"] == 6 and report["problems"][0].startswith("line 1:")


def test_generate_check_passes_the_example(example, tmp_path):
    res = run_cli(
        "generate", "--dataset", "conversations", "--data", str(example), "--out", str(tmp_path / "o.jsonl"), "--check"
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["ok"] and report["stats"]["questions"] == 4 and report["stats"]["abstention"] == 1


def test_a_turn_id_outside_its_session_warns(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text(
        '{"sessions": [{"id": "S1", "turns": [{"id": "t1", "speaker": "A", "text": "hi"}]}], '
        '"qa": [{"question": "x?", "answers": "hi", "evidence": ["t1"]}]}\n'
    )
    samples, reader = read_file(path)
    assert len(samples) == 1 and not reader.problems and "does not start with its session id" in reader.warnings[0]


def test_eval_end_to_end(example, tmp_path):
    res = run_cli(
        "eval",
        "--agent",
        "bm25",
        "--dataset",
        "conversations",
        "--data",
        str(example),
        "--output",
        str(tmp_path / "runs"),
    )
    assert res.exit_code == 0, res.output
    (run,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run / "summary.json").read_text())
    overall = summary["metrics"]["overall"]
    assert summary["n"]["overall"]["recall@5"] == 3 and overall["recall@5"] == 1.0
    assert summary["n"]["overall"]["abstention"] == 1
    assert set(summary["metrics"]["by_category"]) == {"abstention", "multi-hop", "single-hop", "temporal"}
