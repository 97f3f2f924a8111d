"""The typed run files (memplug.record): records and summaries round-trip their JSON exactly,
runs written before the schema version still read, a newer version is refused with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memplug.errors import MemplugError
from memplug.record import SCHEMA, QuestionRecord, RunInfo, RunSummary
from memplug.results import RunDir, write_records_atomic
from memplug.runner import Evaluation, RunSpec
from memplug.testing import run_cli

FIXTURE_RUNS = Path(__file__).resolve().parent / "fixtures" / "runs"
OLD_RUNS = sorted(FIXTURE_RUNS.iterdir())


def _run(tmp_path: Path, **kw: Any) -> RunDir:
    spec = RunSpec(agent="lookup", dataset="counting", **kw)
    return RunDir(Evaluation(spec).run(output=tmp_path / "runs"))


@pytest.mark.parametrize(
    "options",
    [{}, {"fail_question": "q1"}, {"fail_sample": "s2"}, {"answer": "false"}],
    ids=["answered", "question-errors", "ingest-error", "reader"],
)
def test_a_runs_records_and_summary_round_trip_byte_for_byte(testkit, tmp_path, options):
    rd = _run(tmp_path, agent_options=options)
    lines = rd.samples.read_bytes().splitlines(keepends=True)
    records = rd.records()
    assert len(lines) == len(records) == 18
    assert [r.to_line() for r in records] == lines
    assert [QuestionRecord.from_line(line) for line in lines] == records
    copy = tmp_path / "copy.jsonl"
    write_records_atomic(copy, records)
    assert copy.read_bytes() == rd.samples.read_bytes()
    text = rd.summary_json.read_text(encoding="utf-8")
    summary = rd.summary()
    assert json.dumps(summary.to_json(), ensure_ascii=False, indent=2) + "\n" == text
    assert json.loads(text)["schema"] == json.loads(rd.run_json.read_text())["schema"] == SCHEMA
    info = rd.info()
    assert json.dumps(info.to_json(), ensure_ascii=False, indent=2) + "\n" == rd.run_json.read_text(encoding="utf-8")
    assert info.outcome is not None and info.outcome.n_expected == 18 and info.status == info.outcome.status


@pytest.mark.parametrize("old", OLD_RUNS, ids=lambda p: p.name)
def test_an_old_run_json_reads_typed_and_writes_back_the_same(old):
    info = RunDir(old).info()
    text = (old / "run.json").read_text(encoding="utf-8")
    assert json.dumps(info.to_json(), ensure_ascii=False, indent=2) + "\n" == text
    raw = json.loads(text)
    assert (info.run_id, info.status, info.dataset, info.agent) == (
        raw["run_id"],
        raw["status"],
        raw["spec"]["dataset"],
        raw["spec"]["agent"],
    )
    assert info.top_k == raw["spec"]["top_k"] and info.metrics == raw["resolved"]["metrics"]
    assert info.outcome is None and info.protocol is None  # runs from before outcomes and protocols


def test_a_run_json_without_a_spec_is_not_a_memplug_run(tmp_path):
    with pytest.raises(MemplugError, match="no 'spec' object"):
        RunInfo.from_json({"run_id": "x"}, "run.json")
    assert RunInfo.from_json({"spec": {}}, "run.json").top_k == 5  # a run that recorded no K: the default


def test_the_typed_fields_hold_what_the_lines_say(testkit, tmp_path):
    rd = _run(tmp_path, agent_options={"fail_question": "q1"})
    for record, line in zip(rd.records(), rd.samples.read_bytes().splitlines()):
        raw = json.loads(line)
        assert (record.sample_id, record.question_id, record.error) == (
            raw["sample_id"],
            raw["question_id"],
            raw["error"],
        )
        assert record.scores == raw["scores"] and record.timings.n_messages == raw["timings"]["n_messages"]
        assert [i.text for i in record.recalled] == [i["text"] for i in raw["recalled"]]
        if record.error:  # failed in recall: no recall time, no scores
            assert record.timings.recall_s is None and "recall_s" not in raw["timings"] and not record.scores
    summary = rd.summary()
    assert summary.outcome is not None and summary.outcome.status == "partial" and summary.outcome.n_failed == 6
    assert summary.n_errors == 6 and summary.metrics.overall["em"] == 1.0


@pytest.mark.parametrize("old", OLD_RUNS, ids=lambda p: p.name)
def test_a_run_written_before_the_schema_version_reads_as_version_1(old):
    run = RunDir(old)
    assert run.info().schema is None and "schema" not in json.loads(run.summary_json.read_text())
    records = run.records()
    raw = [json.loads(line) for line in run.samples.read_bytes().splitlines()]
    assert [r.key for r in records] == [(r["sample_id"], r["question_id"]) for r in raw]
    assert [r.prediction for r in records] == [r.get("prediction") for r in raw]
    assert [r.scores for r in records] == [r["scores"] for r in raw]
    assert all(r.reply is None for r in records)  # a key these runs did not write yet
    summary = run.summary()
    assert summary.to_json()["metrics"] == json.loads(run.summary_json.read_text())["metrics"]


def _newer(path: Path) -> None:
    content = json.loads(path.read_text())
    path.write_text(json.dumps({"schema": SCHEMA + 1, **content}))


@pytest.mark.parametrize("file", ["run.json", "summary.json"])
def test_a_run_from_a_newer_schema_is_refused_with_one_line(tmp_path, file):
    run = tmp_path / OLD_RUNS[0].name
    shutil.copytree(OLD_RUNS[0], run)
    _newer(run / file)
    with pytest.raises(MemplugError, match=rf"schema {SCHEMA + 1}; this one reads up to {SCHEMA}") as exc:
        RunDir(run).records() if file == "run.json" else RunDir(run).summary()
    assert str(exc.value).startswith(str(run / file)) and "\n" not in str(exc.value)
    result = run_cli(["report", str(run)], cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and f"schema {SCHEMA + 1}" in result.stderr


def test_a_bad_schema_value_and_a_line_that_is_not_a_record_are_data_errors(tmp_path):
    run = tmp_path / OLD_RUNS[0].name
    shutil.copytree(OLD_RUNS[0], run)
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps({**summary, "schema": "2"}))
    with pytest.raises(MemplugError, match="schema '2' is not a memplug schema version"):
        RunDir(run).summary()
    with pytest.raises(MemplugError, match="no 'metrics' object"):
        RunSummary.from_json({"run_id": "x"}, "summary.json")
    (run / "samples.jsonl").write_bytes(b'{"sample_id": "s"}\n')
    with pytest.raises(MemplugError, match=r"line 1: corrupt record: not a record \(KeyError"):
        RunDir(run).records()
