"""`memplug report`: compare finished runs in the terminal, as JSON, or as an HTML page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from memplug import compare, diagnosis, fairness
from memplug.errors import MemplugError
from memplug.files import read_json
from memplug.record import Outcome, RunSummary
from memplug.results import RunDir


def _fmt(value: Any) -> str:
    """A number as the report prints it: three decimals for a float."""
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _seconds(value: float | None) -> str:
    """Three significant digits: per-message times are often well under a millisecond."""
    return "-" if value is None else f"{value:.3g}"


def _row_n(summary: RunSummary, category: str) -> int | None:
    """A row's n: its answered questions, whatever scored them (a run from before
    ``answered``: the largest per-metric count). Was always the largest count: LoCoMo-Plus's
    239 questions showed "overall 237", since no one metric scored all of them, and a
    category no metric scores showed no n at all."""
    if summary.answered is not None:
        return summary.answered.get(category, 0)
    counts = summary.n.get(category) if summary.n is not None else {}
    return max(counts.values(), default=None)


def _count(summary: RunSummary, category: str) -> str:
    """A row's n as printed (:func:`_row_n`)."""
    n = _row_n(summary, category)
    return "" if n is None else str(n)


def _fewer(summary: RunSummary, category: str, metric: str) -> str:
    """ " (n=42)" after a mean over fewer questions than the row's n (the answers' metrics where
    the reader could not answer some, which recall still scores), so that every number is
    read over its own count, as the CSV and the HTML page give it; "" otherwise."""
    counts = summary.n.get(category) if summary.n is not None else {}
    n, row = counts.get(metric), _row_n(summary, category)
    return f" (n={n})" if n is not None and row is not None and n < row else ""


def _percentile_text(p: dict[str, float] | None, sep: str = " / ") -> str:
    """p50, p95 and p99 of a stage: on a line, spaces around the slashes (a narrow line wraps
    between two numbers, never inside one); in a table of runs, ``sep`` a line break: one
    number to a line, so a column is as narrow as its widest number, with no lone "/"."""
    return "-" if not p else sep.join(_seconds(p[f"p{q}"]) for q in (50, 95, 99))


def _score(value: Any, interval: list[float] | None, na: str | None, say_na: bool) -> str:
    """A score with its interval, or with "n/a (reason)" where none can be estimated."""
    if value is None:
        return "-"
    text = _fmt(value)
    if interval:
        return f"{text} [{interval[0]:.2f}, {interval[1]:.2f}]"
    return f"{text} n/a ({na})" if na and say_na else text


def _label(index: int, summary: RunSummary, many: bool) -> str:
    return f"#{index} {summary.agent}" if many else summary.agent


def _say(console: Any, text: str) -> None:
    """A line of text, wrapped to the terminal (:meth:`memplug.display.TextConsole.say`)."""
    console.say(text)


def _unfinished(outcome: Outcome) -> str:
    """A run's status beside its header when it did not finish: "INTERRUPTED: 420 of 5000
    questions answered" (an interrupted run's scores are over those only)."""
    return f"{outcome.status.upper()}: {outcome.n_answered} of {outcome.n_expected} questions answered"


def unscored_lines(summary: RunSummary) -> list[str]:
    """Per metric that could not score some of its questions (summary.json's ``unscored``):
    "judge: 4 of 5 questions not scored (unreadable verdict); see memplug.log". Its mean is
    over the others only, which the table's "(n=1)" alone does not explain."""
    return [
        f"{metric}: {u['n']} of {u['of']} questions not scored ({u['reason']}); see memplug.log"
        for metric, u in (summary.unscored or {}).items()
    ]


def empty_store_line(path: Path) -> str | None:
    """Where the agent lists what it stored and every sample's list is empty (a memory
    whose LLM extraction kept nothing, say): "the agent stored nothing in any of its 20
    samples". The scores then rest on an empty memory, which a table of low numbers
    alone does not say."""
    from memplug import stored

    lines = stored.read(path)
    if not lines or any(line.get("total") for line in lines.values()):
        return None
    n = len(lines)
    return (
        f"the agent stored nothing in any of its {n} sample{'' if n == 1 else 's'} (stored.jsonl): "
        "every answer rests on an empty memory; see memplug.log"
    )


def _rows(summary: RunSummary) -> list[tuple[str, dict[str, Any]]]:
    return [("overall", summary.metrics.overall), *summary.metrics.by_category.items()]


def _paired_table(console: Any, metrics: dict[str, dict[str, Any]]) -> Any:
    """The paired comparison of two runs, one row per metric: a table where the terminal holds
    it whole, else a metric per line with its numbers wrapped beside it (never cut)."""
    from rich.measure import Measurement
    from rich.table import Table

    from memplug.cli.tables import table as make_table

    rows = []
    for metric, c in metrics.items():
        test = c["test"] + (f" ({c['a_only']}/{c['b_only']} discordant)" if "a_only" in c else "")
        interval = (
            f"[{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]" if c.get("ci") else f"n/a ({c.get('ci_na') or 'no interval'})"
        )
        p = "n/a" if c.get("p_value") is None else f"{c['p_value']:.3g}"
        rows.append(
            (metric, str(c["n"]), f"{c['mean_a']:.3f}", f"{c['mean_b']:.3f}", f"{c['diff']:+.3f} {interval}", p, test)
        )
    table = make_table(None, "metric", "n", "A", "B", "A - B [95% CI]", "p", "test")
    for row in rows:
        table.add_row(*row)
    if Measurement.get(console, console.options.update_width(1 << 20), table).maximum <= console.width:
        return table
    stacked = Table.grid(padding=(0, 1))
    stacked.add_column(overflow="fold", min_width=max(len(r[0]) for r in rows))
    stacked.add_column(overflow="fold")
    for metric, n, a, b, diff, p, test in rows:
        test = test.replace(" (", ", ").rstrip(")") if "discordant" in test else test
        stacked.add_row(metric, f"n {n}: A {a}, B {b}, A - B {diff}, p {p} ({test})")
    return stacked


def print_tables(
    paths: list[Path], repeats: list[dict[str, Any]] | None = None, pairs: list[dict[str, Any]] | None = None
) -> None:
    """The scores overall and per category, then efficiency and LLM usage, then the protocols
    and the paired comparisons; all readable on an 80-column terminal.

    Run ids and paths are printed whole, on lines of their own; a table with more metrics
    (or runs) than the terminal holds whole is printed as several tables, so that no score,
    interval, name or number is broken or cut. A mean whose interval cannot be estimated
    (its questions come from one sample) prints "n/a (1 sample)"; when no mean of the table
    has an interval the title says so once. ``repeats``: the content of repeats-*.json files,
    each printed as `eval --repeats` prints it. Runs judged by different judges (name, model
    or prompts' sha256) have their judge scores in separate columns, ``judge[<judge>]``
    (:func:`memplug.compare.separate_judges`), and are not paired on them.
    """
    from rich.text import Text

    from memplug.cli.tables import in_blocks
    from memplug.cli.tables import table as make_table
    from memplug.display import console as text_console

    # runs judged by different judges: each judge's numbers in a column of its own (judge[name])
    summaries = compare.separate_judges(paths, [RunDir(p).check().summary() for p in paths])
    console = text_console()  # names and categories from the data are text: "[/]" is not a style tag
    many = len(summaries) > 1
    for k, (path, s) in enumerate(zip(paths, summaries), 1):
        status = "" if s.outcome is None or s.outcome.status == "finished" else f", {_unfinished(s.outcome)}"
        judge = compare.judge_identity(path)
        caveats = "".join(f", {c}" for c in compare.run_caveats(path))  # beside "(official)", what it rests on
        _say(
            console,
            f"{'#' + str(k) + ' ' if many else ''}{s.run_id}: {s.agent} on {s.dataset}, "
            f"protocol {compare.protocol_label(path)}{caveats}"
            f"{', judge ' + compare.judge_text(judge) if judge else ''}{status}",
        )
    level = next((s.ci.level for s in summaries if s.ci is not None and isinstance(s.ci.level, float)), 0.95)
    # one set of tables per dataset and answer protocol: its runs share metrics and categories,
    # and no column holds numbers from two protocols (another prompt, parser, memory unit, depth)
    kinds = [(s.dataset, compare.protocol_label(path)) for path, s in zip(paths, summaries)]
    groups = list(dict.fromkeys(kinds))
    reasons: set[str] = set()
    for dataset, protocol in groups:
        group = [(k, s) for k, (s, kind) in enumerate(zip(summaries, kinds), 1) if kind == (dataset, protocol)]
        metrics = list(dict.fromkeys(m for _, s in group for m in s.metrics.overall))
        if not metrics:  # not a table of empty rows
            for k, s in group:
                _say(console, f"{s.run_id}: no question answered, nothing scored")
            continue
        cells = [(values.get(m), *s.interval(m, cat)) for _, s in group for cat, values in _rows(s) for m in metrics]
        scored = [c for c in cells if c[0] is not None]
        found = {c[2] for c in scored if c[1] is None and c[2]}
        reasons |= found
        # no mean of the table has an interval, for one reason: the title says it once, not every cell
        none_at_all = bool(scored) and all(c[1] is None for c in scored) and len(found) == 1
        where = (f" on {dataset}" if len({d for d, _ in groups}) > 1 else "") + (
            f", protocol {protocol}" if len(groups) > len({d for d, _ in groups}) else ""
        )
        title = f"Scores{where} ({level:.0%} CI{' n/a: ' + next(iter(found)) if none_at_all else ''})"

        def scores_table(
            block: Any, group: list[tuple[int, RunSummary]] = group, title: str = title, none_at_all: bool = none_at_all
        ) -> Any:
            table = make_table(title, *(("run",) if many else ()), "category", "n", *block)
            for k, s in group:
                rows = _rows(s)
                for i, (cat, values) in enumerate(rows):
                    row = [
                        _score(values.get(m), *s.interval(m, cat), say_na=not none_at_all)
                        + (_fewer(s, cat, m) if values.get(m) is not None else "")
                        for m in block
                    ]
                    table.add_row(
                        *([_label(k, s, many) if i == 0 else ""] if many else []),
                        cat,
                        _count(s, cat),
                        *row,
                        end_section=i == len(rows) - 1,
                    )
            return table

        for table in in_blocks(console, metrics, scores_table):
            console.print(table)
    if reasons:
        _say(
            console,
            f"n/a ({', '.join(sorted(reasons))}): no interval can be estimated where all the questions "
            "of a mean come from one sample, since the bootstrap resamples whole samples",
        )
    for s in summaries:
        for category, u in (s.unanswerable or {}).items():
            noun = "question" if u["n"] == 1 else "questions"
            _say(
                console,
                f"{s.run_id}: {category}: {u['n']} {noun} not answered ({u['reason']}); "
                "only what was recalled is scored",
            )
    for s in summaries:
        for note in unscored_lines(s):
            _say(console, f"{s.run_id}: {note}")
    for path in paths:
        if empty := empty_store_line(path):
            _say(console, f"{path.name}: {empty}")
    for s in summaries:  # where the misses lost their evidence (memplug.diagnosis)
        for line in (diagnosis.wrong_line(s.diagnosis), diagnosis.memory_line(s.diagnosis)) if s.diagnosis else ():
            if line:
                _say(console, f"{s.run_id}: {line}")
    quantities = (
        "questions",
        "errors",
        "ingest s/msg",
        "recall s/q",
        "wall s",
        "LLM calls",
        "cache hits",
        "tokens in",
        "tokens out",
        "cost $",
    )
    values = [
        [
            str(s.n_questions),
            str(s.n_errors),
            _seconds(s.efficiency.ingest_s_per_message),
            _seconds(s.efficiency.recall_s_per_question),
            _fmt(s.efficiency.wall_s),
            str(s.llm.calls),
            str(s.llm.cache_hits),
            str(s.llm.prompt_tokens),
            str(s.llm.completion_tokens),
            f"{s.llm.cost_usd:.4f}",
        ]
        for s in summaries
    ]
    latency = [(s.efficiency.latency_s or {}) for s in summaries]
    stages = [stage for stage in ("ingest", "recall", "answer") if any(lat.get(stage) for lat in latency)]
    if not many:  # one run: a paragraph, not a table eleven columns wide
        _say(console, "Efficiency and LLM usage: " + ", ".join(f"{q} {v}" for q, v in zip(quantities, values[0])))
        if stages:
            _say(
                console,
                "Latency s p50/p95/p99: "
                + "; ".join(f"{stage} {_percentile_text(latency[0].get(stage))}" for stage in stages),
            )
    else:
        labels = [*quantities, *(f"{stage} s p50/p95/p99" for stage in stages)]

        def usage_table(block: Any) -> Any:
            usage = make_table("Efficiency and LLM usage", "", *(_label(k, summaries[k - 1], many) for k in block))
            # the labels whole on their line ("p50/p95/p9" over "9" read as another number); the
            # runs that do not fit beside them go to a further table
            usage.columns[0].width = max(map(len, labels))
            usage.columns[0].no_wrap = True
            for row, quantity in enumerate(quantities):
                usage.add_row(quantity, *(values[k - 1][row] for k in block))
            for stage in stages:
                # a Text: a line break in a str is written out as "\n" (memplug.display.visible)
                usage.add_row(
                    f"{stage} s p50/p95/p99", *(Text(_percentile_text(latency[k - 1].get(stage), "\n")) for k in block)
                )
            return usage

        for usage in in_blocks(console, range(1, len(summaries) + 1), usage_table, whole=False):
            console.print(usage)
    # pairs: a sweep's comparisons (within cells of the same data and seed) instead of the first run's
    for comparison in compare.comparisons(paths) if pairs is None else pairs:
        if comparison.get("skipped") or not comparison["metrics"]:
            why = comparison.get("skipped") or "no scored question in common"
            if comparison.get("judges_differ"):
                why += f"; judged by different judges: {comparison['judges_differ']}"
            _say(console, f"not compared: {comparison['a']} and {comparison['b']}: {why}")
            continue
        _say(console, f"Paired comparison: A = {comparison['a']}, B = {comparison['b']}")
        console.print(_paired_table(console, comparison["metrics"]))
        if comparison.get("judges_differ"):
            _say(
                console,
                f"judge not compared: {comparison['a']} and {comparison['b']} were judged by different "
                f"judges: {comparison['judges_differ']}",
            )
    for path in paths:
        for check in RunDir(path).judge_checks():
            _say(
                console,
                f"judge {check['model']} on {path.name}: agreement with exact scoring "
                f"{_fmt(check['agreement'])}, Cohen's kappa {_fmt(check['kappa'])} "
                f"(n={'-' if check['n'] is None else check['n']})",
            )
    if repeats:
        from memplug.cli.tables import print_repeats

        for result in repeats:
            print_repeats(result)


def _is_repeats(path: Path) -> bool:
    return path.is_file() and path.name.startswith("repeats-") and path.suffix == ".json"


def _is_sweep(path: Path) -> bool:
    from memplug.sweep import Sweep

    return Sweep.is_sweep(path)


def _folder_of_runs(path: Path) -> list[Path]:
    """What ``path`` stands for: the runs (``*/run.json``) and repeats-*.json files of a
    folder that is neither a run nor a sweep but holds runs, in name order; else ``path``."""
    if not path.is_dir() or (path / "run.json").exists() or _is_sweep(path):
        return [path]
    held = sorted(p for p in path.iterdir() if (p / "run.json").is_file() or _is_repeats(p))
    return held or [path]


def _runs_and_repeats(args: list[Path]) -> tuple[list[Path], list[dict[str, Any]]]:
    """The run directories to report, and the repeats-*.json files among the arguments.

    `eval --repeats` writes repeats-<id>.json beside its runs, so `memplug report runs/*`
    gets it too: it is read as what it is (its runs are reported, once each, and its mean
    and spread over the seeds printed after them), not refused as a run. A folder of runs
    (``runs``, where `eval` writes by default) stands for what it holds, as
    :func:`memplug.read_runs` reads it: `memplug report runs` is `memplug report runs/*`.
    Any other argument that is not a run directory stops the report, in one line.
    """
    paths: list[Path] = []
    repeats: list[dict[str, Any]] = []
    for arg in [path for given in args for path in _folder_of_runs(given)]:
        if _is_sweep(arg):  # a sweep directory: its finished cells, and a line for the others
            from memplug.sweep import Sweep, expand

            paths.extend(expand(arg))
            left = Sweep(arg).not_finished()
            if left:  # were reported as finished (partial, interrupted) or left out unsaid (failed)
                click.echo(
                    f"memplug: {arg}: {len(left)} cell{'' if len(left) == 1 else 's'} not reported, "
                    f"not finished ({'; '.join(left[:3])}{'; ...' if len(left) > 3 else ''}): "
                    f"memplug sweep --resume {arg}",
                    err=True,
                )
            continue
        if not _is_repeats(arg):
            paths.append(RunDir(arg).check().path)
            continue
        try:
            content = read_json(arg)
            run_ids = [str(r) for r in content["runs"]]
            content["overall"].items()
        except (KeyError, TypeError, AttributeError):
            raise MemplugError(
                f"{arg}: not the summary of an `eval --repeats` (expected 'runs' and 'overall')"
            ) from None
        repeats.append({"path": str(arg), **content})
        for run_id in run_ids:  # its runs, beside it, unless they are among the arguments already
            run_dir = arg.parent / run_id
            if not (run_dir / "run.json").is_file():
                raise MemplugError(f"{arg}: its run {run_id} is not beside it ({run_dir} holds no run.json)")
            paths.append(run_dir)
    unique: dict[Path, Path] = {}
    for path in paths:
        unique.setdefault(path.resolve(), path)
    return list(unique.values()), repeats


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
@click.option(
    "--html",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write a self-contained HTML comparison page with charts.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "latex", "csv"]),
    help="Print the comparison as a table to publish: one per metric, runs as rows, categories "
    "as columns, best per column marked, a footer naming protocol, judge, data hash and version.",
)
@click.option(
    "--ci-style",
    type=click.Choice(["pm", "brackets"]),
    default="pm",
    show_default=True,
    help="With --format: intervals as ± half-width or as [low, high].",
)
@click.option(
    "--why",
    is_flag=True,
    help="Why answers were wrong: per stage that lost the evidence (not stored, "
    "not recalled, misread, unknown) its share and examples with the question, gold answer, evidence, "
    "what was stored and what was recalled (see docs/diagnosis.md).",
)
@click.option("--category", help="With --why: only this category's questions.")
@click.option(
    "--n",
    "n_examples",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="With --why: examples shown per stage.",
)
@click.option(
    "--export",
    type=click.Path(path_type=Path, file_okay=False),
    help="Also write each run's answers in its benchmark's official file, into this folder "
    "(LongMemEval's hypotheses.jsonl, LoCoMo's prediction file; `memplug list --kind exports`).",
)
def report_command(
    runs: tuple[Path, ...],
    as_json: bool,
    html: Path | None,
    fmt: str | None,
    ci_style: str,
    why: bool,
    category: str | None,
    n_examples: int,
    export: Path | None,
) -> None:
    """Compare one or more finished runs.

    \b
    Examples:
      memplug report runs/RUN_A runs/RUN_B
      memplug report runs/* --html report.html
      memplug report runs/RUN_A runs/RUN_B --format latex > table.tex
      memplug report sweeps/SWEEP_DIR
      memplug report --why runs/RUN --category simple --n 5
      memplug report runs/RUN --export official/

    Runs on one dataset that differ in K, context budget, reader, judge or
    protocol are reported with a warning naming each difference (stderr).
    """
    if why:
        from memplug.cli.why import print_why

        others = [
            flag
            for flag, given in (("--json", as_json), ("--html", html), ("--format", fmt), ("--export", export))
            if given
        ]
        if others:  # each was left undone, with exit 0
            raise click.UsageError(f"--why is a view of its own: run {' and '.join(others)} without it")

        for run in runs:
            print_why(RunDir(run).check().path, category, n_examples)
        return
    if category is not None:
        raise click.UsageError("--category goes with --why")
    paths, repeats = _runs_and_repeats(list(runs))
    differ = fairness.differences(paths)
    for line in differ:  # side by side, yet not set alike: say so before any number
        click.echo(f"memplug: warning: runs {line}: their scores differ in more than the system", err=True)
    if export is not None:
        from memplug.exports import export as write_official

        for written in write_official(paths, export):
            click.echo(str(written), err=True)
    if not as_json and html is None and fmt != "csv":
        from memplug.plugins import get_plugins

        # a dataset's own table (MemoryAgentBench's runs: the paper's table), from its plugin
        table = get_plugins().hook.memplug_report_table(paths=paths, fmt=fmt or "terminal")
        if table is not None:
            click.echo(table, nl=False)
            return
    pairs = None
    if any(_is_sweep(r) for r in runs):  # a sweep's cells are paired where they asked the same questions
        from memplug.sweep import sweep_comparisons

        pairs = sweep_comparisons(paths)
    if html is not None:
        from memplug.htmlreport import write_html

        click.echo(str(write_html(paths, html)), err=True)
    if fmt is not None:
        from memplug.publish import tables

        click.echo(tables(paths, fmt, ci_style), nl=False)  # type: ignore[arg-type]
        return
    if as_json:
        out = {
            "runs": [
                {
                    "path": str(p),
                    **RunDir(p).summary().to_json(),
                    "judge": dict(zip(("name", "model", "prompt_sha256"), j))
                    if (j := compare.judge_identity(p))
                    else None,
                }
                for p in paths
            ],
            "paired": compare.comparisons(paths) if pairs is None else pairs,
            "settings_differ": differ,
        }
        if repeats:
            out["repeats"] = repeats
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
    elif html is None:
        print_tables(paths, repeats, pairs)
