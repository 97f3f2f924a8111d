"""MemoryAgentBench's main table: runs grouped by competency (AR, TTL, LRU, CR).

The paper's Table 2 puts each agent on a row and each source in a column, the columns
grouped under the four competencies, each cell the source's own metric. ``memplug report``
prints this table (terminal, markdown or LaTeX) when every run it is given is a ``mab``
run and they cover more than one source; runs of one source are compared as any runs are.

A run's source and competency are read from its first record (``question_meta``), its
metric is the first of ``resolved.metrics`` (the source's headline: ``judge`` only when
the run was judged), and its row is the agent, reader and model that answered.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any, Literal

import attrs

from memplug.datasets.mab.sources import COMPETENCIES, SOURCES
from memplug.errors import MemplugError
from memplug.results import RunDir


@attrs.frozen
class Cell:
    """One run's headline score for its source."""

    row: str
    source: str
    competency: str
    metric: str
    value: float | None
    n: int


def is_mab_run(path: Path) -> bool:
    """Whether ``path`` is a finished run of the ``mab`` dataset."""
    summary = Path(path) / "summary.json"
    return summary.is_file() and json.loads(summary.read_text(encoding="utf-8")).get("dataset") == "mab"


def _first_meta(path: Path) -> dict[str, Any]:
    with (Path(path) / "samples.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                return dict(json.loads(line).get("question_meta") or {})
    raise MemplugError(f"{path}: the run has no records")


def cell_of(path: Path) -> Cell:
    """The headline score of one ``mab`` run."""
    run = RunDir(path).check()
    stored, summary = run.info(), run.summary()
    meta = _first_meta(path)
    metric = next(m for m in stored.metrics or summary.metrics.overall)
    model = stored.llm
    row = f"{summary.agent} ({stored.reader}{', ' + model if model else ''})"
    value = summary.metrics.overall.get(metric)
    n = summary.n.get("overall").get(metric, summary.n_questions) if summary.n is not None else summary.n_questions
    return Cell(
        row,
        str(meta.get("source")),
        str(meta.get("competency")),
        metric,
        None if value is None else float(value),
        int(n),
    )


def cells(paths: list[Path]) -> list[Cell]:
    """Every run's cell; two runs for the same row and source are refused (which would it show?)."""
    out = [cell_of(p) for p in paths]
    seen: dict[tuple[str, str], Path] = {}
    for path, c in zip(paths, out):
        if (c.row, c.source) in seen:
            raise MemplugError(
                f"{seen[c.row, c.source]} and {path} are both {c.row} on {c.source}: "
                "report one run per agent and source"
            )
        seen[c.row, c.source] = path
    return out


def columns(found: list[Cell]) -> list[tuple[str, list[tuple[str, str]]]]:
    """(competency, [(source, metric), ...]) in the paper's order, sources in the release's."""
    order = {name: i for i, name in enumerate(SOURCES)}
    out = []
    for comp in COMPETENCIES:
        sources = {c.source: c.metric for c in found if c.competency == comp}
        if sources:
            out.append((comp, sorted(sources.items(), key=lambda s: (order.get(s[0], len(order)), s[0]))))
    return out


def grid(paths: list[Path]) -> tuple[list[str], list[tuple[str, list[tuple[str, str]]]], dict[tuple[str, str], Cell]]:
    """Rows, grouped columns and the cells by (row, source)."""
    found = cells(paths)
    rows = list(dict.fromkeys(c.row for c in found))
    return rows, columns(found), {(c.row, c.source): c for c in found}


def _score(cell: Cell | None) -> str:
    return "–" if cell is None or cell.value is None else f"{100 * cell.value:.1f}"


def _average(row: str, sources: list[tuple[str, str]], by: dict[tuple[str, str], Cell]) -> str:
    values = [c.value for s, _ in sources if (c := by.get((row, s))) is not None and c.value is not None]
    return f"{100 * sum(values) / len(values):.1f}" if values else "–"


def render(paths: list[Path], fmt: Literal["terminal", "markdown", "latex", "html"] = "markdown") -> str:
    """The table in ``fmt`` (scores ×100; each competency ends with the mean of its sources)."""
    rows, groups, by = grid(paths)
    body = []
    for row in rows:
        line = [row]
        for _comp, sources in groups:
            line += [_score(by.get((row, s))) for s, _ in sources] + [_average(row, sources, by)]
        body.append(line)
    sub = ["agent"] + [h for _comp, sources in groups for h in [f"{s} ({m})" for s, m in sources] + ["avg"]]
    spans = [(comp, len(sources) + 1) for comp, sources in groups]
    note = "Scores ×100, each source's own metric (MemoryAgentBench's); avg: the mean of a competency's sources."
    if fmt == "latex":
        esc = str.maketrans({"_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "*": r"$^*$"})
        lines = [
            r"\begin{tabular}{l" + "r" * (len(sub) - 1) + "}",
            r"\toprule",
            " & ".join(["", *(rf"\multicolumn{{{n}}}{{c}}{{{c}}}" for c, n in spans)]) + r" \\",
            " & ".join(h.translate(esc) for h in sub) + r" \\",
            r"\midrule",
        ]
        lines += [" & ".join(cell.translate(esc) for cell in line) + r" \\" for line in body]
        return "\n".join([*lines, r"\bottomrule", r"\end{tabular}", f"% {note}"]) + "\n"
    if fmt == "html":
        top = "".join(f'<th colspan="{n}">{escape(c)}</th>' for c, n in spans)
        heads = "".join(f'<th class="num">{escape(h)}</th>' for h in sub[1:])
        trs = "".join(
            "<tr>"
            + f'<td class="label">{escape(line[0])}</td>'
            + "".join(f'<td class="num">{escape(v)}</td>' for v in line[1:])
            + "</tr>"
            for line in body
        )
        return (
            f'<table class="runs competencies"><thead><tr><th></th>{top}</tr><tr><th>agent</th>{heads}</tr>'
            f'</thead><tbody>{trs}</tbody></table><p class="muted">{escape(note)}</p>'
        )
    if fmt == "markdown":
        top = "| | " + " | ".join(" | ".join([c] + [""] * (n - 1)) for c, n in spans) + " |"
        lines = [top, "|" + "---|" * len(sub), "| " + " | ".join(sub) + " |"]
        lines += ["| " + " | ".join(line) + " |" for line in body]
        return "\n".join(lines) + f"\n\n{note}\n"
    from rich.console import Console
    from rich.table import Table

    table = Table(title="MemoryAgentBench by competency", caption=note)
    table.add_column("agent")
    for comp, sources in groups:
        for s, m in sources:
            table.add_column(f"{comp}\n{s}\n{m}", justify="right")
        table.add_column(f"{comp}\navg", justify="right", style="bold")
    for line in body:
        table.add_row(*line)
    console = Console(width=max(100, 14 * len(sub)), record=True)
    with console.capture() as captured:
        console.print(table)
    return captured.get()


def applies(paths: list[Path]) -> bool:
    """Whether ``memplug report`` shows this table: every run a ``mab`` run, more than one source."""
    return (
        len(paths) > 1 and all(is_mab_run(p) for p in paths) and len({_first_meta(p).get("source") for p in paths}) > 1
    )
