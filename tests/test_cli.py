"""The command line: the happy path and one-line errors with exit code 2.

The commands run in process through the console script's own entry (tests/inprocess.py);
the first test runs `python -m memplug.cli` in a process of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inprocess import memplug_main
from memplug.cli.eval import repeat_names


def memplug(env, *args, cwd=None):
    return memplug_main(args, env=env, cwd=cwd)


def real_memplug(env, *args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "memplug.cli", *args], env=env, capture_output=True, text=True, cwd=cwd, timeout=120
    )


def one_line_error(result, *needles):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_eval_then_report(testkit_env, tmp_path):
    res = real_memplug(testkit_env, "eval", "--agent", "lookup", "--dataset", "counting", "--output", str(tmp_path))
    assert res.returncode == 0, res.stderr
    run_dir = Path(res.stdout.strip().splitlines()[-1])
    assert {p.name for p in run_dir.iterdir()} >= {"run.json", "samples.jsonl", "summary.json"}
    table = memplug(testkit_env, "report", str(run_dir))
    assert table.returncode == 0 and "overall" in table.stdout and "em" in table.stdout
    as_json = json.loads(memplug(testkit_env, "report", str(run_dir), "--json").stdout)
    assert as_json["runs"][0]["n_questions"] == 18 and as_json["paired"] == []


def test_unknown_agent(testkit_env, tmp_path):
    one_line_error(
        memplug(testkit_env, "eval", "--agent", "lookp", "--dataset", "counting", "--output", str(tmp_path)),
        "unknown agent 'lookp'",
        'did you mean "lookup"',
    )


def test_option_without_equals(testkit_env, tmp_path):
    one_line_error(
        memplug(
            testkit_env, "eval", "--agent", "lookup", "--dataset", "counting", "-o", "delay", "--output", str(tmp_path)
        ),
        "expected key=value",
    )


def test_unknown_option_and_wrong_type(testkit_env, tmp_path):
    one_line_error(
        memplug(
            testkit_env, "eval", "--agent", "lookup", "--dataset", "counting", "-o", "dely=1", "--output", str(tmp_path)
        ),
        'did you mean "delay"',
    )
    one_line_error(
        memplug(
            testkit_env,
            "eval",
            "--agent",
            "lookup",
            "--dataset",
            "counting",
            "-o",
            "delay=soon",
            "--output",
            str(tmp_path),
        ),
        "expected float",
    )


def test_output_that_is_not_writable(testkit_env, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line_error(
        memplug(testkit_env, "eval", "--agent", "lookup", "--dataset", "counting", "--output", str(blocker / "runs")),
        "--output",
    )


def test_dataset_file_that_is_not_json(testkit_env, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("this is not json {")
    one_line_error(
        memplug(
            testkit_env,
            "eval",
            "--agent",
            "lookup",
            "--dataset",
            "factcon",
            "--data",
            str(bad),
            "--output",
            str(tmp_path),
        ),
        str(bad),
    )


def test_missing_data_path(testkit_env, tmp_path):
    one_line_error(
        memplug(
            testkit_env,
            "eval",
            "--agent",
            "lookup",
            "--dataset",
            "counting",
            "--data",
            str(tmp_path / "nope"),
            "--output",
            str(tmp_path),
        ),
        "no such file",
    )


def test_report_of_a_folder_that_is_not_a_run(testkit_env, tmp_path):
    one_line_error(memplug(testkit_env, "report", str(tmp_path)), "not a memplug run")
    one_line_error(memplug(testkit_env, "report", str(tmp_path / "nowhere")), "nowhere: no such run directory")


def test_generate_n_for_a_dataset_without_it(testkit_env, tmp_path):
    one_line_error(
        memplug(testkit_env, "generate", "--dataset", "counting", "--n", "3", "--out", str(tmp_path / "x.jsonl")),
        "has no option n",
    )


def test_generate_writes_samples_that_eval_reads_back(testkit_env, tmp_path):
    out = tmp_path / "c.jsonl"
    res = memplug(testkit_env, "generate", "--dataset", "counting", "-o", "samples=2", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert len(out.read_text().splitlines()) == 2
    res = memplug(
        testkit_env,
        "eval",
        "--agent",
        "lookup",
        "--dataset",
        "counting",
        "--data",
        str(out),
        "--output",
        str(tmp_path / "runs"),
        "--quiet",
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads((Path(res.stdout.strip()) / "summary.json").read_text())
    assert summary["n_questions"] == 6


@pytest.mark.parametrize(
    "args", [["--help"], ["eval", "--help"], ["list", "--help"], ["generate", "--help"], ["report", "--help"]]
)
def test_help(testkit_env, args):
    res = memplug(testkit_env, *args)
    assert res.returncode == 0 and "Usage" in res.stdout


def test_the_command_list_imports_no_command_and_says_what_each_one_does():
    """`memplug --help` imported every command to read its docstring (numpy, the judges: a
    third of a second); the summaries it prints instead must be the commands' own."""
    import click

    from memplug.cli import BUILTIN_COMMANDS, BUILTIN_SUMMARIES, cli

    code = (
        "import sys; sys.argv = ['memplug', '--help']; from memplug.cli import main\n"
        "try: main()\nexcept SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('memplug.cli.') or m == 'numpy'))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert "eval         Evaluate a memory agent on a dataset." in result.stdout
    assert set(BUILTIN_SUMMARIES) == set(BUILTIN_COMMANDS)
    ctx = click.Context(cli)
    for name, summary in BUILTIN_SUMMARIES.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.get_short_help_str(10_000) == summary, name


def test_report_of_two_runs_prints_the_paired_comparison(testkit_env, tmp_path):
    runs = []
    for options in ([], ["-o", "wrong=q1"]):
        res = memplug(
            testkit_env,
            "eval",
            "--agent",
            "lookup",
            "--dataset",
            "counting",
            *options,
            "--output",
            str(tmp_path),
            "--quiet",
        )
        assert res.returncode == 0, res.stderr
        runs.append(res.stdout.strip())
    table = memplug(testkit_env, "report", *runs)
    assert table.returncode == 0, table.stderr
    assert "Paired comparison" in table.stdout and "mcnemar" in table.stdout
    paired = json.loads(memplug(testkit_env, "report", *runs, "--json").stdout)["paired"][0]
    em = paired["metrics"]["em"]
    # A is right on all 18; B is wrong on q1 of each of the 6 samples: 6 discordant pairs, all for A,
    # so McNemar's exact two-sided p = 2 * 0.5**6 = 0.03125
    assert em["n"] == 18 and em["a_only"] == 6 and em["b_only"] == 0
    assert abs(em["diff"] - 6 / 18) < 1e-9 and em["ci"][0] <= em["diff"] <= em["ci"][1]
    assert em["p_value"] == 0.03125


def test_repeats_report_mean_spread_and_each_repeat(testkit_env, tmp_path):
    res = memplug(
        testkit_env,
        "eval",
        "--agent",
        "lookup",
        "--dataset",
        "counting",
        "-o",
        "wrong=q1",
        "--repeats",
        "3",
        "--seed",
        "5",
        "--output",
        str(tmp_path),
        "--quiet",
    )
    assert res.returncode == 0, res.stderr
    result = json.loads(Path(res.stdout.strip()).read_text())
    assert result["seeds"] == [5, 6, 7] and len(result["runs"]) == 3
    em = result["overall"]["em"]
    # every repeat gets q1 of each sample wrong: em = 12/18 in all three, so no spread
    assert em["values"] == [pytest.approx(12 / 18)] * 3 and em["std"] == 0.0 and em["n"] == 3
    seeds = {json.loads((tmp_path / r / "run.json").read_text())["spec"]["seed"] for r in result["runs"]}
    assert seeds == {5, 6, 7}
    shown = memplug(
        testkit_env,
        "eval",
        "--agent",
        "lookup",
        "--dataset",
        "counting",
        "--repeats",
        "2",
        "--output",
        str(tmp_path / "shown"),
    )
    # the repeats table sums repeats up; pairing runs that differ only in their seed says nothing
    assert shown.returncode == 0 and "repeats of" in shown.stdout
    assert "Paired comparison" not in shown.stdout and "not compared" not in shown.stdout


def test_generate_loads_and_checks_a_release(testkit_env, shared_data, tmp_path):
    out = tmp_path / "release.jsonl"
    res = memplug(
        testkit_env,
        "generate",
        "--dataset",
        "factcon",
        "--data",
        str(shared_data / "factconsolidation"),
        "--out",
        str(out),
        "--check",
    )
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["ok"] and report["stats"]["release_sh_gold_is_newest"] == 100
    assert len(out.read_text().splitlines()) == report["stats"]["release_contexts"] == 2
    one_line_error(
        memplug(
            testkit_env,
            "generate",
            "--dataset",
            "memsim",
            "--data",
            str(shared_data / "memdaily"),
            "--out",
            str(tmp_path / "x.jsonl"),
        ),
        "reads no --data",
    )


def test_generate_check_without_a_validator_writes_nothing(testkit_env, tmp_path):
    out = tmp_path / "c.jsonl"
    one_line_error(
        memplug(testkit_env, "generate", "--dataset", "counting", "--out", str(out), "--check"), "has no validator"
    )
    assert not out.exists()


def test_repeats_share_one_stem_with_r_suffixes(testkit_env, tmp_path):
    """The repeats of one command are <stem>-r1 ... -rN, whatever the clock does between
    them; a stem whose names are taken moves on as a whole (<stem>-1-r1 ...), never one repeat."""

    def repeats(n: str) -> list[str]:
        res = memplug(
            testkit_env,
            *("eval", "--agent", "lookup", "--dataset", "counting", "--repeats", n),
            *("--output", str(tmp_path), "--quiet"),
        )
        assert res.returncode == 0, res.stderr
        runs: list[str] = json.loads(Path(res.stdout.strip()).read_text())["runs"]
        return runs

    first = repeats("3")
    stem = first[0].removesuffix("-r1")
    assert stem.endswith("-lookup-counting") and first == [f"{stem}-r1", f"{stem}-r2", f"{stem}-r3"]
    assert all((tmp_path / r / "run.json").is_file() for r in first)
    single = memplug(
        testkit_env, "eval", "--agent", "lookup", "--dataset", "counting", "--output", str(tmp_path), "--quiet"
    )
    assert single.returncode == 0 and single.stdout.strip().endswith("-lookup-counting")  # one run: no -r1
    (tmp_path / f"{stem}-1-r2").mkdir()  # the next stem is taken in part: skipped whole
    assert repeat_names(tmp_path, stem, 2) == [f"{stem}-2-r1", f"{stem}-2-r2"]
    assert repeat_names(tmp_path, stem, 4) == [f"{stem}-2-r1", f"{stem}-2-r2", f"{stem}-2-r3", f"{stem}-2-r4"]
    assert repeat_names(tmp_path, "other", 2) == ["other-r1", "other-r2"]


@pytest.mark.parametrize(("made", "given", "found"), [("zh", "en", "Chinese"), ("en", "zh", "English")])
def test_a_generated_file_in_another_language_than_the_option_is_refused(tmp_path, made, given, found):
    """The samples file keeps no option it was made with: a Chinese file run without
    -o lang=zh was read with the English prompts and scored by English rules (F1 0.000 on
    answers in Chinese), exit 0."""
    out = tmp_path / "m.jsonl"
    res = memplug(None, "generate", "--dataset", "memsim", "-o", f"lang={made}", "-o", "n=4", "--out", str(out))
    assert res.returncode == 0, res.stderr
    run = ("eval", "--agent", "bm25", "--dataset", "memsim", "--data", str(out), "--output", str(tmp_path / "runs"))
    one_line_error(memplug(None, *run, "-o", f"lang={given}"), f"its text is {found}", f"give -o lang={made}")
    assert not (tmp_path / "runs").exists()
    assert memplug(None, *run, "-o", f"lang={made}", "--quiet").returncode == 0
