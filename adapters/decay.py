"""`decay`: human-like recall and consolidation (Hou et al., CHI EA '24; seed 003).

Each memory (one message) keeps a consolidation g_n (g_0 = 1) and the time it was last
recalled (or stored). For a question, with r the cosine similarity of question and
memory and t the elapsed time divided by ``time_scale``:

    p_n(t) = (1 - exp(-r * e^(-t / g_n))) / (1 - e^(-1))            (Eq. 8)

A memory is recalled when p exceeds ``threshold`` (0.86 in the seed); recalled memories
are ranked by p and capped at top-k. Each recalled memory is consolidated,

    g_n = g_(n-1) + S(t),   S(t) = (1 - e^(-t)) / (1 + e^(-t))            (Eq. 9)

and its last-recall time becomes the question's time. Time comes only from the
dataset's timestamps (a message's ``time``, the question's ``time``), never the wall
clock; a question without a time is taken to be asked at the newest memory's time, and
a memory without a time at the question's (elapsed time 0).

The default time scale, 1e7 seconds, is the one that reproduces the four scores of the
seed's Table 1 (tests/test_decay.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from memplug.adapters.retrieval.agent import ANN_OPTION
from memplug.adapters.retrieval.embedders import is_remote
from memplug.adapters.retrieval.message_log import MessageLog
from memplug.adapters.retrieval.retriever import Retriever
from memplug.adapters.retrieval.timestamps import parse_time
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, Chunk, Recall, StoredItem
from memplug.options import Option, resolve
from memplug.protocols import AgentConfig

_NORM = 1.0 - math.exp(-1.0)


def recall_probability(r: float | np.ndarray, t: float | np.ndarray, g: float | np.ndarray) -> np.ndarray:
    """p_n(t) of Eq. 8: relevance r, scaled elapsed time t, consolidation g."""
    return (1.0 - np.exp(-np.asarray(r) * np.exp(-np.asarray(t) / np.asarray(g)))) / _NORM


def consolidation_gain(t: float | np.ndarray) -> np.ndarray:
    """S(t) of Eq. 9, the growth of g at each recall after scaled elapsed time t."""
    t = np.asarray(t, dtype=np.float64)
    return (1.0 - np.exp(-t)) / (1.0 + np.exp(-t))


class DecayAgent:
    """Human-like recall and consolidation (seed 003): memories recalled above a probability, then reinforced."""

    options = (
        Option("threshold", float, 0.86, "recall a memory when its recall probability exceeds this"),
        Option("time_scale", float, 1e7, "seconds per unit of t in p_n(t) and S(t)"),
        ANN_OPTION,
    )

    blocking = False  # see RetrievalAgent.blocking

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.blocking = is_remote(config.embedder)
        opts = resolve(self.options, config.options, "decay")
        self.threshold, self.time_scale = opts["threshold"], opts["time_scale"]
        if self.time_scale <= 0:
            raise MemplugError(f"decay: time_scale must be positive, got {self.time_scale}")
        self.top_k = config.top_k
        # r is the plain cosine (dense weight 1, nothing blended); messages are embedded
        # lazily, in one batch at the next question
        self.retriever = Retriever(0.0, 1.0, embedder=config.embedder, llm=config.llm, ann_from=opts["ann_from"])
        self.retriever.embedder  # loaded now: an unknown --embedder fails when the agent is built
        self.log = MessageLog()
        self._stored: list[float] = []  # seconds; NaN when the message had no time
        self.g = np.zeros(0)
        self.last = np.zeros(0)

    def ingest(self, chunk: Chunk) -> None:
        entries = self.log.add(chunk)
        self.retriever.add([e.text for e in entries])
        self._stored.extend(np.nan if (s := parse_time(e.time)) is None else s for e in entries)

    def _sync(self) -> None:
        """Give new memories g_0 = 1 and last = their stored time."""
        n = len(self.log)
        if len(self.g) < n:
            self.g = np.concatenate([self.g, np.ones(n - len(self.g))])
            self.last = np.concatenate([self.last, np.asarray(self._stored[len(self.last) : n])])

    def recall(self, question: AgentQuestion) -> Recall:
        self._sync()
        if not len(self.log):
            return Recall(())
        rows, relevance = self.retriever.dense_candidates(question.text, self.top_k)
        now = parse_time(question.time)
        if now is None:
            known = self.last[~np.isnan(self.last)]
            now = float(known.max()) if len(known) else 0.0
        # p_n(t) <= p_n(0) = (1 - e^-r) / (1 - e^-1): only memories with r > _min_relevance
        # can be recalled, so p is computed for those alone (a million memories: a few)
        floor = self._min_relevance()
        if floor is not None:
            keep = np.flatnonzero(relevance > floor)
            rows = keep if rows is None else rows[keep]
            relevance = relevance[keep]
        if rows is None:
            rows = np.arange(len(relevance))
        last = self.last[rows]
        last = np.where(np.isnan(last), now, last)
        # time runs forward only: a memory stamped after the question counts as fresh
        elapsed = np.maximum(now - last, 0.0) / self.time_scale
        p = recall_probability(np.maximum(relevance, 0.0), elapsed, self.g[rows])
        above = np.flatnonzero(p > self.threshold)
        picked = above[np.argsort(-p[above], kind="stable")][: self.top_k]
        chosen = rows[picked]
        self.g[chosen] += consolidation_gain(elapsed[picked])
        self.last[chosen] = now
        return Recall(tuple(self.log.item(int(i), float(p[j])) for i, j in zip(chosen, picked)))

    def _min_relevance(self) -> float | None:
        """A relevance at or below which p cannot exceed the threshold (with a margin far
        above rounding), or None when every memory must be scored (threshold < 0, where
        even r = 0 is recalled, or p_n(0) cannot reach it)."""
        bound = self.threshold * _NORM
        if self.threshold < 0 or bound >= 1.0:
            return None
        return -math.log1p(-bound) - 1e-6

    def stored(self) -> list[StoredItem]:
        """Every ingested message; nothing is forgotten, only recalled less likely."""
        return self.log.stored()

    def close(self) -> None:
        """Everything lives in memory; nothing to release."""
