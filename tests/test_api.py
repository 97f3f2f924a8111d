"""memplug from Python (issue 33): evaluate() runs what `memplug eval` runs and returns the
run; read_run/read_runs read run directories as the report does; to_pandas() gives one row
per run or per question; docs/python-api.md's example runs as written."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import memplug
from memplug.errors import MemplugError
from memplug.results import RunDir

ROOT = Path(__file__).resolve().parents[1]


def test_evaluate_runs_and_returns_the_run(tmp_path):
    run = memplug.evaluate("bm25", "memsim", options={"n": 4}, output=tmp_path, progress=False)
    assert run.status == "finished"
    assert run.path.parent == tmp_path and (run.path / "summary.json").is_file()
    assert run.summary == RunDir(run.path).summary()  # the same record the report reads
    assert 0 <= run.overall["accuracy"] <= 1
    assert len(run.records) == run.summary.n_questions
    assert run.spec["agent"] == "bm25" and run.spec["dataset_options"] == {"n": "4"}


def test_evaluate_and_the_command_line_resolve_the_same_spec(tmp_path):
    from click.testing import CliRunner

    from memplug.cli import cli

    run = memplug.evaluate("bm25", "memsim", options={"n": 3}, seed=5, top_k=3, output=tmp_path / "api", progress=False)
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "memsim",
            "-o",
            "n=3",
            "--seed",
            "5",
            "--top-k",
            "3",
            "--output",
            str(tmp_path / "cli"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    cli_run = memplug.read_run(result.output.strip().splitlines()[-1])
    assert cli_run.spec == run.spec
    assert [r.prediction for r in cli_run.records] == [r.prediction for r in run.records]


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"agent": "nope", "dataset": "memsim"}, "nope"),
        ({"agent": "bm25", "dataset": "memsim", "topk": 3}, "unknown evaluation setting(s): topk"),
        ({"agent": "bm25", "dataset": "memsim", "options": {"bogus": 1}}, "bogus"),
        ({"agent": "bm25"}, "--agent and --dataset are required"),
        # the bound eval's --limit and a sweep's cell check hold: a ValueError from random.sample before
        (
            {"agent": "bm25", "dataset": "memsim", "limit": -3},
            "--limit -3 is out of range: use a number from 1 or more",
        ),
        # of another type than the command line's click types allow: these ran and were
        # recorded as given, or failed deep inside with a TypeError or AttributeError
        ({"agent": "bm25", "dataset": "memsim", "seed": "x"}, "seed='x': expected a whole number"),
        ({"agent": "bm25", "dataset": "memsim", "top_k": True}, "top_k=True: expected a whole number"),
        ({"agent": "bm25", "dataset": "memsim", "cache": "no"}, "cache='no': expected true or false"),
        ({"agent": "bm25", "dataset": "memsim", "concurrency": 2.5}, "concurrency=2.5: expected a whole number"),
        (
            {"agent": "bm25", "dataset": "memsim", "fail_under": "accuracy=0.9"},
            "fail_under='accuracy=0.9': expected a list of strings",
        ),
        ({"agent": "bm25", "dataset": "memsim", "options": "n=3"}, "give the -o pairs as a mapping"),
        ({"agent": "bm25", "dataset": "memsim", "sample_timeout": -1}, "--sample-timeout -1 is out of range"),
    ],
)
def test_bad_configuration_raises_before_any_work(tmp_path, kwargs, expected):
    with pytest.raises(MemplugError, match=re.escape(expected)):
        memplug.evaluate(output=tmp_path / "runs", progress=False, **kwargs)
    assert not (tmp_path / "runs").exists()


def test_failed_questions_are_a_status_not_an_exception(openai_stub, testkit, tmp_path):
    openai_stub.reply = lambda body: "" if "item 2-1" in body["messages"][-1]["content"] else "apple"
    run = memplug.evaluate(
        "lookup",
        "counting",
        options={"answer": False},
        reader="llm",
        llm="openai/stub",
        api_base=openai_stub.base_url,
        llm_retries=0,
        output=tmp_path,
        progress=False,
    )
    assert run.status == "partial" and run.summary.n_errors == 1
    again = memplug.evaluate(resume=run.path, progress=False)  # retries the failed question
    assert again.path == run.path and again.status == "partial"  # the stub still answers "" to it
    openai_stub.reply = lambda body: "apple"
    assert memplug.evaluate(resume=run.path, progress=False).status == "finished"


def test_to_pandas_one_row_per_question_and_per_run(tmp_path):
    pytest.importorskip("pandas")
    for agent in ("bm25", "recent"):
        memplug.evaluate(agent, "memsim", options={"n": 4}, output=tmp_path, progress=False)
    runs = memplug.read_runs(tmp_path)
    assert len(runs) == 2
    per_run = runs.to_pandas()
    assert sorted(per_run.agent) == ["bm25", "recent"] and {"accuracy", "status", "dataset.n"} <= set(per_run.columns)
    questions = runs.questions()
    assert len(questions) == sum(r.summary.n_questions for r in runs)
    means = questions.groupby(["agent", "category"]).accuracy.mean()
    bm25 = runs[[r.spec["agent"] for r in runs].index("bm25")]
    checked = 0
    for category, value in bm25.summary.metrics.by_category.items():
        if "accuracy" in value:  # a category without choices has no accuracy: NaN in every row
            assert means["bm25", category] == pytest.approx(value["accuracy"])
            checked += 1
    assert checked


def test_to_pandas_without_pandas_names_the_extra(tmp_path, monkeypatch):
    run = memplug.evaluate("bm25", "memsim", options={"n": 2}, output=tmp_path, progress=False)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MemplugError, match=re.escape("pip install 'memplug[pandas]'")):
        run.to_pandas()


def test_read_run_refuses_what_is_not_a_finished_run(tmp_path):
    with pytest.raises(MemplugError, match="no such run directory"):
        memplug.read_run(tmp_path / "missing")
    (tmp_path / "other").mkdir()
    with pytest.raises(MemplugError, match="not a memplug run"):
        memplug.read_run(tmp_path / "other")
    with pytest.raises(MemplugError, match="no run directories"):
        memplug.read_runs(tmp_path / "other")


def test_a_run_shows_its_score_table_in_a_notebook(tmp_path):
    run = memplug.evaluate("bm25", "memsim", options={"n": 3}, output=tmp_path, progress=False)
    html = run._repr_html_()
    assert "<table>" in html and "accuracy" in html and run.run_id in html
    for category in run.summary.metrics.by_category:
        assert f"<td>{category}</td>" in html


def test_the_python_api_page_runs_as_written(tmp_path, monkeypatch):
    """Every ```python block of docs/python-api.md, in order, in one namespace."""
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    page = (ROOT / "docs" / "python-api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/python-api.md", "exec"), namespace)  # noqa: S102
    assert (tmp_path / "accuracy-vs-cost.png").is_file()


def test_the_readme_python_example_runs_as_written(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102
    assert memplug.read_runs(tmp_path / "runs")[0].status == "finished"
