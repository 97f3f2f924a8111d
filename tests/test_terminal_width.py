"""Issue 14, points 6 and 7: every command reads on an 80-column terminal (no cell cut with
"…", no name or number broken across lines, run ids whole), and no number misleads: a
mean over one sample has no interval ("n/a (1 sample)", and null with its reason in
summary.json), a repeats-*.json among `report runs/*` is read, not fatal."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from memplug import stats
from memplug.results import RunDir


def run(args: list[str], cwd: Path, columns: int = 80) -> subprocess.CompletedProcess[str]:
    """`memplug ARGS` at ``columns`` wide, in process through the console script's entry
    (tests/inprocess.py): the width is what rich reads from COLUMNS either way."""
    from inprocess import memplug_main

    return memplug_main(args, env={**os.environ, "COLUMNS": str(columns)}, cwd=cwd)


def readable(text: str, width: int = 80) -> None:
    assert "…" not in text
    assert all(len(line) <= width for line in text.splitlines()), max(text.splitlines(), key=len)


def words(text: str) -> str:
    return " ".join(text.split())


def eval_run(cwd: Path, *args: str) -> Path:
    result = run(["eval", "--quiet", *args], cwd)
    assert result.returncode == 0, result.stderr
    return cwd / result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def locomo_runs(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> list[Path]:
    """bm25 and embedding on one LoCoMo conversation: one sample, five metrics."""
    cwd = tmp_path_factory.mktemp("locomo")
    data = str(shared_data / "locomo" / "locomo_conv26.json")
    return [
        eval_run(cwd, "--agent", agent, "--dataset", "locomo", "--data", data, "--output", "runs")
        for agent in ("bm25", "embedding")
    ]


def test_the_memdaily_headline_run_fits_80_columns_and_40_lines(tmp_path, shared_data):
    result = run(
        [
            "eval",
            "--agent",
            "embedding",
            "--dataset",
            "memdaily",
            "--data",
            str(shared_data / "memdaily"),
            "--limit",
            "60",
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout + result.stderr
    readable(result.stdout)
    assert "…" not in result.stderr
    assert len(text.splitlines()) <= 40
    run_id = Path(result.stdout.strip().splitlines()[-1]).name
    assert result.stdout.splitlines()[0].startswith(f"{run_id}: embedding on memdaily")


def test_list_breaks_no_name_and_no_option_at_80_columns(tmp_path):
    result = run(["list"], tmp_path)
    assert result.returncode == 0, result.stderr
    readable(result.stdout)
    listed = json.loads(run(["list", "--json"], tmp_path).stdout)
    for kind in ("datasets", "agents", "metrics", "readers"):
        for item in listed[kind]:
            # the name whole in its cell, and each option whole on a line (five columns broke both)
            assert re.search(rf"│ {re.escape(item['name'])} +│", result.stdout), item["name"]
            for o in item.get("options", []):
                assert f"{o['name']}:{o['type']}={o['default']}" in result.stdout, (item["name"], o)
    wide = run(["list"], tmp_path, columns=160)
    readable(wide.stdout, 160)
    assert len(wide.stdout.splitlines()) < len(result.stdout.splitlines())


def test_a_one_sample_run_has_no_interval_on_screen_in_json_and_html(tmp_path, locomo_runs):
    bm25 = locomo_runs[0]
    summary = RunDir(bm25).summary()
    assert summary.ci is not None and summary.ci.na is not None
    assert set(summary.ci.overall.values()) == {None}  # not [x, x]
    assert summary.ci.na.overall == {m: "1 sample" for m in summary.metrics.overall}
    assert summary.ci.na.by_category["1-multi-hop"]["f1"] == "1 sample"

    result = run(["report", str(bm25)], tmp_path)
    assert result.returncode == 0, result.stderr
    readable(result.stdout)
    assert "Scores (95% CI n/a: 1 sample)" in result.stdout and "[0." not in result.stdout
    assert "n/a (1 sample): no interval can be estimated" in result.stdout
    for name in ("locomo_f1_no_adv", "session_hit@5", "1-multi-hop", "3-open-domain", "5-adversarial"):
        assert re.search(rf"[┃│] {re.escape(name)} +[┃│]", result.stdout), name  # whole, in its cell

    page = tmp_path / "page.html"
    assert run(["report", *map(str, locomo_runs), "--html", str(page)], tmp_path).returncode == 0
    assert "n/a (1 sample)" in page.read_text(encoding="utf-8")
    latex = run(["report", *map(str, locomo_runs), "--format", "markdown"], tmp_path)
    assert latex.returncode == 0, latex.stderr
    assert "A mean shown alone has no interval: n/a (1 sample)" in latex.stdout


def test_a_paired_comparison_over_one_sample_has_no_interval_and_no_bootstrap_p(tmp_path, locomo_runs):
    result = run(["report", *map(str, locomo_runs)], tmp_path)
    assert result.returncode == 0, result.stderr
    readable(result.stdout)
    for path in locomo_runs:
        assert path.name in result.stdout
    text = words(result.stdout)
    assert re.search(
        r"recall@5 n 197: A 0\.\d{3}, B 0\.\d{3}, A - B [+-]0\.\d{3} n/a \(1 sample\), p n/a "
        r"\(paired-bootstrap\)",
        text,
    ), text
    assert re.search(
        r"session_hit@5 n 197: .* n/a \(1 sample\), p [0-9.e-]+ \(mcnemar-exact, \d+/\d+ discordant\)", text
    ), text

    paired = json.loads(run(["report", *map(str, locomo_runs), "--json"], tmp_path).stdout)["paired"][0]["metrics"]
    assert paired["f1"]["ci"] is None and paired["f1"]["ci_na"] == "1 sample"
    assert paired["f1"]["p_value"] is None and paired["f1"]["p_bootstrap"] is None  # was 1/1001: "significant"
    assert paired["session_hit@5"]["test"] == "mcnemar-exact" and paired["session_hit@5"]["p_value"] is not None


def test_a_category_from_one_sample_says_n_a_in_its_cell(tmp_path):
    # 6 MemSim trajectories, one per category: overall has an interval, no category has one
    path = eval_run(tmp_path, "--agent", "bm25", "--dataset", "memsim", "-o", "n=6")
    summary = RunDir(path).summary()
    assert summary.ci is not None and summary.ci.na is not None
    assert all(v is not None for v in summary.ci.overall.values())
    assert summary.ci.na.by_category["simple"] == {"accuracy": "1 sample", "recall@5": "1 sample"}
    result = run(["report", str(path)], tmp_path)
    readable(result.stdout)
    assert "Scores (95% CI)" in result.stdout
    assert re.search(r"│ simple +│ 1 +│ [01]\.\d{3} n/a \(1 sample\) +│ [01]\.\d{3} n/a \(1 sample\) +│", result.stdout)
    # accuracy is over the 5 questions the extractive reader answered (not the aggregative one), the row's n 6
    assert re.search(r"│ overall +│ 6 +│ \d\.\d{3} \[\d\.\d\d, \d\.\d\d\] \(n=5\) +│", result.stdout)


def test_report_of_runs_star_reads_the_repeats_file(tmp_path):
    result = run(
        ["eval", "--agent", "bm25", "--dataset", "memsim", "-o", "n=8", "--repeats", "3", "--output", "runs"], tmp_path
    )
    assert result.returncode == 0, result.stderr
    readable(result.stdout)
    entries = sorted((tmp_path / "runs").iterdir())
    repeats = [p for p in entries if p.is_file()]
    assert len(repeats) == 1 and repeats[0].name.startswith("repeats-")
    runs = [p for p in entries if p.is_dir()]

    report = run(["report", *map(str, entries)], tmp_path)
    assert report.returncode == 0 and report.stderr == "", report.stderr
    readable(report.stdout)
    for k, path in enumerate(runs, 1):  # each run once, whole
        assert sum(line.startswith(f"#{k} {path.name}: bm25 on memsim") for line in report.stdout.splitlines()) == 1
    assert report.stdout.count(f"3 repeats of {runs[0].name}") == 1

    alone = run(["report", str(repeats[0])], tmp_path)  # the repeats file alone: its runs, beside it
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout == report.stdout

    as_json = json.loads(run(["report", *map(str, entries), "--json"], tmp_path).stdout)
    assert [r["run_id"] for r in as_json["runs"]] == [p.name for p in runs]
    assert as_json["repeats"][0]["runs"] == [p.name for p in runs] and "accuracy" in as_json["repeats"][0]["overall"]

    (tmp_path / "runs" / "repeats-bogus.json").write_text("[1, 2]", encoding="utf-8")
    bogus = run(["report", str(tmp_path / "runs" / "repeats-bogus.json")], tmp_path)
    assert bogus.returncode == 2 and len(bogus.stderr.strip().splitlines()) == 1
    assert "not the summary of an `eval --repeats`" in bogus.stderr
    stray = run(["report", *map(str, runs), str(tmp_path / "runs" / "notes.txt")], tmp_path)
    assert stray.returncode == 2 and "no such run directory" in stray.stderr  # a typo is not skipped silently


def test_many_runs_split_their_tables_instead_of_breaking_numbers(tmp_path):
    paths = [
        eval_run(tmp_path, "--agent", agent, "--dataset", "memsim", "-o", "n=6", "--output", "runs")
        for agent in ("bm25", "embedding", "recent", "none", "oracle")
    ]
    result = run(["report", *map(str, paths)], tmp_path)
    assert result.returncode == 0, result.stderr
    readable(result.stdout)
    for path in paths:
        summary = RunDir(path).summary()
        assert summary.efficiency.latency_s is not None
        for stage in summary.efficiency.latency_s.values():  # each number whole on a line
            assert stage is not None
            for q in ("p50", "p95", "p99"):
                assert re.search(rf"(^|[ │]){re.escape(f'{stage[q]:.3g}')}( |$)", result.stdout, re.M), stage[q]
        for category, means in summary.metrics.by_category.items():
            assert re.search(rf"│ {re.escape(category)} +│", result.stdout)


# -- the statistics behind it ---------------------------------------------------------


def test_one_cluster_is_not_estimable():
    with pytest.raises(stats.NotEstimable) as caught:
        stats.bootstrap_ci([1.0, 0.0, 1.0], ["s", "s", "s"])
    assert caught.value.reason == "1 sample"
    with pytest.raises(stats.NotEstimable, match="1 question"):
        stats.bootstrap_ci([1.0])
    assert stats.summarize_metric([1.0, 0.0], ["s", "s"]) == {"mean": 0.5, "n": 2, "ci": None, "ci_na": "1 sample"}
    low, high = stats.bootstrap_ci([1.0, 0.0, 1.0, 0.0], ["a", "a", "b", "b"])
    assert low <= 0.5 <= high


def test_a_paired_comparison_within_one_sample():
    clusters = {f"q{i}": "only" for i in range(40)}
    graded = stats.paired_comparison({q: 0.9 for q in clusters}, {q: 0.1 for q in clusters}, clusters)
    assert graded["diff"] == pytest.approx(0.8) and graded["ci"] is None and graded["ci_na"] == "1 sample"
    assert graded["p_value"] is None and graded["p_bootstrap"] is None and graded["test"] == "paired-bootstrap"
    binary = stats.paired_comparison({q: 1.0 for q in clusters}, {q: 0.0 for q in clusters}, clusters)
    assert binary["ci"] is None and binary["p_value"] == pytest.approx(2 / 2**40)  # McNemar needs no resampling
    two = stats.paired_comparison(
        {q: 0.9 for q in clusters}, {q: 0.1 for q in clusters}, {q: i % 2 for i, q in enumerate(clusters)}
    )
    assert two["ci"] is not None and "ci_na" not in two


def test_a_column_of_single_words_is_never_folded_mid_word():
    import io

    from rich.console import Console

    from memplug.cli.tables import table

    buffer = io.StringIO()
    console = Console(file=buffer, width=80)
    wide = table(
        "judge-check",
        "judge",
        "questions",
        "n",
        "agreement",
        "kappa",
        "judge yes / exact no",
        "judge no / exact yes",
        "note",
    )
    wide.add_row(
        "openai/gpt-4o-mini",
        "multiple_choice",
        "200",
        "0.810",
        "0.000",
        "38",
        "0",
        "a long remark that can wrap at its spaces without losing anything at all",
    )
    console.print(wide)
    out = buffer.getvalue()
    readable(out)
    for word in ("openai/gpt-4o-mini", "multiple_choice", "agreement"):
        assert re.search(rf"[┃│] {re.escape(word)} +[┃│]", out), word


@pytest.mark.parametrize(
    "command", ["eval", "sweep", "list", "generate", "report", "rescore", "reproduce", "judge-check"]
)
def test_help_fits_80_columns(command, tmp_path):
    result = run([command, "--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    readable(result.stdout)
    assert "\\\n" in result.stdout or command != "eval"  # a continued example stays two lines


def test_eval_workers_is_for_ray_and_its_help_says_so(tmp_path):
    help_text = words(run(["eval", "--help"], tmp_path).stdout)
    assert "refused locally" in help_text and "Sweep" not in help_text
    result = run(["eval", "--agent", "bm25", "--dataset", "memsim", "--workers", "2", "--output", "runs"], tmp_path)
    assert result.returncode == 2 and result.stderr.strip() == (
        "memplug: error: --workers is for --executor ray (locally, --concurrency sets the samples side by side)"
    )
    assert not (tmp_path / "runs").exists()


def test_five_runs_keep_each_efficiency_label_whole_on_its_line(tmp_path):
    """Five bm25 runs side by side split "ingest s/msg" and "p50/p95/p9" over "9" (a label
    read as a number): the labels are whole, the runs' numbers each whole on a line."""
    paths = [
        eval_run(tmp_path, "--agent", "bm25", "--dataset", "memsim", "-o", "n=6", "--seed", str(seed))
        for seed in range(5)
    ]
    result = run(["report", *map(str, paths)], tmp_path)
    assert result.returncode == 0, result.stderr
    readable(result.stdout)
    labels = ["questions", "ingest s/msg", "recall s/q", "cost $"]
    labels += [f"{stage} s p50/p95/p99" for stage in ("ingest", "recall", "answer")]
    for label in labels:
        assert re.search(rf"^│ {re.escape(label)} +│", result.stdout, re.M), label
    for path in paths:
        latency = RunDir(path).summary().efficiency.latency_s
        assert latency is not None
        for stage in latency.values():
            assert stage is not None
            for q in ("p50", "p95", "p99"):
                assert re.search(rf"│ {re.escape(f'{stage[q]:.3g}')} +│", result.stdout), stage[q]


def test_why_wraps_its_lines_at_80_columns(tmp_path):
    """`report --why`'s "memory:" line was one line of 160 to 200 columns, then wrapped at any
    space ("(n" at the end of a line, "1138)" on the next); its examples' lines of up to 300
    columns were left for the terminal to fold at the left edge. Now every line fits, no
    count or interval is split, and an example's field folds under its own text."""
    path = eval_run(tmp_path, "--agent", "bm25", "--dataset", "memsim", "-o", "n=6")
    result = run(["report", "--why", str(path), "--n", "1"], tmp_path)
    assert result.returncode == 0, result.stderr
    summary, _, examples = result.stdout.partition("\n\n")
    readable(summary)
    text = words(summary)
    assert re.search(r"memory: extraction \d\.\d{3} .* \(n \d+\), retrieval \d\.\d{3}", text), text
    assert re.match(rf"{re.escape(path.name)}: \d answers diagnosed wrong: \d+% ", text), text
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert not [line for line in lines if re.search(r"\((n|\d\.\d\d,)$|^\s*\d+\)", line.rstrip())], lines
    assert re.search(r"^  question: .+\n      \S", examples, re.M), examples  # MemSim's questions are long


def test_a_sweeps_progress_and_report_lines_wrap_at_80_columns(tmp_path, monkeypatch):
    """`[1/1] failed <run id>: <error>` and "... memplug report <sweep path>" were one line
    each, past 80 columns with a long error or path; wrapped at spaces, ids and paths whole."""
    import memplug.sweep

    error = "the agent's server answered 503 Service Unavailable three times; " * 3

    def failed(job: dict[str, object], executor: object = None) -> dict[str, object]:
        return {"index": job["index"], "status": "failed", "error": error}

    monkeypatch.setattr(memplug.sweep, "run_cell", failed)
    config = tmp_path / "s.toml"
    config.write_text('[base]\noptions = { n = "4" }\n[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\n')
    output = tmp_path / ("sweeps-" + "x" * 40)
    result = run(["sweep", str(config), "--output", str(output)], tmp_path)
    assert result.returncode == 1, result.stderr
    sweep = result.stdout.strip().splitlines()[-1]
    readable(result.stdout.replace(sweep, ""))  # the last line, the sweep's path alone, is for scripts
    progress = result.stderr.split("memplug: 1 of 1")[0]
    readable(progress)
    assert words(progress) == f"[1/1] failed {Path(sweep).name}-c000-bm25-memsim-s0: {words(error)}"
    assert f"tables, intervals and paired comparisons: memplug report {sweep}" in words(result.stdout)
    assert f"\n  {sweep}\n" in result.stdout  # whole, on a line of its own
