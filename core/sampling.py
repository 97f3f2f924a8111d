"""``--limit N`` drawn as a sample that represents the data: stratified by category.

The first N questions of a release are rarely a fair subset: LongMemEval lists its
question types in blocks, LoCoMo's first conversation is one speaker pair, and a subset of
the first 50 may hold no abstention question at all, so two systems compared on it are
compared on one kind of question. ``--limit-by stratified`` (the default) draws from every
stratum, a category and whether its questions are abstention questions (``_abs`` in a
LongMemEval id, ``"abstention": true`` in a conversations file), in proportion to its size:
each stratum gets ``floor(N * size / total)`` questions and the questions left over go to
the strata with the largest remainders (Hamilton's method; ties to the larger stratum,
then to the one met first). Which questions of a stratum is drawn with the run's
``--seed``, so a run and its resume, its reproduction and the other agents of a sweep ask
the same questions. They are asked in dataset order, and a sample none of whose questions
was drawn is left out whole: it is neither ingested nor asked.

``--limit-by first`` keeps the old behaviour: the first N questions in dataset order, a
subset that ingests the fewest samples.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import attrs

from memplug.models import Sample, is_abstention

K = TypeVar("K")

#: the values of --limit-by; the first is the default
LIMIT_BY = ("stratified", "first")


def stratified(samples: Iterable[Sample], limit: int, seed: int) -> tuple[list[Sample], dict[str, Any]]:
    """At most ``limit`` questions of ``samples``, stratified as the module says, and what was
    drawn for run.json (``resolved.limit``): the method, the seed and per stratum the
    questions drawn of those it holds."""
    samples = list(samples)
    strata: dict[tuple[str, bool], list[tuple[int, int]]] = {}
    for i, sample in enumerate(samples):
        for j, question in enumerate(sample.questions):
            strata.setdefault((question.category, is_abstention(question)), []).append((i, j))
    total = sum(len(members) for members in strata.values())
    quotas = apportion({key: len(members) for key, members in strata.items()}, min(limit, total))
    rng = random.Random(f"memplug --limit-by stratified, seed {seed}")  # a str seed: the same draw on every platform
    chosen: set[tuple[int, int]] = set()
    for key, members in strata.items():  # in order of first appearance, so the draw is fixed by the data and seed
        chosen.update(rng.sample(members, quotas[key]))
    kept = []
    for i, sample in enumerate(samples):
        questions = tuple(q for j, q in enumerate(sample.questions) if (i, j) in chosen)
        if questions:
            kept.append(attrs.evolve(sample, questions=questions))
    drawn = {
        "by": "stratified",
        "seed": seed,
        "n": len(chosen),
        "of": total,
        "strata": [
            {
                "category": category,
                "abstention": abstention,
                "drawn": quotas[(category, abstention)],
                "of": len(members),
            }
            for (category, abstention), members in strata.items()
        ],
    }
    return kept, drawn


def apportion(sizes: Mapping[K, int], n: int) -> dict[K, int]:
    """Hamilton's largest-remainder apportionment of ``n`` seats over strata of ``sizes``:
    whole shares that sum to ``n`` (also percentages that sum to 100, memplug.diagnosis)."""
    total = sum(sizes.values())
    if total == 0:
        return {key: 0 for key in sizes}
    exact = {key: n * size / total for key, size in sizes.items()}
    quotas = {key: math.floor(value) for key, value in exact.items()}
    order = list(sizes)
    left = n - sum(quotas.values())
    by_remainder = sorted(order, key=lambda k: (-(exact[k] - quotas[k]), -sizes[k], order.index(k)))
    for key in by_remainder[:left]:
        quotas[key] += 1
    return quotas
