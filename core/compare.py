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


def paired_records(a_records: list[dict[str, Any]], b_records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per metric both runs have: A minus B on the questions both answered, with CI and p-value."""
    a_scores, clusters = _scores(a_records)
    b_scores, _ = _scores(b_records)
    out: dict[str, Any] = {}
    for metric in sorted(a_scores.keys() & b_scores.keys()):
        try:
            out[metric] = stats.paired_comparison(a_scores[metric], b_scores[metric], clusters)
        except ValueError:  # no question scored by both runs
            continue
    return out


def protocol_label(path: Path) -> str:
    """The run's answer protocol in a few words: "memsim v1 (official)" or with its variations."""
    protocol = (RunDir(path).spec().get("resolved") or {}).get("protocol")
    if not protocol:
        return "unrecorded (a run from before protocols)"
    kind = ("official" if protocol.get("official") else "; ".join(protocol.get("variations") or [])
            or "memplug's own, no official code")
    return f"{protocol.get('name')} v{protocol.get('version')} ({kind})"


def _protocol_key(path: Path) -> Any:
    protocol = (RunDir(path).spec().get("resolved") or {}).get("protocol") or {}
    return (protocol.get("name"), protocol.get("version"), tuple(protocol.get("variations") or ()),
            tuple(sorted((protocol.get("sha256") or {}).items())), protocol.get("parse"), protocol.get("unit"),
            protocol.get("top_k"))


def comparisons(paths: list[Path]) -> list[dict[str, Any]]:
    """The first run against each other run on the same dataset and answer protocol.

    A pair under two protocols (another prompt, parser, memory unit or depth) is not
    compared: it is listed with ``skipped`` saying why. Each run's summary.json and
    samples.jsonl is read once, the first run's too.
    """
    if len(paths) < 2:
        return []
    base = RunDir(paths[0])
    base_summary = base.summary()
    base_records: list[dict[str, Any]] | None = None
    out = []
    for path in paths[1:]:
        other = RunDir(path)
        summary = other.summary()
        if summary["dataset"] != base_summary["dataset"]:
            continue
        if _protocol_key(path) != _protocol_key(paths[0]):
            out.append({"a": base_summary["run_id"], "b": summary["run_id"], "metrics": {},
                        "skipped": f"different answer protocols: {protocol_label(paths[0])} vs {protocol_label(path)}"})
            continue
        if base_records is None:
            base_records = base.records()
        out.append({"a": base_summary["run_id"], "b": summary["run_id"],
                    "metrics": paired_records(base_records, other.records())})
    return out
