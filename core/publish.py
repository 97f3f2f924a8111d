"""Comparison tables ready to paste into a paper, a README or a leaderboard.

``memplug report RUNS... --format markdown|latex|csv``: one table per metric, runs as
rows (labelled by agent, or agent and dataset when the runs span several), the overall
score and each category as columns, the 95% interval beside each mean, the best mean
of each column in bold, and a dagger on a mean that differs from the first run's with
p < 0.05 in the paired test (:mod:`memplug.compare`). A footer names what makes the
table reproducible: the protocol (answer prompt), the judge, the dataset version and
data hash, the memplug version and, when a run had one, the context budget
(``--context-tokens``), so a number never travels without its setting.
Runs scored by different judges (name, model or prompts' sha256) never share a ``judge``
table: each judge's numbers are a metric of their own, ``judge[longmemeval]``,
``judge[memplug]`` (:func:`memplug.compare.separate_judges`).

Names, categories and settings come from data and run files, so each format shows them as
text (:mod:`memplug.display`): a markdown cell escapes ``|`` (it would add a column), LaTeX
escapes its special characters, and no format holds a raw control character.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path
from typing import Literal

from memplug import compare
from memplug.display import markdown, visible
from memplug.errors import MemplugError
from memplug.record import RunInfo, RunSummary
from memplug.results import RunDir

Format = Literal["markdown", "latex", "csv"]
FORMATS: tuple[str, ...] = ("markdown", "latex", "csv")
ALPHA = 0.05
DAGGER = {"markdown": "†", "latex": r"$^\dagger$", "csv": "†"}


def _data_hash(run: RunInfo) -> str:
    """A short digest of the run's --data files (sha256 of their sha256s), or "generated"."""
    hashes = run.data_sha256
    if not hashes:
        return "generated"
    joined = "\n".join(f"{name} {digest}" for name, digest in sorted(hashes.items()))
    return "sha256:" + hashlib.sha256(joined.encode()).hexdigest()[:12]


def _settings(paths: list[Path]) -> list[str]:
    """Footer lines: each setting, once when every run shares it, else per run."""
    rows: dict[str, list[str]] = {}
    for path in paths:
        run = RunDir(path).info()
        versions = run.versions
        judge = run.judge
        judge_text = (
            "none"
            if not judge
            else (
                f"{judge.get('name', 'judge')} {judge.get('model', '')} {judge.get('prompt_sha256', '')[:12]}".strip()
                if isinstance(judge, dict)
                else str(judge)
            )
        )
        dataset = versions.get("dataset") or {}
        for key, value in (
            ("protocol", compare.protocol_label(path)),
            ("reader", run.resolved.get("reader") or "n/a"),
            ("judge", judge_text),
            ("dataset", f"{dataset.get('name', '?')} v{dataset.get('version', '?')}, data {_data_hash(run)}"),
            ("memplug", f"{versions.get('memplug', '?')} (git {str(run.git or 'n/a')[:10]})"),
        ):
            rows.setdefault(key, []).append(value)
    budgets = [RunDir(p).info().context_tokens for p in paths]
    if any(b is not None for b in budgets):  # --context-tokens: what every reader was handed (docs/fairness.md)
        rows["context budget"] = ["none" if b is None else f"{b} tokens" for b in budgets]
    lines = []
    for key, values in rows.items():
        if len(set(values)) == 1:
            lines.append(f"{key}: {values[0]}")
        else:
            lines.append(f"{key}: " + "; ".join(f"{Path(p).name}: {v}" for p, v in zip(paths, values)))
    return lines


def _labels(summaries: list[RunSummary]) -> list[str]:
    datasets = {s.dataset for s in summaries}
    labels = [s.agent if len(datasets) == 1 else f"{s.agent} ({s.dataset})" for s in summaries]
    if len(set(labels)) < len(labels):  # the same agent twice (seeds, options): the run ids tell them apart
        labels = [f"{label} [{s.run_id}]" for label, s in zip(labels, summaries)]
    return labels


#: LaTeX's special characters as text; one pass, so that no escape's own braces are escaped again
_LATEX = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\^{}",
    }
)


def _escape_latex(text: str) -> str:
    """``text`` as LaTeX text: its special characters escaped, control characters written out,
    and a leading "[" braced (after a row's ``\\\\`` it would be read as a length)."""
    text = visible(text).translate(_LATEX)
    return "{}" + text if text.startswith("[") else text


def tables(paths: list[Path], fmt: Format, style: Literal["pm", "brackets"] = "pm") -> str:
    """The comparison tables of ``paths`` in ``fmt``, one per metric, with the footer."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    datasets = {str(RunDir(p).info().dataset) for p in paths}
    if len(datasets) > 1:  # one column per category: factcon's 0.244 was bolded over locomo's 0.083
        raise MemplugError(
            f"these runs cannot share a table: they are on {', '.join(sorted(datasets))}; "
            "give --format the runs of one dataset at a time"
        )
    # runs judged by different judges: each judge's numbers in a table of its own (judge[name])
    summaries = compare.separate_judges(paths, [RunDir(p).check().summary() for p in paths])
    labels = _labels(summaries)
    metrics = list(dict.fromkeys(m for s in summaries for m in s.metrics.overall))
    categories = ["overall", *dict.fromkeys(c for s in summaries for c in s.metrics.by_category)]
    significant: dict[tuple[int, str], bool] = {}
    comparisons = compare.comparisons(paths)
    skipped = [c["skipped"] for c in comparisons if c.get("skipped")]
    if skipped:  # one column, one protocol: a table would put incomparable numbers side by side
        raise MemplugError(f"these runs cannot share a table: {skipped[0]} (see `memplug report` without --format)")
    for i, comparison in enumerate(comparisons, 1):
        for metric, c in comparison["metrics"].items():
            p_value = c.get("p_value")  # None: not estimable (one sample, graded metric)
            significant[i, metric] = p_value is not None and p_value < ALPHA
    out: list[str] = []
    csv_rows: list[list[str]] = [
        ["metric", "run", "category", "mean", "ci_low", "ci_high", "n", "best", "differs_from_first"]
    ]
    for metric in metrics:
        grid: list[list[tuple[float, list[float] | None] | None]] = []
        for s in summaries:
            row = []
            for cat in categories:
                value = s.metrics.get(cat).get(metric)
                ci = s.ci.get(cat).get(metric) if s.ci is not None else None
                row.append(None if value is None else (float(value), ci if isinstance(ci, list) else None))
            grid.append(row)
        best = [
            max((cell[0] for r in grid if (cell := r[j]) is not None), default=None) for j in range(len(categories))
        ]
        for i, (label, row) in enumerate(zip(labels, grid)):
            for j, cell in enumerate(row):
                if cell is None:
                    continue
                ci = cell[1]
                csv_rows.append(
                    [
                        visible(metric),
                        visible(label),
                        visible(categories[j]),
                        f"{cell[0]:.4f}",
                        "" if ci is None else f"{ci[0]:.4f}",
                        "" if ci is None else f"{ci[1]:.4f}",
                        str(_n(summaries[i], categories[j], metric)),
                        str(cell[0] == best[j]).lower(),
                        str(significant.get((i, metric), False) and j == 0).lower(),
                    ]
                )
        if fmt != "csv":
            out.append(_render(fmt, metric, labels, categories, grid, best, significant, style))
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerows(csv_rows)
        for line in _settings(paths):  # as they are, not as a quoted field: readers skip "#" lines,
            buffer.write(f"# {visible(line)}\n")  # not '"# dataset: locomo v1.0, data ...' (pandas' comment="#")
        return buffer.getvalue()
    footer = _settings(paths)
    shown = "mean [95% CI]" if style == "brackets" else "mean ± half the width of its 95% CI"
    note = (
        f"Each cell: {shown}; the best mean of each column in bold; † overall mean differs from the "
        f"first row's with p < {ALPHA} (paired test on the questions both answered)."
    )
    if any(row[3] and not row[4] for row in csv_rows[1:]):  # a mean without its interval
        note += (
            " A mean shown alone has no interval: n/a (1 sample), all its questions come from one sample, "
            "and the bootstrap resamples whole samples."
        )
    if fmt == "markdown":
        return "\n\n".join(out) + "\n\n" + note + "\n" + "".join(f"\n- {markdown(line)}" for line in footer) + "\n"
    return "\n\n".join(out) + "\n% " + note + "\n" + "".join(f"% {visible(line)}\n" for line in footer)


def _n(summary: RunSummary, category: str, metric: str) -> int | str:
    return summary.n.get(category).get(metric, "") if summary.n is not None else ""


def _cell(fmt: str, cell: tuple[float, list[float] | None] | None, best: float | None, dagger: bool, style: str) -> str:
    if cell is None:
        return "–"
    mean, ci = cell
    if ci is None:
        text = f"{mean:.3f}"
    elif style == "brackets":
        text = f"{mean:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
    else:
        half = (ci[1] - ci[0]) / 2
        text = f"{mean:.3f} $\\pm$ {half:.3f}" if fmt == "latex" else f"{mean:.3f} ± {half:.3f}"
    if dagger:
        text += DAGGER[fmt]
    if best is not None and mean == best:
        text = f"\\textbf{{{text}}}" if fmt == "latex" else f"**{text}**"
    return text


def _render(
    fmt: str,
    metric: str,
    labels: list[str],
    categories: list[str],
    grid: list[list[tuple[float, list[float] | None] | None]],
    best: list[float | None],
    significant: dict[tuple[int, str], bool],
    style: str,
) -> str:
    rows = [
        [
            label,
            *(
                _cell(fmt, cell, best[j], j == 0 and significant.get((i, metric), False), style)
                for j, cell in enumerate(row)
            ),
        ]
        for i, (label, row) in enumerate(zip(labels, grid))
    ]
    if fmt == "markdown":
        lines = [
            "| " + " | ".join(markdown(h) for h in [metric, *categories]) + " |",
            "| " + " | ".join(["---"] + ["---:"] * len(categories)) + " |",
        ]
        lines += ["| " + " | ".join([markdown(r[0]), *r[1:]]) + " |" for r in rows]
        return "\n".join(lines)
    head = " & ".join(_escape_latex(h) for h in [metric, *categories])
    body = "\n".join(" & ".join([_escape_latex(r[0]), *r[1:]]) + r" \\" for r in rows)
    return (
        "\\begin{tabular}{l"
        + "r" * len(categories)
        + "}\n\\toprule\n"
        + head
        + " \\\\\n\\midrule\n"
        + body
        + "\n\\bottomrule\n\\end{tabular}"
    )
