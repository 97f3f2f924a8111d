"""The runner: run files, concurrency, per-question errors, resume after SIGKILL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from memplug.errors import MemplugError
from memplug.models import Recalled
from memplug.record import QuestionRecord
from memplug.results import RecordWriter, RunDir, read_records
from memplug.runner import Evaluation, RunSpec, safe_name


def run(tmp_path: Path, **kw: Any) -> RunDir:
    spec = RunSpec(agent=kw.pop("agent", "lookup"), dataset=kw.pop("dataset", "counting"), **kw)
    return RunDir(Evaluation(spec).run(output=tmp_path / "runs"))


def test_run_files_have_the_contract_keys(testkit, tmp_path):
    rd = run(tmp_path)
    spec = json.loads(rd.run_json.read_text())
    assert spec["status"] == "finished" and spec["spec"]["agent"] == "lookup"
    assert spec["versions"]["plugins"]["memplug-testkit"] == "0.0.1"
    assert spec["versions"]["dataset"] == {"name": "counting", "version": "1"}
    assert spec["schema"] == 2
    records = rd.records()
    assert len(records) == 18
    line = json.loads(rd.samples.read_bytes().splitlines()[0])
    assert list(line) == [
        "sample_id",
        "question_id",
        "category",
        "question",
        "prediction",
        "reply",
        "gold",
        "choices",
        "correct_choice",
        "targets",
        "anchors",
        "question_time",
        "question_meta",
        "recalled",
        "agent_answered",
        "scores",
        "timings",
        "usage",
        "error",
        "meta",
        "ingest_usage",
        "diagnosis",
    ]
    assert list(line["timings"]) == ["setup_s", "ingest_s", "n_messages", "recall_s", "read_s"]
    summary = json.loads(rd.summary_json.read_text())
    assert list(summary) == [
        "schema",
        "run_id",
        "agent",
        "dataset",
        "n_questions",
        "n_errors",
        "metrics",
        "ci",
        "n",
        "unanswerable",
        "diagnosis",
        "answered",
        "efficiency",
        "llm",
        "status",
        "n_expected",
        "n_answered",
        "n_failed",
        "first_error",
        "stopped",
    ]
    assert summary["schema"] == 2
    assert summary["metrics"]["overall"]["em"] == 1.0
    assert set(summary["metrics"]["by_category"]) == {"even", "odd"}
    assert summary["answered"] == {"overall": 18, "even": 12, "odd": 6}
    assert summary["metrics"]["overall"]["recall@5"] == 1.0
    assert set(summary["efficiency"]) == {"ingest_s_per_message", "recall_s_per_question", "wall_s", "latency_s"}
    assert set(summary["llm"]) == {"calls", "cache_hits", "prompt_tokens", "completion_tokens", "cost_usd"}
    assert (rd.path / "work" / "s0" / "memory.txt").is_file()  # each sample has its own workdir


def test_samples_run_side_by_side(testkit, tmp_path):
    # the agent counts the samples in its ingest or recall at once (no wall-clock bound: bench/ measures time)
    run(tmp_path, concurrency=3, agent_options={"delay": "0.1"}, dataset_options={"samples": "6", "questions": "2"})
    assert testkit.LookupAgent.peak == 3


def test_a_failing_question_is_an_error_not_a_wrong_answer(testkit, tmp_path):
    rd = run(tmp_path, agent_options={"fail_question": "q1"})
    summary = rd.summary()
    failed = [r for r in rd.records() if r.error]
    assert len(failed) == 6 and all(r.question_id == "q1" for r in failed)
    assert all(r.error is not None and "recall exploded" in r.error and r.scores == {} for r in failed)
    assert summary.n_errors == 6 and summary.n_questions == 18
    assert summary.metrics.overall["em"] == 1.0  # errors are not scored as wrong
    assert summary.n is not None and summary.n.overall["em"] == 12


def test_a_failing_ingest_fails_only_its_sample(testkit, tmp_path):
    rd = run(tmp_path, agent_options={"fail_sample": "s2"})
    errors = {r.sample_id for r in rd.records() if r.error}
    assert errors == {"s2"}
    assert rd.summary().n_errors == 3
    # its sample has no ingest time: a 0 would pull the run's ingest figures down
    assert all(r.timings.ingest_s is None for r in rd.records() if r.sample_id == "s2")
    assert all(r.timings.ingest_s is not None for r in rd.records() if r.sample_id != "s2")
    latency = rd.summary().efficiency.latency_s
    assert latency is not None and latency["ingest"] is not None and latency["ingest"]["p50"] > 0


def test_reader_answers_when_the_agent_does_not(testkit, tmp_path):
    rd = run(tmp_path, agent_options={"answer": "false"})
    records = rd.records()
    assert not any(r.agent_answered for r in records)
    assert all(r.prediction and r.prediction != r.recalled[0].text for r in records)


def test_limit_by_first_keeps_the_first_questions(testkit, tmp_path):
    rd = run(tmp_path, limit=4, limit_by="first")
    assert sorted(r.key for r in rd.records()) == [("s0", "q0"), ("s0", "q1"), ("s0", "q2"), ("s1", "q0")]


def test_safe_name_cannot_escape():
    assert "/" not in safe_name("../../etc/passwd") and not safe_name("..").startswith(".")
    assert safe_name("s1") == "s1"


def test_sample_ids_with_dots_stay_inside_the_run(testkit, tmp_path, monkeypatch):
    from memplug.models import Message, Question, Sample

    def build(self, options):
        yield Sample(
            "../../escape",
            [Message("m0", "Item 0-0 is apple.")],
            [Question("q0", "What is item 0-0?", ("apple",), targets=("m0",))],
        )

    monkeypatch.setattr(testkit.CountingDataset, "build", build)
    rd = run(tmp_path)
    assert rd.records()[0].sample_id == "../../escape"
    assert not (tmp_path / "escape").exists()
    assert all(p.resolve().is_relative_to(rd.path.resolve()) for p in (rd.path / "work").iterdir())


def test_resume_refuses_other_options(testkit, tmp_path):
    rd = run(tmp_path)
    other = RunSpec(agent="lookup", dataset="counting", top_k=3)
    with pytest.raises(MemplugError, match="top_k"):
        Evaluation(other).run(resume=rd.path)


@pytest.mark.parametrize("kill_after", [2, 7, 13])
def test_resume_after_sigkill_holds_every_question_once(testkit_env, tmp_path, kill_after):
    out = tmp_path / "runs"
    cmd = [
        sys.executable,
        "-m",
        "memplug.cli",
        "eval",
        "--agent",
        "lookup",
        "--dataset",
        "counting",
        "-o",
        "delay=0.03",
        "-o",
        "samples=8",
        "--concurrency",
        "2",
        "--output",
        str(out),
        "--quiet",
    ]
    proc = subprocess.Popen(cmd, env=testkit_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    samples = None
    while time.time() < deadline:
        found = list(out.glob("*/samples.jsonl"))
        if found and found[0].read_text().count("\n") >= kill_after:
            samples = found[0]
            break
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.stderr is not None  # a pipe
    assert samples is not None, proc.stderr.read().decode()
    with samples.open("a") as fh:  # a write torn by the kill
        fh.write('{"sample_id": "s7", "question_id": "q0", "pred')
    run_dir = samples.parent
    assert json.loads((run_dir / "run.json").read_text())["status"] == "running"
    resumed = subprocess.run(
        [sys.executable, "-m", "memplug.cli", "eval", "--resume", str(run_dir), "--quiet"],
        env=testkit_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    records, end = read_records(samples)
    keys = [r.key for r in records]
    assert len(keys) == len(set(keys)) == 24
    assert end == samples.stat().st_size  # the torn line was cut, not parsed
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n_questions"] == 24 and summary["metrics"]["overall"]["em"] == 1.0


def test_repeated_question_ids_and_empty_datasets_are_refused(testkit, tmp_path, monkeypatch):
    from memplug.models import Message, Question, Sample

    def twice(self, options):
        q = Question("q0", "What is item 0-0?", ("apple",))
        yield Sample("s0", [Message("m0", "Item 0-0 is apple.")], [q, q])

    monkeypatch.setattr(testkit.CountingDataset, "build", twice)
    with pytest.raises(MemplugError, match="two questions with id 'q0'"):
        run(tmp_path)
    monkeypatch.setattr(testkit.CountingDataset, "build", lambda self, options: iter(()))
    with pytest.raises(MemplugError, match="no questions"):
        run(tmp_path)


def test_records_round_trip_through_their_lines(tmp_path):
    record = QuestionRecord(
        "s",
        "q",
        "c",
        "où ?",
        scores={"em": np.float64(0.5), "n": np.int64(3)},
        recalled=[Recalled("t", 0.25, ("1", 2))],
    )
    line = record.to_line()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line)["scores"] == {"em": 0.5, "n": 3}
    assert json.loads(line)["recalled"] == [{"text": "t", "score": 0.25, "message_ids": ["1", "2"]}]
    assert QuestionRecord.from_line(line).to_line() == line
    # lines of earlier versions (json.dumps, which may write NaN) still read
    old = {"sample_id": "old", "question_id": "q", "category": "c", "question": "?", "scores": {"f1": float("nan")}}
    path = tmp_path / "samples.jsonl"
    path.write_bytes(line + json.dumps(old).encode() + b"\n")
    records, end = read_records(path)
    assert records[0].question == "où ?" and records[1].sample_id == "old" and end == path.stat().st_size


def test_recalled_as_dict_is_what_attrs_writes():
    item = Recalled("text", None, ["a", 1])
    assert (
        json.dumps(item.as_dict())
        == json.dumps(attrs.asdict(item))
        == '{"text": "text", "score": null, "message_ids": ["a", "1"]}'
    )
    assert [f.name for f in attrs.fields(Recalled)] == list(item.as_dict())  # a new field needs as_dict too


def test_record_writer_flushes_lines_soon_after_they_are_written(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    writer = RecordWriter(path, flush_delay=0.05)

    def record(n: int) -> QuestionRecord:
        return QuestionRecord("s", str(n), "c", "?")

    def numbers() -> list[int]:
        return [int(r.question_id) for r in read_records(path)[0]]

    writer.write(record(0))  # outside an event loop: flushed at once
    assert path.read_bytes() == record(0).to_line()

    async def burst() -> bytes:
        for n in range(1, 4):
            writer.write(record(n))
        during = path.read_bytes()  # one flush is scheduled for the burst
        await asyncio.sleep(0.2)
        return during

    during = asyncio.run(burst())
    assert during == record(0).to_line()
    assert numbers() == [0, 1, 2, 3]

    async def last() -> None:
        writer.write(record(9))

    asyncio.run(last())  # the loop ends before the scheduled flush
    assert len(read_records(path)[0]) == 4
    asyncio.run(burst())  # a new loop schedules its own
    assert numbers() == [0, 1, 2, 3, 9, 1, 2, 3]
    asyncio.run(last())
    writer.close()  # a flush still pending: close writes the line
    assert numbers() == [0, 1, 2, 3, 9, 1, 2, 3, 9]
    assert len(writer.written) == 9


def test_a_reports_row_counts_its_answered_questions_whatever_scored_them():
    """LoCoMo-Plus's 239 questions showed "overall 237" (the most any one metric scored) and
    BEAM's abstention row, which no offline metric scores, showed no n at all."""
    from memplug.cli.report import _count, _fewer
    from memplug.record import QuestionRecord
    from memplug.results import summarize

    records = [
        QuestionRecord("s1", "q1", "a", "?", scores={"f1": 1.0, "recall@5": 1.0}),
        QuestionRecord("s1", "q2", "a", "?", scores={"f1": 0.0}),
        QuestionRecord("s1", "q3", "b", "?", scores={"recall@5": 0.5}),
        QuestionRecord("s1", "q4", "c", "?", scores={}),
        QuestionRecord("s1", "q5", "c", "?", error="boom"),
    ]
    summary = summarize(records, "agent", "data", "run", 1.0)
    assert summary.answered == {"overall": 4, "a": 2, "b": 1, "c": 1}
    assert [_count(summary, c) for c in ("overall", "a", "b", "c")] == ["4", "2", "1", "1"]
    assert _fewer(summary, "overall", "f1") == " (n=2)" and _fewer(summary, "a", "f1") == ""
    summary.answered = None  # a summary.json from before: the largest per-metric count, as then
    assert [_count(summary, c) for c in ("overall", "a", "c")] == ["2", "2", ""]
