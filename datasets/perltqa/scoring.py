"""PerLTQA's own scores (seed 001, PerLTQA, §3.3 and §3.5), registered from
:mod:`memplug.datasets.plugin`: the memory-anchor MAP of its answers and the accuracy of an
agent's semantic/episodic call. Its correctness and coherence judge is memplug's own
``memplug`` judge (its ``perltqa`` prompt, :mod:`memplug.judge`)."""

from __future__ import annotations

from memplug.metrics import _Metric
from memplug.protocols import ScoreContext


class AnchorMAP(_Metric):
    """PerLTQA's memory-anchor MAP (seed 001, §3.5, Eq. 5), per question.

    MAP = 1/N Σ_i EM(q_i, mar_i) / NUM(mar_i): for each question, the number of its
    memory anchors that occur verbatim (case-sensitive substring) in the answer, over
    the number of anchors; the run's mean over questions is the 1/N Σ.
    """

    name = "anchor_map"
    version = "1"

    def score(self, ctx: ScoreContext) -> float | None:
        anchors = ctx.question.anchors
        if not anchors:
            return None
        return sum(1 for a in anchors if a in ctx.prediction) / len(anchors)


class MemoryTypeAccuracy(_Metric):
    """PerLTQA's memory classification (seed 001, §3.3, Eq. 1): does the agent's call of
    the question's memory type (semantic or episodic) match the dataset's label?

    The agent reports its call as ``Recall.meta["memory_type"]`` (the retrieval agents do
    with ``-o rerank=perltqa``); questions without a label, and agents that make no call,
    are not applicable.
    """

    name = "memory_type"
    version = "1"

    def score(self, ctx: ScoreContext) -> float | None:
        gold = ctx.question.meta.get("memory_type")
        called = ctx.recall_meta.get("memory_type")
        if not gold or not called:
            return None
        return float(str(called).lower() == str(gold).lower())
