"""`memplug report` says when runs side by side differ in K, context budget, reader, judge,
protocol or the questions asked."""

from __future__ import annotations

import json

from click.testing import CliRunner

from memplug import fairness
from memplug.cli import cli
from memplug.runner import Evaluation, RunSpec


def _run(tmp_path, **kw):
    spec = RunSpec(agent="bm25", dataset="memsim", dataset_options=kw.pop("dataset_options", {"n": "3"}), **kw)
    return Evaluation(spec).run(output=tmp_path)


def test_runs_set_alike_draw_no_warning(tmp_path):
    a, b = _run(tmp_path), _run(tmp_path, seed=1)
    assert fairness.differences([a, b]) == []
    done = CliRunner().invoke(cli, ["report", str(a), str(b)])
    assert done.exit_code == 0 and "warning" not in done.output


def test_each_setting_that_differs_is_named_with_each_runs_value(tmp_path):
    a = _run(tmp_path)
    b = _run(tmp_path, top_k=10, context_tokens=500)
    c = _run(tmp_path, dataset_options={"n": "3", "parse": "lenient"})
    assert fairness.differences([a, b, c]) == [
        (
            "on memsim: K (#1 5, #2 10, #3 5); context budget (#1 none, #2 500 tokens, #3 none); "
            "protocol (#1 memsim v1 (english translation of the Chinese prompt), #2 memsim v1 (english translation of "
            "the Chinese prompt), #3 memsim v1 (english translation of the Chinese prompt; parse=lenient))"
        )
    ]
    done = CliRunner().invoke(cli, ["report", str(a), str(b)], env={"COLUMNS": "300"})
    assert done.exit_code == 0
    assert (
        "memplug: warning: runs on memsim: K (#1 5, #2 10); context budget (#1 none, #2 500 tokens): "
        "their scores differ in more than the system"
    ) in done.output
    shown = json.loads(CliRunner().invoke(cli, ["report", str(a), str(b), "--json"]).stdout)
    assert shown["settings_differ"] == ["on memsim: K (#1 5, #2 10); context budget (#1 none, #2 500 tokens)"]
    table = CliRunner().invoke(cli, ["report", str(b), "--format", "markdown"]).output
    assert "context budget: 500 tokens" in table
    assert "context budget" not in CliRunner().invoke(cli, ["report", str(a), "--format", "markdown"]).output


def test_runs_on_other_datasets_are_not_compared(tmp_path):
    a = _run(tmp_path)
    other = Evaluation(RunSpec(agent="bm25", dataset="factcon", top_k=9, limit=2)).run(output=tmp_path)
    assert fairness.differences([a, other]) == []


def test_reader_and_judge_are_told_apart(tmp_path, openai_stub):
    openai_stub.reply = lambda body: "A"
    a = _run(tmp_path)
    b = _run(tmp_path, llm="openai/stub", api_base=openai_stub.base_url, judge="openai/stub")
    (line,) = fairness.differences([a, b])
    assert "reader (#1 extractive, #2 llm (openai/stub))" in line
    assert "judge (#1 none, #2 memplug (openai/stub, sha256 " in line


def test_runs_that_asked_other_questions_are_told_apart(tmp_path):
    """A LoCoMo run on categories 1-4 was ranked above one on 1-5 in `--format markdown`
    (its mean left out the adversarial zeros), with no warning."""
    a = _run(tmp_path, dataset_options={"n": "12"})
    fewer = _run(tmp_path, dataset_options={"n": "12", "noisy": "0"})
    limited = _run(tmp_path, dataset_options={"n": "12"}, limit=5)
    (line,) = fairness.differences([a, fewer, limited])
    assert "questions (#1 12, #2 10, #3 5)" in line, line
    assert "categories (#1 aggregative/comparative/conditional/noisy/post_processing/simple, #2 " in line, line
    done = CliRunner().invoke(cli, ["report", str(a), str(fewer), "--format", "markdown"])
    assert done.exit_code == 0 and "memplug: warning: runs on memsim: questions (#1 12, #2 10)" in done.stderr
