"""Rescoring: metrics and judge verdicts recomputed from a run's records (`memplug rescore`).

Changing a metric or the judge should not mean re-running the memory agent and the
answering LLM. Every record in samples.jsonl keeps the prediction, the gold and the
recalled items, which is all a metric sees, so scores can be recomputed from it alone.
The run's own files are never changed: the rescored records and summary are written
next to them under a timestamp, with a ``rescore-<stamp>.json`` that says what was
recomputed, with which judge, and which numbers moved.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import attrs

from memplug import diagnosis
from memplug import options as opts
from memplug import protocols
from memplug import stored as stored_file
from memplug.errors import MemplugError, did_you_mean
from memplug.metrics import score_with
from memplug.models import DatasetInfo, Question
from memplug.plugins import Entry, Plugins, get_plugins
from memplug.protocols import MetricConfig, ScoreContext, reads_answer
from memplug.record import QuestionRecord
from memplug.results import RunDir, summarize, write_json_atomic, write_records_atomic

if TYPE_CHECKING:
    from memplug.llm import LLM

#: a metric parameterised by K ("recall@K") is asked for by its instance name ("recall@5")
_AT_K = re.compile(r"^(?P<base>.+)@(?P<k>\d+)$")


def dataset_info(spec: dict[str, Any], plugins: Plugins) -> DatasetInfo:
    """The run's DatasetInfo (language, metric list), built as the run built it: from the
    stored dataset options and ``--data`` path (a loader may read its language there)."""
    builder = plugins.registry("datasets").get(spec["dataset"]).load()()
    values = opts.resolve(
        protocols.options_of(builder), spec.get("dataset_options") or {}, f"dataset {spec['dataset']!r}"
    )
    data = Path(spec["data"]).expanduser() if spec.get("data") else None
    return protocols.dataset_info(builder, values, data)


def make_llm(model: str, api_base: str | None, cache: bool) -> LLM:
    """An LLM client configured like the runner's judge (temperature 0, on-disk cache), checked
    as `memplug eval` checks its judge before the first call (:func:`memplug.preflight.check_llm`):
    the model resolves, its provider's key is in the environment, an ``api_base`` answers. A
    missing key or a dead endpoint is one line now, not a failure after minutes of retries."""
    from memplug import preflight
    from memplug.llm import LLM

    llm = LLM(model, api_base=api_base, use_cache=cache)
    preflight.check_llm(llm, "--judge")
    return llm


def metric_entry(name: str, plugins: Plugins) -> tuple[Entry, int | None]:
    """The registry entry for a metric name and, for "name@K" metrics, the K asked for."""
    registry = plugins.registry("metrics")
    if name in registry:
        return registry.get(name), None
    match = _AT_K.match(name)
    if match and f"{match['base']}@K" in registry:
        return registry.get(f"{match['base']}@K"), int(match["k"])
    raise MemplugError(f"unknown metric {name!r}{did_you_mean(name, registry.names())}")


def build_metrics(
    names: Iterable[str], config: MetricConfig, plugins: Plugins, recalled_k: int | None = None
) -> list[Any]:
    """The metrics called ``names``; "recall@K" style names get their K. ``recalled_k``: how
    many items the run kept per question, above which a "@K" metric would silently be
    computed on fewer items (recall@20 of a top-5 run is recall@5)."""
    metrics = []
    for name in names:
        entry, k = metric_entry(name, plugins)
        if k is not None and recalled_k is not None and k > recalled_k:
            raise MemplugError(
                f"{name}: the run recalled {recalled_k} items per question (--top-k {recalled_k}), "
                f"so {name} cannot be computed from it; use K <= {recalled_k}, or run again "
                f"with --top-k {k}"
            )
        metrics.append(entry.load()(config if k is None else attrs.evolve(config, top_k=k)))
    return metrics


def score_context(record: QuestionRecord, language: str) -> ScoreContext:
    """What a metric saw when the run scored this record, rebuilt from the record.

    ``question_meta`` matters to the judge, which picks its prompt by the dataset family
    in the question's meta.
    """
    question = Question(
        id=record.question_id,
        text=record.question,
        answers=tuple(record.gold),
        category=record.category,
        choices=record.choices,
        correct_choice=record.correct_choice,
        targets=record.targets,
        anchors=record.anchors,
        time=record.question_time,
        meta=record.question_meta,
    )
    return ScoreContext(question, record.prediction or "", tuple(record.recalled), language, record.meta, record.reply)


def scorable(record: QuestionRecord) -> bool:
    """A record the run scored: answered, without an error (errors stay errors)."""
    return not record.error and record.prediction is not None


async def score_records(
    records: list[QuestionRecord],
    metrics: list[Any],
    language: str,
    score_raw_too: bool = False,
    unscored: dict[tuple[str, str], dict[str, str]] | None = None,
) -> list[dict[str, Any] | None]:
    """{metric name: score} per record (None for one with an error); async metrics run concurrently.
    ``score_raw_too``: the run's protocol also scored the raw reply (see memplug.metrics.score_with).
    ``unscored``, when given, receives by record key the metrics that applied but gave no
    score, and why (the record's ``unscored``: a judge's reply without a verdict).

    As the run scored it: a question without an answer (a reader that cannot do its kind)
    gets the metrics of what was recalled, never those of the answer. ``rescore recall@3``
    counted 42 questions where the run's recall@5 had counted 50.

    A metric that fails stops the rescore with the question it failed on: a summary
    with some verdicts missing would not be the same set of numbers.
    """

    async def one(record: QuestionRecord) -> dict[str, Any]:
        ctx = score_context(record, language)
        out: dict[str, Any] = {}
        for metric in metrics:
            if record.prediction is None and reads_answer(metric):
                continue
            try:
                out[metric.name] = await score_with(metric, ctx, record.reply if score_raw_too else None)
            except MemplugError:
                raise
            except Exception as exc:
                raise MemplugError(
                    f"metric {metric.name!r} failed on question {record.question_id!r} of sample "
                    f"{record.sample_id!r}: {type(exc).__name__}: {exc}"
                ) from exc
        why = {m: reason for m, reason in ctx.unscored.items() if out.get(m) is None}
        if unscored is not None and why:
            unscored[record.key] = why
        return out

    todo = [r for r in records if not r.error]
    results = iter(await asyncio.gather(*(one(r) for r in todo)))
    return [next(results) if not r.error else None for r in records]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def summary_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Every number that differs between two summary.json contents, by dotted key (absent = None)."""
    old, new = _flatten(before), _flatten(after)
    return [
        {"key": k, "before": old.get(k), "after": new.get(k)}
        for k in dict.fromkeys([*old, *new])
        if old.get(k) != new.get(k)
    ]


def _stamp(folder: Path) -> str:
    """A timestamp no earlier rescore of this run has used."""
    base = datetime.now().strftime("%Y%m%d-%H%M%S")
    n = 0
    while (folder / f"rescore-{base if n == 0 else f'{base}-{n}'}.json").exists():
        n += 1
    return base if n == 0 else f"{base}-{n}"


@attrs.frozen
class Rescore:
    """What `memplug rescore` wrote and found."""

    summary_path: Path
    samples_path: Path
    changes_path: Path
    changes: dict[str, Any]


def rediagnosed(
    run: RunDir, records: list[QuestionRecord], metric_names: list[str], language: str, anew: bool
) -> list[QuestionRecord]:
    """The records with their diagnoses (:mod:`memplug.diagnosis`) re-derived from their scores:
    a record's stored and recalled facts kept, its stage decided by the headline metric of
    ``metric_names`` (the dataset's own where the judge left it unscored:
    :func:`memplug.diagnosis.deciding_metric`). ``anew``: every record diagnosed again from the run's stored.jsonl and
    recalled items (a run from before diagnoses; the evidence texts were not kept, so items
    without source ids are judged by the gold answer alone)."""
    lines = stored_file.read(run.path)
    stores = {
        sid: diagnosis.Store.of(line.get("items") or [], language, int(line.get("total") or 0))
        for sid, line in lines.items()
    }
    out = []
    for r in records:
        store = stores.get(r.sample_id)
        headline = diagnosis.deciding_metric(r, metric_names)
        d = (
            diagnosis.diagnose(r, headline, None, store, language)
            if anew
            else diagnosis.restage(r, headline, store, language)
            if r.diagnosis is not None
            else None
        )
        out.append(attrs.evolve(r, diagnosis=d))
    return out


def rescore_run(
    path: Path,
    metrics: list[str] | None = None,
    judge: str | None = None,
    api_base: str | None = None,
    cache: bool = True,
    plugins: Plugins | None = None,
    judge_prompt: str | None = None,
    diagnose: bool = False,
) -> Rescore:
    """Recompute ``metrics`` (default: the run's own) for every answered record of a run.

    Scores of metrics not recomputed are kept. A new ``judge`` model or ``judge_prompt``
    (a judge's name) rescores every verdict, so one summary never mixes two judges; without
    them, the run's judge model and judge are used. Each record's diagnosis is re-staged
    with its new scores; ``diagnose``: every record is diagnosed anew (see :func:`rediagnosed`).
    """
    plugins = plugins or get_plugins()
    run = RunDir(path).check()
    stored = run.info()
    old_summary = run.summary()
    records = run.records()
    info = dataset_info(stored.spec, plugins)

    names = list(dict.fromkeys(metrics or stored.metrics))
    if (judge or judge_prompt) and "judge" not in names:
        names.append("judge")
    if not names:
        raise MemplugError(f"{path}: run.json lists no metrics; name them with --metrics")
    judge_model = judge or stored.judge_model
    if "judge" in names and not judge_model:
        raise MemplugError(f"{path}: the run had no judge; pass --judge MODEL to add judge verdicts")
    judge_name = judge_prompt or stored.judge_prompt
    if "judge" in names:
        from memplug import preflight

        preflight.check_judge(judge_model, judge_name, plugins)
    judge_llm = make_llm(judge_model, api_base or stored.api_base, cache) if "judge" in names and judge_model else None
    top_k = stored.top_k
    config = MetricConfig(top_k=top_k, language=info.language, judge=judge_llm, judge_name=judge_name)
    instances = build_metrics(names, config, plugins, recalled_k=top_k)

    raw_too = bool((stored.protocol or {}).get("score_raw_too"))
    unscored: dict[tuple[str, str], dict[str, str]] = {}
    new_scores = asyncio.run(score_records(records, instances, info.language, raw_too, unscored))
    rescored: list[QuestionRecord] = []
    changed = {m.name: 0 for m in instances}
    for record, scores in zip(records, new_scores):
        if scores is None:
            rescored.append(record)
            continue
        for name, value in scores.items():
            changed[name] += record.scores.get(name) != value
        # the rescored metrics' reasons replace the run's; the others' stay
        why = {m: r for m, r in (record.unscored or {}).items() if m not in scores} | unscored.get(record.key, {})
        rescored.append(attrs.evolve(record, scores={**record.scores, **scores}, unscored=why or None))
    run_metrics = list(dict.fromkeys([*stored.metrics, *names]))
    rescored = rediagnosed(run, rescored, run_metrics, info.language, diagnose)

    ci = old_summary.ci
    new_summary = summarize(
        rescored,
        stored.agent or old_summary.agent,
        stored.dataset or old_summary.dataset,
        stored.run_id or old_summary.run_id or Path(path).name,
        old_summary.efficiency.wall_s,
        resamples=ci.resamples if ci is not None else 1000,
        level=ci.level if ci is not None else 0.95,
    )
    # which questions were answered is the run's, not the metrics': its outcome carries over
    new_summary.outcome = old_summary.outcome
    diff = summary_changes(old_summary.to_json(), new_summary.to_json())
    judge_metric = next((m for m in instances if m.name == "judge"), None)
    stamp = _stamp(run.path)
    summary_path = run.path / f"summary.rescored-{stamp}.json"
    samples_path = run.path / f"samples.rescored-{stamp}.jsonl"
    changes_path = run.path / f"rescore-{stamp}.json"
    changes = {
        "run_id": stored.run_id,
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "from": {"summary": run.summary_json.name, "samples": run.samples.name},
        "written": {"summary": summary_path.name, "samples": samples_path.name},
        "metrics": {m.name: getattr(m, "version", None) for m in instances},
        "judge": {
            "run": stored.judge or stored.judge_model,
            "rescore": judge_metric.describe() if judge_metric is not None else None,
        },
        "llm": judge_llm.usage.as_dict() if judge_llm is not None else None,
        "questions_rescored": sum(s is not None for s in new_scores),
        "changed_scores": changed,
        "changed_summary": diff,
        "identical": not diff,
    }
    write_records_atomic(samples_path, rescored)
    write_json_atomic(summary_path, new_summary.to_json())
    write_json_atomic(changes_path, changes)
    return Rescore(summary_path, samples_path, changes_path, changes)
