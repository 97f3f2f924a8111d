"""LoCoMo's prediction file, which its official evaluation scores.

Source: https://github.com/snap-research/LoCoMo, commit
3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376: ``task_eval/evaluate_qa.py`` writes this
layout and ``task_eval/evaluation.py``'s ``eval_question_answering(qa,
"memplug_prediction")`` reads it: a list of ``{"sample_id", "qa": [...]}``, each question
as the release holds it (``question``, ``answer`` or ``adversarial_answer``, ``evidence``,
``category``) with memplug's answer under ``memplug_prediction`` and the dialogue ids of
what was recalled, in rank order, under ``memplug_prediction_context`` (what its
retrieval recall reads); the model name is ``memplug``. The prediction is the answer
memplug scored (``prediction``: the reply after the protocol's parser, e.g. the two-way
choice mapped to its option). Registered by ``memplug.datasets.plugin`` as the
``locomo`` export of ``memplug report --export``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memplug.errors import MemplugError
from memplug.record import QuestionRecord

#: LoCoMo's model name in the prediction keys (``<model>_prediction``)
MODEL = "memplug"


def samples(records: Sequence[QuestionRecord]) -> list[dict[str, Any]]:
    """The samples of LoCoMo's prediction file, in the order their questions come in the run."""
    key = f"{MODEL}_prediction"
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        meta = r.question_meta
        if "locomo_category" not in meta:
            raise MemplugError(
                f"question {r.sample_id}/{r.question_id} has no LoCoMo category: not a run of memplug's locomo loader"
            )
        qa: dict[str, Any] = {"question": r.question}
        if meta["locomo_category"] == 5:  # the release keeps the adversarial answer apart
            for field in ("answer", "adversarial_answer"):
                if field in meta:
                    qa[field] = meta[field]
        else:
            qa["answer"] = r.gold[0] if r.gold else ""
        qa.update(
            {
                "evidence": list(meta.get("evidence") or []),
                "category": meta["locomo_category"],
                key: r.prediction,
                f"{key}_context": list(dict.fromkeys(i for item in r.recalled for i in item.message_ids)),
            }
        )
        by_sample.setdefault(r.sample_id, []).append(qa)
    return [{"sample_id": sample_id, "qa": qa} for sample_id, qa in by_sample.items()]


def predictions(records: Sequence[QuestionRecord]) -> list[str]:
    """The file's lines: one JSON document, indented by 2 (the official code reads it with
    ``json.load``, whatever its layout)."""
    return json.dumps(samples(records), ensure_ascii=False, indent=2).split("\n")
