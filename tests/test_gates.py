"""--max-errors stops a run that fails too often; --fail-under fails one that scores too low (issue 30)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memplug import gates
from memplug.errors import MemplugError
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec

LOOKUP = ["eval", "--agent", "lookup", "--dataset", "counting", "--quiet", "--concurrency", "1"]


def memplug(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    from inprocess import memplug_main

    return memplug_main(args, env=env, cwd=cwd)


def runs_in(root: Path) -> list[Path]:
    return [p for p in (root / "runs").iterdir() if p.is_dir()] if (root / "runs").exists() else []


@pytest.mark.parametrize("text, expected", [("5", (5, False)), ("10%", (10, True)), (" 3 ", (3, False)), (None, None)])
def test_max_errors_reads_a_count_or_a_percentage(text, expected):
    assert gates.parse_max_errors(text) == expected


@pytest.mark.parametrize("text", ["0", "0%", "101%", "-1", "1.5", "ten", "5 %", ""])
def test_max_errors_refuses_what_is_not_one(text):
    with pytest.raises(MemplugError, match="--max-errors"):
        gates.parse_max_errors(text)


def test_a_percentage_is_of_the_questions_asked_rounded_up():
    assert gates.error_limit("10%", 18) == 2  # 1.8 -> 2
    assert gates.error_limit("1%", 18) == 1
    assert gates.error_limit("100%", 18) == 18
    assert gates.error_limit("4", 18) == 4 and gates.error_limit(None, 18) is None


def test_max_errors_stops_the_run_failed_not_stopped(testkit, tmp_path):
    # q1 fails in every sample: the 2nd failure is s1/q1, so s1/q2 and s2..s5 are never asked
    spec = RunSpec(
        agent="lookup", dataset="counting", agent_options={"fail_question": "q1"}, concurrency=1, max_errors="2"
    )
    path = Evaluation(spec).run(output=tmp_path / "runs")  # returns: no RunStopped (exit 1, not 2)
    run = RunDir(path)
    records = run.records()
    assert [r.sample_id for r in records if r.error] == ["s0", "s1"]
    assert {r.sample_id for r in records} == {"s0", "s1"}
    outcome = run.summary().outcome
    assert outcome is not None
    assert outcome.status == "failed" and outcome.n_answered == 3 and outcome.n_expected == 18
    assert outcome.n_failed == 2 and outcome.n_unasked == 13
    assert outcome.stopped == "stopped once 2 questions had failed (--max-errors 2)"
    assert str(outcome.first_error).startswith("ValueError: recall exploded")
    assert run.info().status == "failed" and run.info().spec["max_errors"] == "2"


def test_without_max_errors_the_same_run_goes_to_its_end(testkit, tmp_path):
    spec = RunSpec(agent="lookup", dataset="counting", agent_options={"fail_question": "q1"}, concurrency=1)
    outcome = RunDir(Evaluation(spec).run(output=tmp_path / "runs")).summary().outcome
    assert outcome is not None
    assert outcome.status == "partial" and outcome.n_failed == 6 and outcome.stopped is None


def test_max_errors_on_the_command_line_exits_1_with_the_reason(testkit_env, tmp_path):
    done = memplug(testkit_env, *LOOKUP, "-o", "fail_question=q1", "--max-errors", "20%", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    # 20% of 18 questions: 4 (3.6 rounded up)
    assert last.startswith("memplug: failed: stopped once 4 questions had failed (--max-errors 20%); ")
    assert "first error: ValueError: recall exploded" in last and "memplug eval --resume" in last


def test_a_bad_max_errors_is_one_line_before_any_run(testkit_env, tmp_path):
    done = memplug(testkit_env, *LOOKUP, "--max-errors", "0", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--max-errors '0'" in done.stderr
    assert runs_in(tmp_path) == []


def test_fail_under_reads_overall_and_category_thresholds():
    assert gates.Threshold.parse("em=0.5") == gates.Threshold("em", 0.5)
    assert gates.Threshold.parse("recall@5[multi-hop]=.25") == gates.Threshold("recall@5", 0.25, "multi-hop")
    for bad in ("em", "em=", "em=high", "=0.5", "em[x=0.5", "em=nan", "em=1=2"):
        with pytest.raises(MemplugError, match="--fail-under"):
            gates.Threshold.parse(bad)


def test_fail_under_exits_3_when_a_score_is_below(testkit_env, tmp_path):
    # answers wrongly on q0 of every sample: em 12/18 overall, 6/12 on "even" (q0, q2), 1.0 on "odd"
    wrong = [*LOOKUP, "-o", "wrong=q0"]
    done = memplug(testkit_env, *wrong, "--fail-under", "em=0.6", "--fail-under", "em[odd]=1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = memplug(testkit_env, *wrong, "--fail-under", "em=0.6", "--fail-under", "em[even]=0.51", cwd=tmp_path)
    assert done.returncode == gates.EXIT_BELOW == 3
    (line,) = [ln for ln in done.stderr.splitlines() if "--fail-under" in ln]
    assert line.startswith("memplug: below --fail-under: em[even] = 0.5000, below 0.51 (")
    run = RunDir(tmp_path / done.stdout.strip().splitlines()[-1])
    assert run.info().spec["fail_under"] == ["em=0.6", "em[even]=0.51"]
    outcome = run.summary().outcome
    assert outcome is not None and outcome.status == "finished"


@pytest.mark.parametrize(
    "threshold, said",
    [
        ("accuracy=0.5", "the run scores no metric 'accuracy'"),
        ("em[evn]=0.5", "no category 'evn' (did you mean \"even\"?)"),
    ],
)
def test_a_fail_under_naming_nothing_the_run_scores_fails_before_it(testkit_env, tmp_path, threshold, said):
    done = memplug(testkit_env, *LOOKUP, "--fail-under", threshold, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert runs_in(tmp_path) == []
