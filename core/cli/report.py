"""`memplug report`: compare finished runs in the terminal, as JSON, or as an HTML page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from memplug import compare
from memplug.errors import MemplugError
from memplug.results import RunDir


def _fmt(value: Any, ci: list[float] | None = None, one_sample: bool = False) -> str:
    """A score with its interval; "n/a (1 sample)" where none can be estimated."""
    if value is None:
        return "-"
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    if ci:
        return f"{text} [{ci[0]:.2f}, {ci[1]:.2f}]"
    return f"{text} (n/a)" if one_sample else text


def _seconds(value: float | None) -> str:
    """Three significant digits: per-message times are often well under a millisecond."""
    return "-" if value is None else f"{value:.3g}"


def _count(summary: dict[str, Any], category: str) -> str:
    """Questions scored in a row: the largest per-metric count."""
    counts = summary.get("n", {})
    block = counts.get("overall") if category == "overall" else counts.get("by_category", {}).get(category)
    return str(max((block or {}).values(), default=""))


def _percentile_text(p: dict[str, float] | None) -> str:
    return "-" if not p else "/".join(_seconds(p[f"p{q}"]) for q in (50, 95, 99))


def _interval_blocks(summary: dict[str, Any]) -> list[dict[str, Any]]:
    ci = summary.get("ci") or {}
    return [ci.get("overall") or {}, *(ci.get("by_category") or {}).values()]


def _label(index: int, summary: dict[str, Any], many: bool) -> str:
    return f"#{index} {summary['agent']}" if many else summary["agent"]


def print_tables(paths: list[Path]) -> None:
    """The scores overall and per category, then efficiency and LLM usage, then the protocols
    and the paired comparisons; all readable on an 80-column terminal (cells wrap, run ids
    are printed whole on lines of their own)."""
    from rich.console import Console

    from memplug.cli.tables import table as make_table

    summaries = [RunDir(p).check().summary() for p in paths]
    console = Console()
    many = len(summaries) > 1
    for k, (path, s) in enumerate(zip(paths, summaries), 1):
        status = "" if s.get("status", "finished") == "finished" else f", {s['status'].upper()}"
        console.print(f"{'#' + str(k) + ' ' if many else ''}{s['run_id']}: {s['agent']} on {s['dataset']}, "
                      f"protocol {compare.protocol_label(path)}{status}", soft_wrap=False, highlight=False, markup=False)
    metrics = list(dict.fromkeys(m for s in summaries for m in s["metrics"]["overall"]))
    columns = ("run", "category", "n", *metrics) if many else ("category", "n", *metrics)
    table = make_table("Scores (95% CI)", *columns)
    for k, s in enumerate(summaries, 1):
        ci = s.get("ci", {})
        rows = [("overall", s["metrics"]["overall"], ci.get("overall", {}))]
        rows += [(c, m, ci.get("by_category", {}).get(c, {})) for c, m in s["metrics"]["by_category"].items()]
        for i, (cat, values, cis) in enumerate(rows):
            cells = [cat, _count(s, cat), *(_fmt(values.get(m), (cis or {}).get(m), m in (cis or {}))
                                             for m in metrics)]
            table.add_row(*([_label(k, s, many) if i == 0 else ""] if many else []), *cells,
                          end_section=i == len(rows) - 1)
    console.print(table)
    if any(v is None for s in summaries for block in _interval_blocks(s) for v in block.values()):
        console.print("(n/a): no interval, since all the questions of that mean come from one sample "
                      "(the bootstrap resamples samples)", soft_wrap=False, highlight=False, markup=False)
    for s in summaries:
        for category, u in (s.get("unanswerable") or {}).items():
            noun = "question" if u["n"] == 1 else "questions"
            console.print(f"{s['run_id']}: {category}: {u['n']} {noun} not answered ({u['reason']}); "
                          "only what was recalled is scored", soft_wrap=False, highlight=False, markup=False)
    quantities = ("questions", "errors", "ingest s/msg", "recall s/q", "wall s", "LLM calls", "cache hits",
                  "tokens in", "tokens out", "cost $")
    values = [[str(s["n_questions"]), str(s["n_errors"]), _seconds(s["efficiency"].get("ingest_s_per_message")),
               _seconds(s["efficiency"].get("recall_s_per_question")), _fmt(s["efficiency"].get("wall_s")),
               str(s["llm"]["calls"]), str(s["llm"]["cache_hits"]), str(s["llm"]["prompt_tokens"]),
               str(s["llm"]["completion_tokens"]), f"{s['llm']['cost_usd']:.4f}"] for s in summaries]
    latency = [(s["efficiency"].get("latency_s") or {}) for s in summaries]
    stages = [stage for stage in ("ingest", "recall", "answer") if any(lat.get(stage) for lat in latency)]
    if not many:  # one run: a paragraph, not a table eleven columns wide
        console.print("Efficiency and LLM usage: " + ", ".join(f"{q} {v}" for q, v in zip(quantities, values[0])),
                      soft_wrap=False, highlight=False, markup=False)
        if stages:
            console.print("Latency s p50/p95/p99: " + "; ".join(
                f"{stage} {_percentile_text(latency[0].get(stage))}" for stage in stages),
                soft_wrap=False, highlight=False, markup=False)
    else:
        usage = make_table("Efficiency and LLM usage", "", *(_label(k, s, many) for k, s in enumerate(summaries, 1)))
        for row, quantity in enumerate(quantities):
            usage.add_row(quantity, *(v[row] for v in values))
        for stage in stages:
            usage.add_row(f"{stage} s p50/p95/p99", *(_percentile_text(lat.get(stage)) for lat in latency))
        console.print(usage)
    for comparison in compare.comparisons(paths):
        if comparison.get("skipped") or not comparison["metrics"]:
            why = comparison.get("skipped") or "no scored question in common"
            console.print(f"not compared: {comparison['a']} and {comparison['b']}: {why}",
                          soft_wrap=False, highlight=False, markup=False)
            continue
        console.print(f"Paired comparison: A = {comparison['a']}, B = {comparison['b']}", soft_wrap=False,
                      highlight=False)
        pairs = make_table(None, "metric", "n", "A", "B", "A - B [95% CI]", "p", "test")
        for metric, c in comparison["metrics"].items():
            test = c["test"] + (f" ({c['a_only']}/{c['b_only']} discordant)" if "a_only" in c else "")
            pairs.add_row(metric, str(c["n"]), f"{c['mean_a']:.3f}", f"{c['mean_b']:.3f}",
                          f"{c['diff']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]", f"{c['p_value']:.3g}", test)
        console.print(pairs)
    for path in paths:
        for check in RunDir(path).judge_checks():
            console.print(f"judge {check['model']} on {path.name}: agreement with exact scoring "
                          f"{_fmt(check['agreement'])}, Cohen's kappa {_fmt(check['kappa'])} "
                          f"(n={'-' if check['n'] is None else check['n']})", soft_wrap=False, highlight=False, markup=False)


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
@click.option("--html", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a self-contained HTML comparison page with charts.")
@click.option("--format", "fmt", type=click.Choice(["markdown", "latex", "csv"]),
              help="Print the comparison as a table to publish: one per metric, runs as rows, categories "
              "as columns, best per column marked, a footer naming protocol, judge, data hash and version.")
@click.option("--ci-style", type=click.Choice(["pm", "brackets"]), default="pm", show_default=True,
              help="With --format: intervals as ± half-width or as [low, high].")
def report_command(runs: tuple[Path, ...], as_json: bool, html: Path | None, fmt: str | None,
                   ci_style: str) -> None:
    """Compare one or more finished runs.

    \b
    Examples:
      memplug report runs/RUN_A runs/RUN_B
      memplug report runs/* --html report.html
      memplug report runs/RUN_A runs/RUN_B --format latex > table.tex
    """
    # `memplug report runs/*` also matches the repeats-<id>.json that `eval --repeats` writes
    # beside its runs: its runs are in the glob already, so it is skipped, and said so
    repeats = [p for p in runs if p.is_file() and p.name.startswith("repeats-") and p.suffix == ".json"]
    for p in repeats:
        click.echo(f"memplug: {p} is the summary of an `eval --repeats`, not a run: skipped (its runs are "
                   "reported on their own)", err=True)
    paths = [RunDir(p).check().path for p in runs if p not in repeats]
    if not paths:
        raise MemplugError("no run directories among the arguments")
    if html is not None:
        from memplug.htmlreport import write_html

        click.echo(str(write_html(paths, html)), err=True)
    if fmt is not None:
        from memplug.publish import tables

        click.echo(tables(paths, fmt, ci_style), nl=False)  # type: ignore[arg-type]
        return
    if as_json:
        out = {"runs": [{"path": str(p), **RunDir(p).summary()} for p in paths],
               "paired": compare.comparisons(paths)}
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
    elif html is None:
        print_tables(paths)
