"""`memplug report RUN... --html FILE`: one self-contained page that compares runs.

People compare memory systems by looking, so the page holds what a reader of the
seed papers looks for: the runs side by side (metrics overall and by category, with
their bootstrap intervals, the number of questions behind each score, cost, errors
and any judge check), repeats of one spec as mean and spread, the first run against
each other run on its dataset question by question (memplug.compare, the same
numbers `memplug report` prints), one bar chart per metric shaped like MemSim's
Tables 6 and 7, an efficiency chart (MemSim's adaptation and response time), the
headline metric against cost, every question a run got wrong with what it recalled,
and the versions and options that produced each run.

The file opens without a network: CSS and JS are inline and the charts are inline
SVG drawn by matplotlib (text kept as text, so the page stays small and searchable).
User text is escaped by Jinja2's autoescaping, never by hand; its control characters are
written out (:func:`memplug.display.visible`) by the environment's ``finalize``, and in the
charts where each text is drawn, whose text is never read as mathtext (``$x$``).
"""

from __future__ import annotations

import io
import json
import math
import re
import textwrap
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import attrs
import jinja2
from markupsafe import Markup

import memplug
from memplug import compare, stats
from memplug import stored as stored_file

# the metric a run is judged by, on the page as in each question's diagnosis
from memplug.diagnosis import headline_metric
from memplug.display import visible
from memplug.errors import MemplugError
from memplug.record import QuestionRecord, RunInfo, RunSummary
from memplug.results import RunDir
from memplug.text import clip

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

#: Wrong answers listed per run; the rest stay in samples.jsonl (the page must stay openable).
MAX_WRONG_PER_RUN = 500
#: Recalled items listed per wrong answer (the first RECALLED_OPEN visible, the rest folded),
#: and characters per item: a `full` agent recalls the whole history.
MAX_RECALLED_SHOWN = 20
RECALLED_OPEN = 5
MAX_RECALLED_CHARS = 600
#: What the agent stored (stored.jsonl), per sample with a wrong answer listed: items
#: and characters per item; the page holds each sample's list once.
MAX_STORED_SHOWN = 50
MAX_STORED_CHARS = 300
#: Spec fields with their own column, and the one that differs between every run.
OWN_COLUMNS = frozenset({"agent", "dataset"})

_TEMPLATE = "report.html"
_OVERALL = "overall"


@attrs.frozen
class LoadedRun:
    """One run directory as the page needs it."""

    path: Path
    run: RunInfo  # run.json
    summary: RunSummary  # summary.json
    records: list[QuestionRecord]  # samples.jsonl, a torn last line left out
    judge_checks: list[dict[str, Any]] = attrs.field(factory=list)  # judge-check.json, one entry per judge
    stored: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # stored.jsonl by sample id
    label: str = ""

    @property
    def run_id(self) -> str:
        return str(self.run.run_id or self.summary.run_id or self.path.name)

    @property
    def agent(self) -> str:
        return str(self.summary.agent or self.run.agent or "?")

    @property
    def dataset(self) -> str:
        return str(self.summary.dataset or self.run.dataset or "?")

    @property
    def metrics(self) -> list[str]:
        """Metric names in the dataset's declared order (run.json), then any others the summary has."""
        overall = self.summary.metrics.overall
        declared = [m for m in self.run.metrics if m in overall]
        return declared + [m for m in overall if m not in declared]

    @property
    def headline(self) -> str | None:
        return headline_metric(self.metrics)

    def overall(self, metric: str) -> float | None:
        return self.summary.metrics.overall.get(metric)

    def by_category(self, category: str, metric: str) -> float | None:
        return self.summary.metrics.get(category).get(metric)

    def count(self, metric: str, category: str | None = None) -> int | None:
        """Questions behind a score (summary.json's "n"): errors and questions the metric does not apply to are out."""
        return self.summary.n.get(category).get(metric) if self.summary.n is not None else None

    def interval(self, metric: str, category: str | None = None) -> list[float] | None:
        """[low, high] from summary.json's "ci" when the run has intervals, else None."""
        return self.summary.interval(metric, category)[0]

    def interval_na(self, metric: str, category: str | None = None) -> str | None:
        """Why a score has no interval ("1 sample", from summary.json's ci.na), or None when it has one
        or the run recorded no intervals at all."""
        return self.summary.interval(metric, category)[1]

    @property
    def categories(self) -> list[str]:
        return list(self.summary.metrics.by_category)


def load_run(path: Path) -> LoadedRun:
    """Read run.json, summary.json and samples.jsonl of one run directory."""
    rd = RunDir(Path(path)).check()
    return LoadedRun(
        path=rd.path,
        run=rd.info(),
        summary=rd.summary(),
        records=rd.records(),
        judge_checks=rd.judge_checks(),
        stored=stored_file.read(rd.path),
    )


def _flat_spec(run: LoadedRun) -> dict[str, Any]:
    """run.json's spec with agent/dataset options as `agent_options.key` entries."""
    flat: dict[str, Any] = {}
    for key, value in run.run.spec.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def differing_options(runs: Sequence[LoadedRun]) -> list[str]:
    """Spec keys whose value is not the same in every run (a key a run lacks counts as differing)."""
    specs = [_flat_spec(r) for r in runs]
    keys = list(dict.fromkeys(k for s in specs for k in s if k not in OWN_COLUMNS))
    missing = object()
    return [k for k in keys if len({json.dumps(s.get(k, missing), default=str, sort_keys=True) for s in specs}) > 1]


def _with_options(run: LoadedRun, option_keys: Sequence[str]) -> str:
    """The agent's name and the run's values of `option_keys`: "bm25 (top_k=10)"."""
    spec = _flat_spec(run)
    parts = [f"{k.split('.')[-1]}={spec[k]}" for k in option_keys if k in spec]
    return f"{run.agent} ({', '.join(parts)})" if parts else run.agent


def _labelled(runs: list[LoadedRun], option_keys: Sequence[str]) -> list[LoadedRun]:
    """Name each run by its agent, adding the options that tell runs of one agent apart."""
    per_agent = Counter(r.agent for r in runs)
    labels = [_with_options(r, option_keys) if per_agent[r.agent] > 1 else r.agent for r in runs]
    counts = Counter(labels)
    if any(n > 1 for n in counts.values()):  # still ambiguous: the run id always tells them apart
        labels = [f"{lab} [{r.run_id}]" if counts[lab] > 1 else lab for lab, r in zip(labels, runs)]
    return [attrs.evolve(r, label=lab) for r, lab in zip(runs, labels)]


def is_wrong(record: QuestionRecord, headline: str | None) -> bool:
    """An error, or a headline score below 1 (a metric that does not apply, None, is not wrong)."""
    if record.error:
        return True
    score = record.scores.get(headline) if headline else None
    return score is not None and score < 1


def _wrong_rows(run: LoadedRun) -> list[dict[str, Any]]:
    rows = []
    headline = run.headline
    for rec in run.records:
        if not is_wrong(rec, headline):
            continue
        recalled = rec.recalled
        rows.append(
            {
                "sample_id": str(rec.sample_id),
                "targets": [str(t) for t in rec.targets],
                "category": rec.category or "(none)",
                "question_id": rec.question_id,
                "question": rec.question,
                "gold": rec.gold,
                "choices": rec.choices or {},
                "correct_choice": rec.correct_choice,
                "prediction": rec.prediction,
                "score": rec.scores.get(headline) if headline else None,
                "error": rec.error,
                # where the answer was lost (memplug.diagnosis); None: an error, or a run from before diagnoses
                "stage": rec.diagnosis.stage if rec.diagnosis is not None else None,
                "recalled": [
                    {
                        "text": clip(str(item.text), MAX_RECALLED_CHARS),
                        "score": item.score,
                        "message_ids": list(item.message_ids),
                        "target": bool(set(item.message_ids) & set(rec.targets)),
                    }
                    for item in recalled[:MAX_RECALLED_SHOWN]
                ],
                "recalled_more": max(0, len(recalled) - MAX_RECALLED_SHOWN),
            }
        )
    return rows


def _stored_lists(run: LoadedRun, rows: list[dict[str, Any]], n_run: int) -> list[dict[str, Any]]:
    """What the agent stored for each sample of ``rows`` (stored.jsonl), once per sample; each
    row gets ``stored`` = its sample's list (id, total) or None when the run recorded none."""
    lists: dict[str, dict[str, Any]] = {}
    for row in rows:
        line = run.stored.get(row["sample_id"])
        if line is None:
            row["stored"] = None
            continue
        if row["sample_id"] not in lists:
            items = line.get("items") or []
            lists[row["sample_id"]] = {
                "id": f"stored-{n_run}-{len(lists)}",
                "total": int(line.get("total") or len(items)),
                "items": [
                    {
                        "text": clip(str(i.get("text", "")), MAX_STORED_CHARS),
                        "id": i.get("id"),
                        "message_ids": [str(m) for m in i.get("message_ids") or []],
                    }
                    for i in items[:MAX_STORED_SHOWN]
                ],
                "in_file": len(items),
            }
        row["stored"] = lists[row["sample_id"]]
        # did the system keep the evidence at all? items (of those in the file) holding a target
        targets = set(row["targets"])
        row["stored_hits"] = (
            sum(1 for i in line.get("items") or [] if targets & set(map(str, i.get("message_ids") or [])))
            if targets
            else None
        )
    return list(lists.values())


# -- numbers as text -----------------------------------------------------------
def fmt_score(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def fmt_seconds(value: float | None) -> str:
    """Seconds at a scale a reader takes in at a glance (µs for a dict lookup, s for an LLM)."""
    if value is None:
        return "—"
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def fmt_cost(value: float | None) -> str:
    if value is None:
        return "—"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def fmt_signed(value: float | None) -> str:
    """A difference, its sign always shown: +0.125, -0.167."""
    return "—" if value is None else f"{value:+.3f}"


def fmt_p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def fmt_value(value: Any) -> str:
    if value is None:
        return "—"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


_SEPARATOR = re.compile(r"([_@/\[.])")


def fmt_breakable(value: Any) -> Markup:
    """A name that may wrap after each of its separators (``_ @ / [ .``), as a column head:
    the column is then as wide as the name's longest part, not the whole name. LoCoMo's
    runs table (``locomo_f1_no_adv``, ``session_hit@5``, ...) was wider than a 1280-pixel
    window and scrolled."""
    shown = str(Markup.escape(visible(str(value), layout=True)))
    return Markup(_SEPARATOR.sub(r"\1<wbr>", shown))


# -- charts --------------------------------------------------------------------
_TAG = re.compile(r"<[^>]+>")
_ID_ATTR = re.compile(r'\bid="([^"]+)"')
_ID_REF = re.compile(r'(url\(#|href="#)([^)"]+)')
_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # text stays text: small files, crisp and searchable in the browser
    "svg.hashsalt": "memplug",  # stable clip-path ids: the same runs give the same page
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "legend.frameon": False,
    "text.parse_math": False,  # a "$" in a category or a run's name is a dollar sign, not TeX
}
_OVERALL_COLOR = "#4a4a4a"
#: id stem of every data mark (bar, point) in a chart, so a browser test can count what was drawn.
MARK = "mark"
#: Points per character of chart text at 9 pt (DejaVu Sans averages about 5.5): what a wrapped label may hold.
_PT_PER_CHAR = 6.0
#: Lines a run's name may take in a chart; a longer one ends in "…" (the tables hold it whole).
_MAX_LABEL_LINES = 4
#: Charts shrink with a narrow window down to this share of their drawn size, then scroll
#: sideways inside their figure, so that their text stays legible on a phone.
_MIN_CHART_SCALE = 0.7


def wrap_label(text: str, width: int, max_lines: int = _MAX_LABEL_LINES) -> str:
    """``text`` broken into lines of at most ``width`` characters (at spaces and hyphens, inside
    a word only when it must), at most ``max_lines`` of them, so that run names side by side
    in a chart never run into each other; its control characters written out."""
    width = max(4, width)
    lines = textwrap.wrap(visible(text), width, break_long_words=True, break_on_hyphens=True) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1].rstrip() + "…"
    return "\n".join(lines)


def _label_lines(labels: Sequence[str]) -> int:
    return max([1, *(label.count("\n") + 1 for label in labels)])


def _svg(fig: Any, prefix: str) -> Markup:
    """The figure as an inline <svg> with ids made unique on the page.

    The svg keeps its size in points, so text reads the same size in every chart; CSS
    only shrinks it to fit a narrow window.
    """
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]

    def tag(match: re.Match[str]) -> str:  # ids only inside tags, never in chart text
        t = _ID_ATTR.sub(lambda m: f'id="{prefix}-{m.group(1)}"', match.group(0))
        return _ID_REF.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", t)

    text = _TAG.sub(tag, text)
    root_end = text.index(">")
    width = re.search(r'\bwidth="([0-9.]+)pt"', text[:root_end])
    style = f' style="min-width: {float(width.group(1)) * 4 / 3 * _MIN_CHART_SCALE:.0f}px"' if width else ""
    return Markup(text[:root_end] + ' role="img"' + style + text[root_end:])


def _error_bars(values: list[float], intervals: list[list[float] | None]) -> list[list[float]] | None:
    if not any(intervals):
        return None
    low = [v - i[0] if i and not math.isnan(v) else 0.0 for v, i in zip(values, intervals)]
    high = [i[1] - v if i and not math.isnan(v) else 0.0 for v, i in zip(values, intervals)]
    return [[max(0.0, x) for x in low], [max(0.0, x) for x in high]]


def _category_chart(
    plt: Any, metric: str, dataset: str, runs: Sequence[LoadedRun], categories: Sequence[str], prefix: str
) -> Markup:
    """MemSim Table 6/7 as bars: one group per run, one bar per category and one for overall."""
    import numpy as np

    def value(run: LoadedRun, cat: str) -> float | None:
        return run.overall(metric) if cat == _OVERALL else run.by_category(cat, metric)

    # a category no run has this metric for (e.g. accuracy of questions without choices) gets
    # no bar, so no legend entry for bars that are not there
    bars = [cat for cat in (*categories, _OVERALL) if any(value(r, cat) is not None for r in runs)]
    colors = list(plt.get_cmap("tab10").colors)
    width = 0.8 / len(bars)
    fig_w = min(12.0, max(7.0, 1.0 + 0.14 * len(bars) * len(runs)))
    fig, ax = plt.subplots(figsize=(fig_w, 2.9))
    x = np.arange(len(runs))
    top = 0.0
    for i, cat in enumerate(bars):
        overall = cat == _OVERALL
        given = [value(r, cat) for r in runs]
        values = [math.nan if v is None else float(v) for v in given]
        intervals = [r.interval(metric, None if overall else cat) for r in runs]
        top = max([top, *(v for v in values if not math.isnan(v)), *(i[1] for i in intervals if i)])
        drawn = ax.bar(
            x - 0.4 + width * (i + 0.5),
            values,
            width * 0.92,
            label=visible(cat),
            color=_OVERALL_COLOR if overall else colors[i % len(colors)],
            yerr=_error_bars(values, intervals),
            error_kw={"elinewidth": 0.7, "capsize": 1.5, "ecolor": "#222"},
        )
        for j, bar in enumerate(drawn.patches):
            if not math.isnan(values[j]):
                bar.set_gid(f"{MARK}-{i}-{j}")
    # the axes take 0.775 of the figure's width (matplotlib's default margins): each run's
    # name wraps to its group's width, less a gap
    group_pt = 72 * fig_w * 0.775 / len(runs)
    ax.set_xticks(x, [wrap_label(r.label, int(group_pt / _PT_PER_CHAR) - 2) for r in runs])
    ax.set_ylabel(visible(metric))
    if top <= 1.0:
        ax.set_ylim(0, 1.02)
    ax.grid(axis="y", color="#e4e4e4", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_title(visible(f"{metric} by category · {dataset}"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, handlelength=1.0)
    return _svg(fig, prefix)


def _efficiency_chart(plt: Any, runs: Sequence[LoadedRun], prefix: str) -> Markup:
    """Ingest seconds per message and recall seconds per question (MemSim's adaptation and response time)."""
    panels = (("ingest_s_per_message", "ingest s / message"), ("recall_s_per_question", "recall s / question"))
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

    label_chars = 26
    labels = [wrap_label(r.label, label_chars) for r in runs]
    lines = _label_lines(labels)
    widest = max(len(line) for label in labels for line in label.split("\n"))
    # room for the names, then two panels wide enough for their titles and tick labels
    fig_w = max(5.6, 0.6 + widest * _PT_PER_CHAR / 72 + 2 * 2.1)
    row_h = max(0.3, 0.08 + 0.16 * lines)
    fig, axes = plt.subplots(1, 2, figsize=(fig_w, 1.0 + row_h * len(runs)), sharey=True)
    y = list(range(len(runs)))
    for ax, (key, title) in zip(axes, panels):
        values = [r.summary.efficiency.to_json().get(key) for r in runs]
        drawn = [0.0 if v is None else float(v) for v in values]
        for j, bar in enumerate(ax.barh(y, drawn, color="#4c78a8", height=0.6).patches):
            if values[j] is not None:
                bar.set_gid(f"{MARK}-{key}-{j}")
        for yi, v, d in zip(y, values, drawn):
            ax.annotate(fmt_seconds(v), (d, yi), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
        ax.set_title(title)
        top = max(drawn)
        if top > 0:
            ax.set_xlim(0, top * 1.5)  # the value printed right of the longest bar stays inside
            ax.xaxis.set_major_locator(MaxNLocator(3))
        else:  # every run took no measurable time (e.g. replayed with --from): one tick, at 0
            ax.set_xlim(0, 1)
            ax.xaxis.set_major_locator(FixedLocator([0.0]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "0" if v == 0 else fmt_seconds(v)))
        ax.tick_params(axis="x", labelsize=7.5)
        ax.grid(axis="x", color="#e4e4e4", linewidth=0.6)
        ax.set_axisbelow(True)
    axes[0].set_yticks(y, labels)
    axes[0].invert_yaxis()
    fig.tight_layout(w_pad=1.5)
    return _svg(fig, prefix)


def _cost_chart(plt: Any, metric: str, dataset: str, runs: Sequence[LoadedRun], prefix: str) -> Markup:
    """The headline metric against LLM cost per 1,000 questions, so runs of different sizes compare.

    Runs are named in a legend under the axes, never beside their points, where names of
    runs with close scores and costs would run into each other. When no run cost anything
    (offline runs: extractive reader, no LLM) the cost axis has one tick, 0, and says so.
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter

    from matplotlib.transforms import offset_copy

    fig, ax = plt.subplots(figsize=(5.6, 3.0), layout="constrained")
    colors = list(plt.get_cmap("tab10").colors)
    costs = []
    #: runs already drawn at each (cost, score): a run on the same point is set beside it,
    #: not on top of it, so that no marker hides another
    taken: dict[tuple[float, float], int] = {}
    for i, r in enumerate(runs):
        value = r.overall(metric)
        if value is None:
            continue
        cost = float(r.summary.llm.cost_usd or 0.0)
        per_k = 1000.0 * cost / max(1, int(r.summary.n_questions or 0))
        costs.append(per_k)
        interval = r.interval(metric)
        yerr = [[max(0.0, value - interval[0])], [max(0.0, interval[1] - value)]] if interval else None
        spot = (round(per_k, 6), round(value, 6))
        nth = taken[spot] = taken.get(spot, -1) + 1
        shift = offset_copy(ax.transData, fig=fig, x=8 * nth, y=0, units="points")
        point = ax.errorbar(
            [per_k],
            [value],
            yerr=yerr,
            fmt="o",
            color=colors[i % len(colors)],
            markersize=6,
            elinewidth=0.8,
            capsize=2,
            label=wrap_label(r.label, 60, max_lines=2),
            transform=shift,
        )
        point.lines[0].set_gid(f"{MARK}-{i}")
    ax.set_ylabel(visible(metric))
    ax.margins(x=0.3, y=0.15)
    if any(costs):
        ax.set_xlabel("LLM cost, USD per 1,000 questions")
        ax.set_xlim(left=0)
    else:  # offline runs: the points in the middle, and no negative cost on the axis
        ax.set_xlabel("LLM cost, USD per 1,000 questions (no LLM cost in these runs)")
        ax.set_xlim(-1, 1)
        ax.xaxis.set_major_locator(FixedLocator([0.0]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "0"))
    if all(0.0 <= (r.overall(metric) or 0.0) <= 1.0 for r in runs):
        ax.set_ylim(0, 1.02)
    ax.grid(color="#e4e4e4", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_title(visible(f"{metric} against cost · {dataset}"))
    if costs:
        fig.legend(loc="outside lower left", fontsize=8, handlelength=1.0, ncols=1)
    return _svg(fig, prefix)


#: a colour per stage of memplug.diagnosis: correct in green, the three losses warm to cool, unknown grey
_STAGE_COLORS = {
    "correct": "#59a14f",
    "not_stored": "#e15759",
    "not_recalled": "#f28e2b",
    "misread": "#b07aa1",
    "unknown": "#bab0ac",
}


def _stage_chart(
    plt: Any, dataset: str, runs: Sequence[LoadedRun], categories: Sequence[str], prefix: str
) -> Markup | None:
    """Where each run's answers were lost (summary.json's ``diagnosis``): a stacked bar per run
    and category, its segments the shares of its answers correct, not stored, not recalled,
    misread and unknown. None when no run of the group has diagnoses (runs from before them)."""
    rows: list[tuple[str, dict[str, int]]] = []
    for r in runs:
        tallied = r.summary.diagnosis
        if not tallied:
            continue
        by_category = tallied.get("by_category") or {}
        rows.append((f"{r.label} · overall", tallied.get("overall") or {}))
        rows += [(f"{r.label} · {c}", by_category[c]) for c in categories if c in by_category]
    if not rows:
        return None
    from memplug.diagnosis import STAGES

    labels = [wrap_label(label, 40, max_lines=2) for label, _ in rows]
    fig, ax = plt.subplots(figsize=(7.6, 1.2 + (0.18 + 0.14 * _label_lines(labels)) * len(rows)), layout="constrained")
    left = [0.0] * len(rows)
    y = list(range(len(rows)))
    for stage in STAGES:
        shares = [counts.get(stage, 0) / max(1, sum(counts.values())) for _, counts in rows]
        drawn = ax.barh(y, shares, left=left, height=0.7, color=_STAGE_COLORS[stage], label=stage.replace("_", " "))
        for j, bar in enumerate(drawn.patches):
            if shares[j]:
                bar.set_gid(f"{MARK}-{stage}-{j}")
        left = [a + b for a, b in zip(left, shares)]
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the answers diagnosed")
    ax.set_title(visible(f"where the answers were lost · {dataset}"))
    fig.legend(loc="outside lower left", ncols=len(STAGES), fontsize=8, handlelength=1.0)
    return _svg(fig, prefix)


def _paired_chart(
    plt: Any, dataset: str, pairs: Sequence[dict[str, Any]], metrics: Sequence[str], prefix: str
) -> Markup:
    """A forest plot of the paired comparisons: one panel per metric, one row per run B.

    Each row is A − B with its paired bootstrap interval, left of the dashed zero line
    when B scored higher; B keeps its colour from the cost chart (its place among the runs).
    """
    colors = list(plt.get_cmap("tab10").colors)
    rows_per_panel = [[(k, p) for k, p in enumerate(pairs, start=1) if m in p["metrics"]] for m in metrics]
    reach = max(abs(x) for p in pairs for c in p["metrics"].values() for x in (c["diff"], *(c.get("ci") or ())))
    reach = max(0.05, reach) * 1.3  # zero in the middle, room for the value printed beside each interval
    names = {k: wrap_label(f"{p['a'].label} − {p['b'].label}", 40) for k, p in enumerate(pairs, start=1)}
    row_h = 0.28 + 0.15 * (_label_lines(list(names.values())) - 1)  # a wrapped name never meets the next row's
    fig, axes = plt.subplots(
        len(metrics),
        1,
        sharex=True,
        squeeze=False,
        figsize=(6.4, 0.6 + sum(0.45 + row_h * len(rows) for rows in rows_per_panel)),
        gridspec_kw={"height_ratios": [len(rows) + 0.6 for rows in rows_per_panel]},
        layout="constrained",
    )
    for i, (ax, metric, rows) in enumerate(zip(axes[:, 0], metrics, rows_per_panel)):
        for y, (k, pair) in enumerate(rows):
            c = pair["metrics"][metric]
            low, high = c.get("ci") or (c["diff"], c["diff"])  # no interval (one sample): the point alone
            drawn = ax.errorbar(
                [c["diff"]],
                [y],
                xerr=None if c.get("ci") is None else [[c["diff"] - low], [high - c["diff"]]],
                fmt="o",
                color=colors[k % len(colors)],
                markersize=5,
                elinewidth=1.2,
                capsize=2.5,
            )
            drawn.lines[0].set_gid(f"{MARK}-{i}-{y}")
            label = fmt_signed(c["diff"]) + ("" if c.get("ci") else f" (no interval: {c.get('ci_na', 'n/a')})")
            ax.annotate(
                label, (high, y), xytext=(5, 0), textcoords="offset points", va="center", fontsize=7.5, color="#444"
            )
        ax.axvline(0, color="#888", linewidth=0.8, linestyle="--", zorder=0)
        ax.set_yticks(range(len(rows)), [names[k] for k, _ in rows])
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_title(visible(metric), fontsize=9)
        ax.grid(axis="x", color="#e4e4e4", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.spines["left"].set_visible(False)
        ax.tick_params(axis="y", length=0)
    axes[-1, 0].set_xlim(-reach, reach)
    axes[-1, 0].set_xlabel("A − B, paired difference in mean score (95% interval)")
    fig.suptitle(visible(f"Paired differences · {dataset}"), x=0.01, ha="left", fontsize=10, fontweight="bold")
    fig.get_layout_engine().set(h_pad=0.08)
    return _svg(fig, prefix)


def paired_comparisons(members: Sequence[LoadedRun]) -> list[dict[str, Any]]:
    """memplug.compare.comparisons for the runs of one dataset: the first run (A) against each later one (B).

    Each entry is {"a": run A, "b": run B, "metrics": {metric: memplug.stats.paired_comparison result}}.
    """
    found = compare.comparisons([r.path for r in members])
    # comparisons() pairs the first path with each later one on its dataset, in order, and
    # every member shares one dataset: the k-th comparison is members[k + 1]
    return [
        {"a": members[0], "b": b, "metrics": c["metrics"], "skipped": c.get("skipped")}
        for b, c in zip(members[1:], found, strict=True)
    ]


def repeat_groups(runs: Sequence[LoadedRun], option_keys: Sequence[str]) -> list[dict[str, Any]]:
    """Runs whose spec is the same apart from the seed (`memplug eval --repeats`), two or more to a group.

    Per metric, memplug.stats.repeat_summary of the runs' overall scores: the spread
    across seeds, which the bootstrap interval of one run does not show.
    """
    by_spec: dict[str, list[LoadedRun]] = {}
    for r in runs:
        spec = {k: v for k, v in r.run.spec.items() if k != "seed"}
        by_spec.setdefault(json.dumps(spec, sort_keys=True, default=str), []).append(r)
    groups = [g for g in by_spec.values() if len(g) > 1]
    per_agent = Counter(g[0].agent for g in groups)
    keys = [k for k in option_keys if k != "seed"]
    out = []
    for g in groups:
        summaries = {}
        for metric in _ordered_union(r.metrics for r in g):
            values = [v for r in g if (v := r.overall(metric)) is not None]
            if values:
                summaries[metric] = stats.repeat_summary(values)
        out.append(
            {
                "label": _with_options(g[0], keys) if per_agent[g[0].agent] > 1 else g[0].agent,
                "dataset": g[0].dataset,
                "runs": g,
                "seeds": [r.run.seed for r in g],
                "metrics": summaries,
            }
        )
    return out


# -- the page ------------------------------------------------------------------
def _groups(runs: Sequence[LoadedRun]) -> dict[str, list[LoadedRun]]:
    groups: dict[str, list[LoadedRun]] = {}
    for r in runs:
        groups.setdefault(r.dataset, []).append(r)
    return groups


def _ordered_union(lists: Iterable[Iterable[str]]) -> list[str]:
    return list(dict.fromkeys(x for items in lists for x in items))


def _best(runs: Sequence[LoadedRun], metric: str) -> float | None:
    values = [v for r in runs if (v := r.overall(metric)) is not None]
    return max(values) if len(values) > 1 else None


def _ci_note(runs: Sequence[LoadedRun]) -> str | None:
    for r in runs:
        ci = r.summary.ci
        if ci is not None:
            level = ci.level
            parts = [
                f"{level:.0%} intervals" if isinstance(level, (int, float)) else "intervals",
                ci.method,
                f"{ci.resamples} resamples" if ci.resamples else None,
            ]
            return ", ".join(p for p in parts if p)
    return None


def _shown(value: Any) -> Any:
    """What a ``{{ }}`` of the template prints: a string with its control characters written
    out (an ESC in a category is shown as ``\\x1b``); tab and line breaks stay, as they are
    only whitespace in HTML. Markup (the charts, ``tojson``) is memplug's own, left as it is."""
    return visible(value, layout=True) if isinstance(value, str) and not isinstance(value, Markup) else value


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("memplug", "templates"),
        autoescape=True,
        finalize=_shown,
        undefined=jinja2.StrictUndefined,  # a typo in the template fails the tests, not the reader
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        score=fmt_score,
        seconds=fmt_seconds,
        cost=fmt_cost,
        value=fmt_value,
        signed=fmt_signed,
        p=fmt_p,
        breakable=fmt_breakable,
    )
    return env


def render_html(run_dirs: Sequence[Path]) -> str:
    """The page for these run directories, as text."""
    if not run_dirs:
        raise MemplugError("report: give at least one run directory")
    import matplotlib

    matplotlib.use("Agg")  # no display; imported here because it costs about a second
    import matplotlib.pyplot as plt

    loaded = [load_run(Path(p)) for p in run_dirs]
    # runs judged by different judges: each judge's numbers are a metric of their own (judge[name])
    columns = compare.judge_columns([r.path for r in loaded])
    loaded = [
        r
        if i not in columns
        else attrs.evolve(
            r,
            summary=compare.judged_summary(r.summary, columns[i]),
            run=attrs.evolve(
                r.run,
                resolved={**r.run.resolved, "metrics": [compare.judged_name(m, columns[i]) for m in r.run.metrics]},
            ),
            records=[
                attrs.evolve(rec, scores=compare.rename_judge_metrics(rec.scores, columns[i])) for rec in r.records
            ],
        )
        for i, r in enumerate(loaded)
    ]
    option_keys = differing_options(loaded)
    runs = _labelled(loaded, option_keys)
    groups: list[dict[str, Any]] = []
    n_chart = 0
    with matplotlib.rc_context(_RC):
        for dataset, members in _groups(runs).items():
            metrics = _ordered_union(r.metrics for r in members)
            common = [m for m in metrics if all(m in r.metrics for r in members)]
            categories = _ordered_union(r.categories for r in members)
            headline = headline_metric(common or metrics)
            charts = []
            for metric in metrics:
                n_chart += 1
                charts.append(
                    {"metric": metric, "svg": _category_chart(plt, metric, dataset, members, categories, f"c{n_chart}")}
                )
            cost_svg = None
            if headline is not None:
                n_chart += 1
                cost_svg = _cost_chart(plt, headline, dataset, members, f"c{n_chart}")
            n_chart += 1
            stage_svg = _stage_chart(plt, dataset, members, categories, f"c{n_chart}")
            pairs = paired_comparisons(members)
            paired_metrics = [
                m
                for m in _ordered_union([metrics, *(p["metrics"] for p in pairs)])
                if any(m in p["metrics"] for p in pairs)
            ]
            paired_svg = None
            if paired_metrics:
                n_chart += 1
                paired_svg = _paired_chart(plt, dataset, pairs, paired_metrics, f"c{n_chart}")
            groups.append(
                {
                    "dataset": dataset,
                    "runs": members,
                    "metrics": metrics,
                    "categories": categories,
                    "headline": headline,
                    "charts": charts,
                    "cost_svg": cost_svg,
                    "stage_svg": stage_svg,
                    "pairs": pairs,
                    "paired_metrics": paired_metrics,
                    "paired_svg": paired_svg,
                    "best": {m: _best(members, m) for m in metrics},
                }
            )
        efficiency_svg = _efficiency_chart(plt, runs, "eff")

    wrong: list[dict[str, Any]] = []
    for n_run, r in enumerate(runs):
        rows = _wrong_rows(r)
        shown = rows[:MAX_WRONG_PER_RUN]
        wrong.append({"run": r, "rows": shown, "total": len(rows), "stored": _stored_lists(r, shown, n_run)})
    return (
        _environment()
        .get_template(_TEMPLATE)
        .render(
            title="memplug report: " + ", ".join(r.label for r in runs),
            generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            memplug_version=memplug.__version__,
            runs=runs,
            option_keys=option_keys,
            all_metrics=_ordered_union(g["metrics"] for g in groups),
            flat_specs={r.run_id: _flat_spec(r) for r in runs},
            groups=groups,
            paired=any(g["paired_svg"] for g in groups),
            paired_level=stats.DEFAULT_LEVEL,  # memplug.compare uses paired_comparison's default
            repeats=repeat_groups(runs, option_keys),
            checks_without_judge=[r for r in runs if r.judge_checks and r.overall("judge") is None],
            efficiency_svg=efficiency_svg,
            ci_note=_ci_note(runs),
            wrong=wrong,
            # the memory measures any run has (memplug.diagnosis), in their order there
            memory_measures=_ordered_union(list(((r.summary.diagnosis or {}).get("memory") or {})) for r in runs),
            wrong_categories=_ordered_union([row["category"] for row in w["rows"]] for w in wrong),
            max_wrong=MAX_WRONG_PER_RUN,
            recalled_open=RECALLED_OPEN,
            run_json={r.run_id: json.dumps(r.run.to_json(), indent=2, ensure_ascii=False) for r in runs},
            competency_table=_competency_table([Path(p) for p in run_dirs]),
        )
    )


def _competency_table(paths: list[Path]) -> Markup | None:
    """A dataset's own table of the runs (MemoryAgentBench's runs of several sources: the paper's
    table by competency), from its plugin's ``memplug_report_table``; else None."""
    from memplug.plugins import get_plugins

    table = get_plugins().hook.memplug_report_table(paths=paths, fmt="html")
    return Markup(table) if table is not None else None


def write_html(run_dirs: list[Path], out: Path) -> Path:
    """Write the comparison page for ``run_dirs`` to ``out`` and return its path."""
    out = Path(out)
    page = render_html(run_dirs)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise MemplugError(f"--html {out}: cannot write ({exc.strerror})") from None
    return out
