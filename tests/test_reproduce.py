"""`memplug reproduce`: a finished run, run again from its run.json, with its data checked."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from memplug.cli import cli
from memplug.errors import MemplugError
from memplug.reproduce import reproduce
from memplug.results import RunDir, write_json_atomic
from memplug.runner import Evaluation, RunSpec


def test_a_run_reproduces_to_the_same_numbers(testkit, tmp_path):
    path = Evaluation(RunSpec(agent="lookup", dataset="counting", agent_options={"wrong": "q1"})).run(output=tmp_path)
    result = reproduce(path, tmp_path / "again")
    assert result.matches and result.reproduced != path
    assert {r.metric for r in result.rows} >= {"em", "subem"} and {r.category for r in result.rows} >= {
        "overall",
        "odd",
    }
    assert any(r.original not in (None, 1.0) for r in result.rows)  # not a trivial all-correct run


def test_a_run_by_another_version_of_the_reader_says_so(testkit, tmp_path):
    """The extractive reader's answers changed with its version 2 (a message's framing is no
    answer): run.json records the reader's version, and a reproduction names the change."""
    path = Evaluation(RunSpec(agent="lookup", dataset="counting", agent_options={"answer": "false"})).run(
        output=tmp_path
    )
    run_json = json.loads((path / "run.json").read_text())
    assert run_json["versions"]["reader"] == {"name": "extractive", "version": "2"}
    del run_json["versions"]["reader"]  # as a run from before the versions held it
    write_json_atomic(path / "run.json", run_json)
    result = reproduce(path, tmp_path / "again")
    assert "reader extractive version None -> 2" in result.notes


def test_a_number_that_differs_exits_1(testkit, tmp_path):
    path = Evaluation(RunSpec(agent="lookup", dataset="counting")).run(output=tmp_path)
    summary = RunDir(path).summary()
    summary.metrics.overall["em"] = 0.5  # as if the published number were another
    write_json_atomic(path / "summary.json", summary.to_json())
    result = CliRunner().invoke(cli, ["reproduce", str(path), "--output", str(tmp_path / "again")])
    assert result.exit_code == 1, result.output
    assert "1 of" in result.output and "metric means differ" in result.output


def test_data_that_is_not_the_runs_is_refused_before_running(tmp_path, shared_data):
    data = tmp_path / "memdaily"
    shutil.copytree(shared_data / "memdaily", data)
    path = Evaluation(RunSpec(agent="bm25", dataset="memdaily", data=str(data), limit=20)).run(output=tmp_path / "runs")
    assert RunDir(path).info().resolved["data_sha256"]
    assert reproduce(path, tmp_path / "runs").matches
    first = sorted(data.iterdir())[0]
    rows = json.loads(first.read_text(encoding="utf-8"))
    first.write_text(json.dumps(rows, indent=1), encoding="utf-8")  # same content, other bytes: another release
    runs_before = len(list((tmp_path / "runs").iterdir()))
    with pytest.raises(MemplugError, match=f"{first.name} differs from the sha256"):
        reproduce(path, tmp_path / "runs")
    assert len(list((tmp_path / "runs").iterdir())) == runs_before  # nothing ran


def test_a_run_on_relative_data_reproduces_from_another_directory(tmp_path, shared_data, monkeypatch):
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    shutil.copytree(shared_data / "memdaily", here / "memdaily")
    elsewhere.mkdir()
    monkeypatch.chdir(here)
    spec = RunSpec(agent="bm25", dataset="memdaily", data="memdaily", limit=20)
    path = Evaluation(spec).run(output=tmp_path / "runs")
    monkeypatch.chdir(elsewhere)
    assert reproduce(path, tmp_path / "runs").matches  # the data where the run read it
    moved = tmp_path / "moved"
    (here / "memdaily").rename(moved)
    with pytest.raises(MemplugError, match=r"^--data /\S+/here/memdaily: not found \(the data of"):
        reproduce(path, tmp_path / "runs")
    # a run.json written before the absolute path was recorded: --data from here, as then
    run_json = json.loads((path / "run.json").read_text())
    del run_json["resolved"]["data_path"]
    (path / "run.json").write_text(json.dumps(run_json))
    with pytest.raises(MemplugError, match=r"^--data memdaily: not found"):
        reproduce(path, tmp_path / "runs")
    (moved / sorted(p.name for p in moved.iterdir())[0]).unlink()
    with pytest.raises(MemplugError, match=r"is not the data of .*: \S+\.json not found \(pass --data"):
        reproduce(path, tmp_path / "runs", data=moved)


def test_an_unfinished_run_is_not_reproduced(testkit, tmp_path):
    path = Evaluation(RunSpec(agent="lookup", dataset="counting", agent_options={"fail_question": "q1"})).run(
        output=tmp_path
    )
    with pytest.raises(MemplugError, match="only a finished run can be reproduced.*--resume"):
        reproduce(path, tmp_path)


# --- tables to publish (`memplug report --format`) -------------------------------------


def test_tables_to_publish_mark_the_best_and_name_the_setting(testkit, tmp_path):
    from memplug.publish import tables

    good = Evaluation(RunSpec(agent="lookup", dataset="counting")).run(output=tmp_path)
    bad = Evaluation(RunSpec(agent="lookup", dataset="counting", agent_options={"wrong": "q1"})).run(output=tmp_path)
    markdown = tables([good, bad], "markdown")
    assert "| em | overall | even | odd |" in markdown
    assert f"lookup [{good.name}]" in markdown  # the same agent twice: told apart by run id
    first_row = next(line for line in markdown.splitlines() if good.name in line)
    assert first_row.count("**1.000") == 3  # best in every column
    assert "memplug: 0.1.0" in markdown and "dataset: counting v1, data generated" in markdown
    latex = tables([good, bad], "latex")
    assert r"\begin{tabular}{lrrr}" in latex and r"\textbf{1.000" in latex and "lookup [" in latex
    text = tables([good, bad], "csv")
    rows = [line.split(",") for line in text.splitlines() if not line.startswith("#")]
    assert '"#' not in text  # the footer's lines are comments a CSV reader skips, never quoted fields
    assert rows[0][:4] == ["metric", "run", "category", "mean"]
    odd = [r for r in rows[1:] if r[0] == "em" and r[2] == "odd"]
    assert [r[3] for r in odd] == ["1.0000", "0.0000"] and [r[7] for r in odd] == ["true", "false"]
    result = CliRunner().invoke(cli, ["report", str(good), str(bad), "--format", "markdown"])
    assert result.exit_code == 0 and result.output == markdown
    # runs on another dataset: factcon's 0.244 was bolded as best over locomo's 0.083 in one column
    other = Evaluation(RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "3"})).run(output=tmp_path)
    mixed = CliRunner().invoke(cli, ["report", str(good), str(other), "--format", "markdown"])
    assert mixed.exit_code == 2 and "cannot share a table: they are on counting, memsim" in mixed.output
