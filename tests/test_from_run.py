"""`memplug eval --from RUN`: answer and score a finished run's stored recalls again, with
another reader, LLM or protocol option, without building the agent or ingesting anything."""

from __future__ import annotations

import pytest

from memplug.errors import MemplugError
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec


def stored_run(tmp_path, **options):
    spec = RunSpec(agent="lookup", dataset="counting", agent_options={"answer": "false", **options})
    return Evaluation(spec).run(output=tmp_path / "runs")


def test_the_stored_recalls_are_answered_again_and_nothing_is_ingested(testkit, tmp_path, openai_stub):
    source = stored_run(tmp_path)
    openai_stub.reply = lambda body: "apple"
    spec = RunSpec(
        agent="lookup",
        dataset="counting",
        agent_options={"answer": "false"},
        from_run=str(source),
        reader="llm",
        llm="openai/stub",
        api_base=openai_stub.base_url,
    )
    testkit.LookupAgent.peak = 0
    path = Evaluation(spec).run(output=tmp_path / "runs")
    assert testkit.LookupAgent.peak == 0  # no agent was built
    assert not (path / "work").exists()
    before = {r.key: r for r in RunDir(source).records()}
    after = RunDir(path).records()
    assert len(after) == 18 and all(r.prediction == "apple" for r in after)
    for r in after:
        assert r.recalled == before[r.key].recalled
        assert r.scores["recall@5"] == before[r.key].scores["recall@5"]
    # the LLM read the stored items: the prompt holds the recalled memory of its question
    first = openai_stub.chat_requests[0]["messages"][-1]["content"]
    assert "Item" in first
    stored = RunDir(path).info()
    assert stored.from_run == str(source) and stored.resolved["from_run"] == source.name


def test_a_question_the_source_failed_is_an_error_again(testkit, tmp_path):
    source = stored_run(tmp_path, fail_question="q1")
    path = Evaluation(RunSpec(agent="lookup", dataset="counting", from_run=str(source))).run(output=tmp_path / "runs")
    failed = [r for r in RunDir(path).records() if r.error]
    assert len(failed) == 6 and all("the --from run failed on this question" in str(r.error) for r in failed)
    assert RunDir(path).info().status == "partial"


def test_more_items_than_the_source_recalled_are_refused(testkit, tmp_path):
    source = stored_run(tmp_path)
    with pytest.raises(MemplugError, match="it recalled 5 items per question; --top-k 10"):
        Evaluation(RunSpec(agent="lookup", dataset="counting", from_run=str(source), top_k=10))


def test_the_cli_takes_the_stored_spec_and_the_options_given_now(testkit_env, tmp_path):
    import subprocess

    from inprocess import memplug_main

    def memplug(*args: str) -> subprocess.CompletedProcess[str]:
        """`memplug ARGS` in process, through the console script's entry (tests/inprocess.py)."""
        return memplug_main(args, env=testkit_env, cwd=tmp_path)

    first = memplug("eval", "--agent", "lookup", "--dataset", "counting", "-o", "samples=2", "--quiet")
    assert first.returncode == 0, first.stderr
    source = first.stdout.strip().splitlines()[-1]
    again = memplug("eval", "--from", source, "--quiet")
    assert again.returncode == 0, again.stderr
    spec = RunDir(tmp_path / again.stdout.strip().splitlines()[-1]).info().spec
    assert spec["dataset_options"] == {"samples": "2"} and spec["from_run"] == source
    both = memplug("eval", "--from", source, "--resume", source)
    assert both.returncode == 2 and "give one of them" in both.stderr
    runs = sorted((tmp_path / "runs").iterdir())
    # another agent's name on lookup's recalls: a run recorded as bm25's, exit 0, before
    other = memplug("eval", "--from", source, "--agent", "bm25", "--quiet")
    assert other.returncode == 2 and "--agent 'bm25' cannot change them" in other.stderr, other.stderr
    # questions the source never asked: each failed at run time, and its resume for ever
    more = memplug("eval", "--from", source, "-o", "samples=3", "--quiet")
    assert more.returncode == 2 and "3 of 9 questions were not asked by that run (the first: s2/q0)" in more.stderr, (
        more.stderr
    )
    assert sorted((tmp_path / "runs").iterdir()) == runs  # no run directory made for either
    fewer = memplug("eval", "--from", source, "--limit", "3", "--quiet")  # a part of its questions is fine
    assert fewer.returncode == 0, fewer.stderr


def test_a_replayed_run_lists_nothing_and_takes_no_gate_from_its_source(testkit_env, tmp_path):
    """The source's --fail-under gated the source; a run --from it is gated by what is given
    now. And the stand-in agent declares no stored() listing (the runner called a dict)."""
    from inprocess import memplug_main

    def memplug(*args: str) -> tuple[int, str, str]:
        done = memplug_main(args, env=testkit_env, cwd=tmp_path)
        return done.returncode, done.stdout.strip().splitlines()[-1], done.stderr

    gate = ("--fail-under", "em=0.999")
    code, source, stderr = memplug(
        "eval", "--agent", "lookup", "--dataset", "counting", "-o", "wrong=q1", "--quiet", *gate
    )
    assert code == 3 and "below --fail-under" in stderr, stderr
    code, again, stderr = memplug("eval", "--from", source, "--quiet")
    assert code == 0, stderr
    run = RunDir(tmp_path / again)
    assert run.info().spec["fail_under"] == [] and run.info().spec["max_errors"] is None
    assert "stored() failed" not in (run.path / "memplug.log").read_text()
    code, _, stderr = memplug("eval", "--from", source, "--quiet", *gate)
    assert code == 3 and "below --fail-under: em" in stderr, stderr
