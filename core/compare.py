"""Paired comparison of runs over the same questions: is A really better than B?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memplug import stats
from memplug.results import RunDir


def _scores(records: list[dict[str, Any]]) -> tuple[dict[str, dict[str, float | None]], dict[str, str]]:
    """Scores by metric, keyed by sample/question (question ids repeat across samples)."""
    by_metric: dict[str, dict[str, float | None]] = {}
    clusters: dict[str, str] = {}
    for r in records:
        if r.get("error"):
            continue
        key = f"{r['sample_id']}/{r['question_id']}"
        clusters[key] = r["sample_id"]
        for name, value in (r.get("scores") or {}).items():
            by_metric.setdefault(name, {})[key] = value
    return by_metric, clusters


def paired(base: Path, other: Path) -> dict[str, Any]:
    """Per metric: A (base) minus B (other) on the questions both answered, with CI and p-value."""
    a_run, b_run = RunDir(base), RunDir(other)
    a_scores, clusters = _scores(a_run.records())
    b_scores, _ = _scores(b_run.records())
    out: dict[str, Any] = {"a": a_run.summary()["run_id"], "b": b_run.summary()["run_id"], "metrics": {}}
    for metric in sorted(a_scores.keys() & b_scores.keys()):
        try:
            out["metrics"][metric] = stats.paired_comparison(a_scores[metric], b_scores[metric], clusters)
        except ValueError:  # no question scored by both runs
            continue
    return out


def comparisons(paths: list[Path]) -> list[dict[str, Any]]:
    """The first run against each other run on the same dataset."""
    if len(paths) < 2:
        return []
    base = paths[0]
    dataset = RunDir(base).summary()["dataset"]
    return [paired(base, p) for p in paths[1:] if RunDir(p).summary()["dataset"] == dataset]
