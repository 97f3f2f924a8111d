"""What a person reads: at 80 columns no cell is cut, run ids are whole, the headline run
fits in 40 lines, and numbers that cannot be estimated say so."""

from __future__ import annotations

import subprocess
from pathlib import Path

import attrs

from memplug.record import QuestionRecord
from memplug.results import RunDir, summarize


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`memplug ARGS` at 80 columns, in process through the console script's entry
    (tests/inprocess.py): the width is what rich reads from COLUMNS either way."""
    import os

    from inprocess import memplug_main

    return memplug_main(args, env={**os.environ, **(env or {}), "COLUMNS": "80"}, cwd=cwd)


def test_the_headline_run_fits_80_columns_and_40_lines(tmp_path):
    result = run(["eval", "--agent", "bm25", "--dataset", "memsim", "-o", "n=30"], tmp_path)
    assert result.returncode == 0, result.stderr
    text = result.stdout + result.stderr
    run_dir = Path(result.stdout.strip().splitlines()[-1])
    assert "…" not in text
    assert all(len(line) <= 80 for line in result.stdout.splitlines())
    assert len(text.splitlines()) <= 40
    assert text.count(run_dir.name) >= 2  # whole, on the first line and in the path
    assert "protocol memsim v1" in text and "aggregative: 5 questions not answered" in text


def test_list_report_and_repeats_cut_no_cell_at_80_columns(tmp_path):
    result = run(
        ["eval", "--agent", "bm25", "--dataset", "memsim", "-o", "n=12", "--repeats", "2", "--output", "runs"], tmp_path
    )
    assert result.returncode == 0, result.stderr
    listed = run(["list"], tmp_path)
    report = run(["report", *sorted(str(p) for p in (tmp_path / "runs").iterdir())], tmp_path)
    assert report.returncode == 0, report.stderr  # the repeats-*.json among the runs is read, not fatal
    assert report.stdout.count("2 repeats of ") == 1 and report.stderr == ""
    for text in (result.stdout + result.stderr, listed.stdout, report.stdout + report.stderr):
        assert "…" not in text
    for table in (result.stdout, listed.stdout, report.stdout):  # (one-line messages on stderr may wrap)
        assert all(len(line) <= 80 for line in table.splitlines())
    for run_dir in (tmp_path / "runs").iterdir():
        if run_dir.is_dir():
            assert run_dir.name in report.stdout


def test_an_interval_from_one_sample_is_not_an_interval():
    records = [QuestionRecord("only", f"q{i}", "c", "?", scores={"em": float(i % 2)}) for i in range(6)]
    one = summarize(records, "a", "d", "r", 0.0)
    assert one.ci is not None and one.n is not None
    assert one.metrics.overall["em"] == 0.5 and one.ci.overall["em"] is None
    assert one.n.overall["em"] == 6
    two = summarize([attrs.evolve(r, sample_id=f"s{i % 2}") for i, r in enumerate(records)], "a", "d", "r", 0.0)
    assert two.ci is not None and two.ci.overall["em"] is not None


def test_a_one_sample_run_prints_n_a_with_its_reason(tmp_path):
    result = run(["eval", "--agent", "bm25", "--dataset", "factcon", "--limit", "10"], tmp_path)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "Scores (95% CI n/a: 1 sample)" in result.stdout and "[0." not in result.stdout  # no [x, x]
    assert "n/a (1 sample): no interval can be estimated where all the questions of a mean come from one sample" in text
    summary = RunDir(tmp_path / result.stdout.strip().splitlines()[-1]).summary()
    assert summary.ci is not None and summary.ci.na is not None
    assert set(summary.ci.overall.values()) == {None}
    assert set(summary.ci.na.overall.values()) == {"1 sample"}


def test_latency_percentiles_per_stage_in_summary_terminal_and_html(tmp_path):
    result = run(["eval", "--agent", "bm25", "--dataset", "memsim", "-o", "n=20"], tmp_path)
    run_dir = tmp_path / result.stdout.strip().splitlines()[-1]
    latency = RunDir(run_dir).summary().efficiency.latency_s
    assert latency is not None and set(latency) == {"ingest", "recall", "answer"}
    for stage in latency.values():
        assert stage is not None and 0 <= stage["p50"] <= stage["p95"] <= stage["p99"] <= stage["max"]
    assert "Latency s p50/p95/p99: ingest " in result.stdout.replace("\n", " ")
    page = tmp_path / "page.html"
    assert run(["report", str(run_dir), "--html", str(page)], tmp_path).returncode == 0
    assert "p50 / p95 / p99" in page.read_text(encoding="utf-8")


def test_percentiles_of_nothing_are_none():
    from memplug.results import _percentiles

    assert _percentiles([None, None]) is None
    assert _percentiles([1.0, 2.0, 3.0, None]) == {"p50": 2.0, "p95": 2.9, "p99": 2.98, "max": 3.0}
