"""Papercuts a new user met (issue 26): each a one-line answer that says what to do."""

from __future__ import annotations

import json
import subprocess

import pytest
from inprocess import memplug_main


def one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_a_mistyped_command_gets_did_you_mean(testkit_env, tmp_path):
    one_line_error(
        memplug_main(["evl"], env=testkit_env, cwd=tmp_path), "no such command 'evl'", 'did you mean "eval"?'
    )


def test_a_view_of_report_taken_for_a_command_is_pointed_to_report(testkit_env, tmp_path):
    """`memplug why RUN` (the stage diagnosis is `report --why`): said where it lives."""
    one_line_error(
        memplug_main(["why", str(tmp_path)], env=testkit_env, cwd=tmp_path),
        "no such command 'why'",
        "memplug report --why RUN",
    )


def test_a_name_in_other_letter_case_gets_did_you_mean(testkit_env, tmp_path):
    one_line_error(
        memplug_main(["eval", "--agent", "LOOKUP", "--dataset", "counting"], env=testkit_env, cwd=tmp_path),
        "unknown agent 'LOOKUP'",
        'did you mean "lookup"?',
    )


def test_another_tools_run_directory_is_not_taken_for_an_unfinished_run(testkit_env, tmp_path):
    """`report` suggested --resume, which then asked for --agent and --dataset."""
    other = tmp_path / "other-run"
    other.mkdir()
    (other / "run.json").write_text(json.dumps({"model": "gpt-4o", "status": "done"}))
    for args in (["report", str(other)], ["eval", "--resume", str(other)]):
        line = one_line_error(memplug_main(args, env=testkit_env, cwd=tmp_path), "not a memplug run directory")
        assert "--resume" not in line and "--agent" not in line, line


def test_the_headline_says_the_data_was_generated_and_who_answered(testkit_env, tmp_path):
    """ "(official)" stood beside the scores of one generated sample answered offline, unsaid."""
    result = memplug_main(
        ["eval", "--agent", "lookup", "--dataset", "counting", "-o", "answer=false", "--output", str(tmp_path)],
        env=testkit_env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    headline = " ".join(result.stdout.split())
    assert "generated data, answered by the offline extractive reader" in headline, result.stdout


def test_a_missing_provider_key_is_said_before_litellm_is_imported(testkit_env, tmp_path):
    """It took 7-34 s (importing litellm) to say that OPENAI_API_KEY was missing."""
    import subprocess
    import sys

    env = {k: v for k, v in testkit_env.items() if k != "OPENAI_API_KEY"}
    code = (
        "import atexit, sys; atexit.register(lambda: print('litellm imported:', 'litellm' in sys.modules, "
        "file=sys.stderr)); sys.argv = ['memplug', 'eval', '--agent', 'lookup', '--dataset', 'counting', "
        "'--llm', 'openai/gpt-4o-mini']; from memplug.cli import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "memplug: error: --llm openai/gpt-4o-mini: openai needs OPENAI_API_KEY in the environment (or give "
        "--api-base URL of a server that needs no key)",
        "litellm imported: False",
    ]


@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("gemini/gemini-1.5-flash", "gemini needs GEMINI_API_KEY or GOOGLE_API_KEY in the environment"),
        ("gpt-4o-mini", "openai needs OPENAI_API_KEY in the environment"),  # a bare name: litellm's price map
        ("anthropic/claude-3-5-haiku-latest", "anthropic needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"),
    ],
)
def test_each_common_provider_s_key_is_checked_without_litellm(model, said, monkeypatch):
    """Only six providers were known before litellm's import: `--llm gemini/...` took 8 s to
    say GEMINI_API_KEY was missing."""
    import sys

    from memplug import preflight
    from memplug.errors import MemplugError
    from memplug.runner import RunSpec

    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    had_litellm = "litellm" in sys.modules
    with pytest.raises(MemplugError, match=said):
        preflight.check_keys(RunSpec(agent="bm25", dataset="memsim", llm=model))
    assert had_litellm or "litellm" not in sys.modules
    monkeypatch.setenv(
        "GOOGLE_API_KEY" if "gemini" in model else "ANTHROPIC_AUTH_TOKEN" if "anthropic" in model else "OPENAI_API_KEY",
        "k",
    )  # any one of the provider's variables will do
    preflight.check_keys(RunSpec(agent="bm25", dataset="memsim", llm=model))


def test_letta_without_a_model_fails_before_a_run_directory_exists(testkit_env, tmp_path):
    """It made a run directory and showed a progress bar before every sample failed on it."""
    result = memplug_main(
        ["eval", "--agent", "letta", "--dataset", "counting", "--output", str(tmp_path / "runs")],
        env=testkit_env,
        cwd=tmp_path,
    )
    one_line_error(result, "agent 'letta' needs a model")
    assert not (tmp_path / "runs").exists()


def test_a_model_without_a_provider_is_one_short_line(testkit_env, tmp_path):
    """`--judge foo` ended in litellm's 300-character "LLM Provider NOT provided..." message."""
    line = one_line_error(
        memplug_main(
            ["eval", "--agent", "lookup", "--dataset", "counting", "--judge", "foo"], env=testkit_env, cwd=tmp_path
        ),
        "'foo'",
        "it names no provider",
    )
    assert len(line) < 200, line


def test_rescore_counts_the_questions_the_run_counted(tmp_path, shared_data):
    """Questions the reader could not answer have recall scores; `rescore recall@3` left them out
    (42 where the run's recall@5 counted 50): one rule for n, the run's."""
    from memplug.record import RunSummary
    from memplug.rescoring import rescore_run
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    data = shared_data / "memdaily"
    path = Evaluation(RunSpec(agent="bm25", dataset="memdaily", data=str(data), limit=60)).run(output=tmp_path)
    run = RunDir(path)
    assert any(r.unanswerable for r in run.records()) and any(not r.unanswerable for r in run.records())
    result = rescore_run(path, metrics=["recall@3"])
    after = RunSummary.from_json(json.loads(result.summary_path.read_text()), result.summary_path)
    before = run.summary()
    assert before.n is not None and after.n is not None
    assert after.n.overall["recall@3"] == before.n.overall["recall@5"] > before.n.overall["accuracy"]


def test_a_sweep_ends_with_a_line_per_cell_and_points_to_report(tmp_path):
    """`sweep` printed every cell's full tables: 419 lines for 18 cells."""
    from click.testing import CliRunner

    from memplug.cli import cli

    config = tmp_path / "sweep.toml"
    config.write_text(
        'name = "tiny"\n[base]\noptions = { n = "3" }\n[grid]\nagents = ["bm25", "recent"]\n'
        'datasets = ["memsim"]\nseeds = [0, 1]\n'
    )
    result = CliRunner().invoke(cli, ["sweep", str(config), "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 7, result.stdout  # the pointer to report wrapped before its path (80 columns)
    assert lines[0].startswith("c000 bm25 on memsim, seed 0, -o n=3: finished; ") and "accuracy " in lines[0]
    assert lines[4] == "tables, intervals and paired comparisons: memplug report" and lines[5] == f"  {lines[6]}"


def test_ray_log_lines_go_to_the_run_log_not_the_terminal(monkeypatch, capfd):
    """Every Ray run printed "Token authentication is enabled for this Ray cluster..." on the terminal."""
    import logging

    pytest.importorskip("ray")
    from memplug.executors import ray_logs_to_memplug_log

    ray_logger = logging.getLogger("ray")
    monkeypatch.setattr(ray_logger, "handlers", list(ray_logger.handlers))
    monkeypatch.setattr(ray_logger, "propagate", ray_logger.propagate)
    monkeypatch.delenv("MEMPLUG_RAY_LOGS", raising=False)
    captured: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            captured.append(record.getMessage())

    ray_logs_to_memplug_log()
    root = logging.getLogger()
    keep = Keep()
    logging.getLogger("ray._private.authentication.authentication_token_setup").warning("before the run's log")
    root.addHandler(keep)
    try:
        logging.getLogger("ray._private.authentication.authentication_token_setup").warning(
            "Token authentication is enabled for this Ray cluster."
        )
    finally:
        root.removeHandler(keep)
    assert capfd.readouterr().err == ""
    assert captured == ["Token authentication is enabled for this Ray cluster."]


def test_a_mean_over_fewer_questions_than_its_row_says_its_n(tmp_path, shared_data, capsys):
    """The terminal's n was the row's largest count (recall's 50) beside an accuracy over 42,
    where the CSV and the HTML page give each metric its own n."""
    from memplug.cli.report import print_tables
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    path = Evaluation(RunSpec(agent="bm25", dataset="memdaily", data=str(shared_data / "memdaily"), limit=60)).run(
        output=tmp_path
    )
    n = RunDir(path).summary().n
    assert n is not None and n.overall["accuracy"] < n.overall["recall@5"]
    capsys.readouterr()
    print_tables([path])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"(n={n.overall['accuracy']})" in shown, shown


def test_a_run_begun_under_another_protocol_is_not_resumed_under_this_one(shared_data, tmp_path):
    """LoCoMo's default protocol became version 2 (the official prompts per category): a run
    begun under version 1 with the same options would have mixed the two."""
    from memplug.errors import MemplugError
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    spec = RunSpec(agent="bm25", dataset="locomo", data=str(shared_data / "locomo" / "locomo_conv26.json"), limit=5)
    path = Evaluation(spec).run(output=tmp_path)
    stored = json.loads((path / "run.json").read_text())
    stored["resolved"]["protocol"]["version"] = "1"
    (path / "run.json").write_text(json.dumps(stored))
    with pytest.raises(
        MemplugError, match="asked under the answer protocol locomo-rag v1, this memplug asks under locomo-rag v2"
    ):
        Evaluation(spec).run(resume=path)
    stored["resolved"]["protocol"]["version"] = "2"
    (path / "run.json").write_text(json.dumps(stored))
    Evaluation(spec).run(resume=path)
    assert RunDir(path).info().status == "finished"
