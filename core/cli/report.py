"""`memplug report`: compare finished runs in the terminal, as JSON, or as an HTML page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from memplug import compare
from memplug.results import RunDir


def _fmt(value: Any, ci: list[float] | None = None) -> str:
    if value is None:
        return "-"
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    return f"{text} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else text


def _seconds(value: float | None) -> str:
    """Three significant digits: per-message times are often well under a millisecond."""
    return "-" if value is None else f"{value:.3g}"


def _count(summary: dict[str, Any], category: str) -> str:
    """Questions scored in a row: the largest per-metric count."""
    counts = summary.get("n", {})
    block = counts.get("overall") if category == "overall" else counts.get("by_category", {}).get(category)
    return str(max((block or {}).values(), default=""))


def print_tables(paths: list[Path]) -> None:
    """One table of overall and per-category metrics, then efficiency and LLM usage."""
    from rich.console import Console
    from rich.table import Table

    summaries = [RunDir(p).check().summary() for p in paths]
    console = Console()
    metrics = list(dict.fromkeys(m for s in summaries for m in s["metrics"]["overall"]))
    table = Table(title="Scores (95% CI)", title_justify="left")
    for col in ("run", "agent", "dataset", "category", "n", *metrics):
        table.add_column(col)
    for path, s in zip(paths, summaries):
        rows = [("overall", s["metrics"]["overall"], s.get("ci", {}).get("overall", {}))]
        rows += [(c, m, s.get("ci", {}).get("by_category", {}).get(c, {}))
                 for c, m in s["metrics"]["by_category"].items()]
        for i, (cat, values, cis) in enumerate(rows):
            n = _count(s, cat)
            table.add_row(s["run_id"] if i == 0 else "", s["agent"] if i == 0 else "", s["dataset"] if i == 0 else "",
                          cat, n, *(_fmt(values.get(m), cis.get(m)) for m in metrics),
                          end_section=i == len(rows) - 1)
    console.print(table)
    for s in summaries:
        for category, u in (s.get("unanswerable") or {}).items():
            console.print(f"{s['run_id']}: {category}: {u['n']} questions not answered ({u['reason']}); "
                          "only what was recalled is scored", soft_wrap=False)
    usage = Table(title="Efficiency and LLM usage", title_justify="left")
    for col in ("run", "questions", "errors", "ingest s/msg", "recall s/q", "wall s", "LLM calls",
                "cache hits", "tokens in", "tokens out", "cost $"):
        usage.add_column(col)
    for s in summaries:
        e, u = s["efficiency"], s["llm"]
        usage.add_row(s["run_id"], str(s["n_questions"]), str(s["n_errors"]),
                      _seconds(e.get("ingest_s_per_message")), _seconds(e.get("recall_s_per_question")),
                      _fmt(e.get("wall_s")), str(u["calls"]), str(u["cache_hits"]), str(u["prompt_tokens"]),
                      str(u["completion_tokens"]), f"{u['cost_usd']:.4f}")
    console.print(usage)
    for path, s in zip(paths, summaries):
        console.print(f"{s['run_id']}: protocol {compare.protocol_label(path)}", soft_wrap=False)
    for comparison in compare.comparisons(paths):
        if comparison.get("skipped"):
            console.print(f"not compared: {comparison['a']} and {comparison['b']}: {comparison['skipped']}",
                          soft_wrap=False)
            continue
        pairs = Table(title=f"Paired comparison: A = {comparison['a']} vs B = {comparison['b']}",
                      title_justify="left")
        for col in ("metric", "n", "A", "B", "A - B [95% CI]", "p", "test"):
            pairs.add_column(col)
        for metric, c in comparison["metrics"].items():
            test = c["test"] + (f" ({c['a_only']}/{c['b_only']} discordant)" if "a_only" in c else "")
            pairs.add_row(metric, str(c["n"]), f"{c['mean_a']:.3f}", f"{c['mean_b']:.3f}",
                          f"{c['diff']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]", f"{c['p_value']:.3g}", test)
        console.print(pairs)
    for path in paths:
        for check in RunDir(path).judge_checks():
            console.print(f"judge {check['model']} on {path.name}: agreement with exact scoring "
                          f"{_fmt(check['agreement'])}, Cohen's kappa {_fmt(check['kappa'])} "
                          f"(n={'-' if check['n'] is None else check['n']})")


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False))
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
    paths = [RunDir(p).check().path for p in runs]
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
