"""A run's answers in the files the benchmarks' own scripts read, so anyone can regrade them.

``memplug report RUNS --export DIR`` writes, for each run:

- on ``longmemeval``: ``DIR/<run id>.hypotheses.jsonl``, one ``{"question_id",
  "hypothesis"}`` per line, the input of LongMemEval's ``src/evaluation/evaluate_qa.py``
  (``python evaluate_qa.py gpt-4o DIR/<run id>.hypotheses.jsonl longmemeval_s_cleaned.json``),
  which joins each line to the release by ``question_id`` and judges the hypothesis with
  its per-type prompts; ``print_qa_metrics.py`` then averages the labels by type;
- on ``locomo``: ``DIR/<run id>.locomo.json``, the layout LoCoMo's
  ``task_eval/evaluate_qa.py`` writes and ``task_eval/evaluation.py``'s
  ``eval_question_answering(qa, "memplug_prediction")`` reads: a list of ``{"sample_id",
  "qa": [...]}``, each question as the release holds it (``question``, ``answer`` or
  ``adversarial_answer``, ``evidence``, ``category``) with memplug's answer under
  ``memplug_prediction`` and the dialogue ids of what was recalled, in rank order, under
  ``memplug_prediction_context`` (what its retrieval recall reads); the model name is
  ``memplug``.

The hypothesis or prediction is the answer memplug scored (``prediction``: the reply after
the protocol's parser, e.g. LoCoMo's two-way choice mapped to its option). Questions that
failed, or that the reader could not answer, are left out, as memplug leaves them out of
its means: the official scripts then average over the same questions as memplug did.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memplug.errors import MemplugError, OutputError
from memplug.record import QuestionRecord
from memplug.results import RunDir, write_json_atomic, write_lines_atomic

#: LoCoMo's model name in the prediction keys (``<model>_prediction``)
LOCOMO_MODEL = "memplug"
#: the datasets whose official files can be written, and the suffix of each file
FORMATS = {"longmemeval": ".hypotheses.jsonl", "locomo": ".locomo.json"}


def _scored(records: Iterable[QuestionRecord]) -> list[QuestionRecord]:
    return [r for r in records if r.error is None and r.prediction is not None]


def longmemeval_hypotheses(records: Iterable[QuestionRecord]) -> list[dict[str, Any]]:
    """evaluate_qa.py's hypothesis lines: the release's ``question_id`` (kept in the question's
    meta; the sample id, which is the same, for runs without it) and the scored answer."""
    return [{"question_id": str(r.question_meta.get("question_id") or r.sample_id), "hypothesis": r.prediction}
            for r in _scored(records)]


def locomo_predictions(records: Iterable[QuestionRecord]) -> list[dict[str, Any]]:
    """The samples of LoCoMo's prediction file, in the order their questions come in the run."""
    key = f"{LOCOMO_MODEL}_prediction"
    samples: dict[str, list[dict[str, Any]]] = {}
    for r in _scored(records):
        meta = r.question_meta
        if "locomo_category" not in meta:
            raise MemplugError(f"question {r.sample_id}/{r.question_id} has no LoCoMo category: "
                               "not a run of memplug's locomo loader")
        qa: dict[str, Any] = {"question": r.question}
        if meta["locomo_category"] == 5:  # the release keeps the adversarial answer apart
            for field in ("answer", "adversarial_answer"):
                if field in meta:
                    qa[field] = meta[field]
        else:
            qa["answer"] = r.gold[0] if r.gold else ""
        qa.update({"evidence": list(meta.get("evidence") or []), "category": meta["locomo_category"],
                   key: r.prediction,
                   f"{key}_context": list(dict.fromkeys(i for item in r.recalled for i in item.message_ids))})
        samples.setdefault(r.sample_id, []).append(qa)
    return [{"sample_id": sample_id, "qa": qa} for sample_id, qa in samples.items()]


def export(paths: Iterable[Path], folder: Path) -> list[Path]:
    """Write each run's official file into ``folder`` (created); the files written. A run
    on a dataset without such a file is refused (MemplugError), naming the ones there are."""
    runs = [RunDir(p) for p in paths]
    datasets = [str(run.info().dataset) for run in runs]
    for run, dataset in zip(runs, datasets):
        if dataset not in FORMATS:
            raise MemplugError(f"--export: {run.path} is a run on {dataset}; the official files are "
                               f"{', '.join(FORMATS)}'s only")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"--export {folder}: cannot create ({exc.strerror or exc})") from None
    written = []
    for run, dataset in zip(runs, datasets):
        target = folder / f"{run.info().run_id or run.path.name}{FORMATS[dataset]}"
        records = run.records()
        try:
            if dataset == "longmemeval":
                write_lines_atomic(target, (json.dumps(h, ensure_ascii=False) for h in longmemeval_hypotheses(records)))
            else:
                write_json_atomic(target, locomo_predictions(records))
        except OSError as exc:
            raise OutputError(f"--export {folder}: cannot write {target.name} ({exc.strerror or exc})") from None
        written.append(target)
    return written
