"""Paired comparison of runs over the same questions: is A really better than B?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memplug import stats
from memplug.record import QuestionRecord, RunSummary
from memplug.results import RunDir


def _scores(records: list[QuestionRecord]) -> tuple[dict[str, dict[str, float | None]], dict[str, str]]:
    """Scores by metric, keyed by sample/question (question ids repeat across samples)."""
    by_metric: dict[str, dict[str, float | None]] = {}
    clusters: dict[str, str] = {}
    for r in records:
        if r.error:
            continue
        key = f"{r.sample_id}/{r.question_id}"
        clusters[key] = r.sample_id
        for name, value in r.scores.items():
            by_metric.setdefault(name, {})[key] = value
    return by_metric, clusters


def paired_records(a_records: list[QuestionRecord], b_records: list[QuestionRecord]) -> dict[str, Any]:
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
    protocol = RunDir(path).info().protocol
    if not protocol:
        return "unrecorded (a run from before protocols)"
    kind = (
        "official"
        if protocol.get("official")
        else "; ".join(protocol.get("variations") or []) or "memplug's own, no official code"
    )
    return f"{protocol.get('name')} v{protocol.get('version')} ({kind})"


def run_caveats(path: Path) -> list[str]:
    """What a reader of a run's numbers must know beside "official": the data was generated
    (no release file: memplug's generator, its options and seed), and the answers came from
    the offline extractive reader (no model answered), or by which model the llm reader
    answered (the judge's model is in the header's "judge" part). Empty for a release
    answered by another reader."""
    info = RunDir(path).info()
    out = []
    if not info.data and not info.from_run:
        out.append("generated data")
    if info.reader == "extractive":
        out.append("answered by the offline extractive reader")
    elif info.reader == "llm" and info.spec.get("llm"):
        out.append(f"answered by the llm reader ({info.spec['llm']})")
    return out


def _protocol_key(path: Path) -> Any:
    protocol = RunDir(path).info().protocol or {}
    return (
        protocol.get("name"),
        protocol.get("version"),
        tuple(protocol.get("variations") or ()),
        tuple(sorted((protocol.get("sha256") or {}).items())),
        protocol.get("parse"),
        protocol.get("unit"),
        protocol.get("top_k"),
    )


#: the metrics a judge scores: two judges' numbers never share one of these columns
JUDGE_METRICS = ("judge", "judge_coherence")


def judge_identity(path: Path) -> tuple[str, str, str] | None:
    """(name, model, sha256 of the prompts) of the judge that scored a run, None without one.

    From run.json's ``resolved.judge``; a run from before judges were named has its model only.
    """
    info = RunDir(path).info()
    judge, model = info.judge, info.judge_model
    if isinstance(judge, dict):
        return (
            str(judge.get("name") or "unnamed"),
            str(judge.get("model") or model or "?"),
            str(judge.get("prompt_sha256") or ""),
        )
    return ("unrecorded", str(model), "") if model else None


def judge_text(identity: tuple[str, str, str]) -> str:
    """A judge in a few words: "longmemeval (openai/gpt-4o, sha256 5c53937be53d)"."""
    name, model, sha = identity
    return f"{name} ({model}{', sha256 ' + sha[:12] if sha else ''})"


def judge_columns(paths: list[Path]) -> dict[int, str]:
    """Per run (by index in ``paths``), the column its judge metrics go to when the runs were
    judged by different judges: ``judge[longmemeval]``'s suffix ``longmemeval``. Empty when
    every judged run had the same judge (name, model and prompts' sha256): one column then.

    The suffix holds what tells the judges apart: the name, the model, or the first 8 hex
    digits of the prompts' sha256 (same name and model, other prompts).
    """
    found = {i: judge_identity(p) for i, p in enumerate(paths)}
    judged = {i: j for i, j in found.items() if j is not None}
    if len(set(judged.values())) < 2:
        return {}
    differs = [len({j[f] for j in judged.values()}) > 1 for f in range(3)]
    if differs[0] or differs[1]:
        differs[2] = False  # the name or the model tells them apart
    out = {}
    for i, (name, model, sha) in judged.items():
        parts = [v for v, d in zip((name, model, f"sha256:{sha[:8]}" if sha else "sha256:?"), differs) if d]
        out[i] = " ".join(parts)
    return out


def judged_name(metric: str, column: str | None) -> str:
    """``judge`` as ``judge[column]`` (other metrics as they are)."""
    return f"{metric}[{column}]" if column and metric in JUDGE_METRICS else metric


def rename_judge_metrics(scores: dict[str, float | None], column: str | None) -> dict[str, float | None]:
    """A record's scores with its judge metrics' keys renamed to their column."""
    if not column:
        return scores
    return {judged_name(k, column): v for k, v in scores.items()}


def judged_summary(summary: RunSummary, column: str | None) -> RunSummary:
    """A summary with its judge metrics renamed to ``column`` (see :func:`judge_columns`)."""
    if not column:
        return summary
    return summary.renamed(lambda metric: judged_name(metric, column))


def separate_judges(paths: list[Path], summaries: list[RunSummary]) -> list[RunSummary]:
    """The summaries of ``paths`` with the judge metrics of runs judged by different judges in
    columns of their own (``judge[longmemeval]``, ``judge[memplug]``): two judges' numbers are
    never one column's. Unchanged when every judged run had the same judge."""
    columns = judge_columns(paths)
    if not columns:
        return summaries
    return [judged_summary(summary, columns.get(i)) for i, summary in enumerate(summaries)]


def comparisons(paths: list[Path]) -> list[dict[str, Any]]:
    """The first run against each other run on the same dataset and answer protocol.

    A pair under two protocols (another prompt, parser, memory unit or depth) is not
    compared: it is listed with ``skipped`` saying why. A pair judged by two judges (name,
    model or prompts' sha256) is compared on every metric but the judge's, and
    ``judges_differ`` names the two. Each run's summary.json and
    samples.jsonl is read once, the first run's too.
    """
    if len(paths) < 2:
        return []
    base = RunDir(paths[0])
    base_summary = base.summary()
    base_records: list[QuestionRecord] | None = None
    out = []
    for path in paths[1:]:
        other = RunDir(path)
        summary = other.summary()
        if summary.dataset != base_summary.dataset:
            continue
        if _protocol_key(path) != _protocol_key(paths[0]):
            out.append(
                {
                    "a": base_summary.run_id,
                    "b": summary.run_id,
                    "metrics": {},
                    "skipped": f"different answer protocols: {protocol_label(paths[0])} vs {protocol_label(path)}",
                }
            )
            continue
        if base_records is None:
            base_records = base.records()
        entry: dict[str, Any] = {
            "a": base_summary.run_id,
            "b": summary.run_id,
            "metrics": paired_records(base_records, other.records()),
        }
        judge_a, judge_b = judge_identity(paths[0]), judge_identity(path)
        # one judge's verdicts against another's: no test
        if judge_a is not None and judge_b is not None and judge_a != judge_b:
            dropped = [m for m in entry["metrics"] if m in JUDGE_METRICS]
            for m in dropped:
                del entry["metrics"][m]
            if dropped:
                entry["judges_differ"] = f"{judge_text(judge_a)} vs {judge_text(judge_b)}"
        out.append(entry)
    return out
