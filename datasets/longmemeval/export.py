"""LongMemEval's hypothesis file, the input of its official judge.

Source: https://github.com/xiaowu0162/LongMemEval, commit
9e0b455f4ef0e2ab8f2e582289761153549043fc: ``src/evaluation/evaluate_qa.py``
(``python evaluate_qa.py gpt-4o DIR/<run id>.hypotheses.jsonl longmemeval_s_cleaned.json``):
one ``{"question_id", "hypothesis"}`` per line, joined to the release by ``question_id``
and judged with its per-type prompts; ``print_qa_metrics.py`` then averages the labels
by type. The hypothesis is the answer memplug scored (``prediction``: the reply after
the protocol's parser). Registered by ``memplug.datasets.plugin`` as the ``longmemeval``
export of ``memplug report --export``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from memplug.record import QuestionRecord


def hypotheses(records: Sequence[QuestionRecord]) -> Iterator[str]:
    """evaluate_qa.py's hypothesis lines: the release's ``question_id`` (kept in the question's
    meta; the sample id, which is the same, for runs without it) and the scored answer."""
    for r in records:
        line = {"question_id": str(r.question_meta.get("question_id") or r.sample_id), "hypothesis": r.prediction}
        yield json.dumps(line, ensure_ascii=False)
