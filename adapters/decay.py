"""`decay`: human-like recall and consolidation (Hou et al., CHI EA '24; seed 003).

Each memory (one message) keeps a consolidation g_n (g_0 = 1) and the time it was last
recalled (or stored). For a question, with r the memory's relevance (below) and t the
elapsed time divided by ``time_scale``:

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

Relevance. The seed takes r to be the cosine of its embedder, and its threshold (0.86
at t = 0 needs r > 0.784) was set for that embedder's scale. Cosines are not comparable
across embedders: wordllama gives the best match of a MemSim question a median cosine
of 0.44, and every message of a Chinese MemDaily trajectory 0.5 to 0.77, so with the
raw cosine this agent recalled nothing on either (recall@5 0.000 and 0.003). By default
(``relevance=rank``) r is therefore calibrated by rank: the memories are ordered by
cosine for the question (ties in dataset order), and the i-th gets

    r_i = max(0, 1 - (i - 1) * RANK_STEP / top_k)

so the best match is a perfect cue (r = 1, as in the seed's normalisation of p) and each
further top-k of rank costs ``RANK_STEP`` (0.1) of relevance, whatever the embedder and
its language. Fresh (t = 0), about the first 2.2 top-ks clear the seed's threshold, and
the p-ranking is then the cosine ranking, as the embedding agent's; what is left to the
model is its own part, time: unrecalled memories fade (at the defaults the best match
of a question stays recallable for 28 days after its last recall, the 5th of a top 5
for 18.5), and every recall resets the clock and grows g. ``relevance=cosine`` is the seed's
raw cosine (seed-exact). docs/agents/decay.md has the figures.
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
#: relevance the rank calibration takes off per top-k of rank (see the module docstring)
RANK_STEP = 0.1


def recall_probability(r: float | np.ndarray, t: float | np.ndarray, g: float | np.ndarray) -> np.ndarray:
    """p_n(t) of Eq. 8: relevance r, scaled elapsed time t, consolidation g."""
    p: np.ndarray = (1.0 - np.exp(-np.asarray(r) * np.exp(-np.asarray(t) / np.asarray(g)))) / _NORM
    return p


def consolidation_gain(t: float | np.ndarray) -> np.ndarray:
    """S(t) of Eq. 9, the growth of g at each recall after scaled elapsed time t."""
    t = np.asarray(t, dtype=np.float64)
    gain: np.ndarray = (1.0 - np.exp(-t)) / (1.0 + np.exp(-t))
    return gain


def rank_relevance(cosine: np.ndarray, top_k: int, keep: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(positions, r) of the ``keep`` best memories by cosine (every one when None), best
    first, ties in the order given, with r_i = max(0, 1 - (i - 1) * RANK_STEP / top_k)."""
    cosine = np.asarray(cosine)
    n = len(cosine)
    keep = n if keep is None else min(keep, n)
    if keep < n:
        # only the rows at or above the keep-th largest cosine can rank among the first keep
        kth = np.partition(cosine, n - keep)[n - keep] if keep else np.inf
        pool = np.flatnonzero(cosine >= kth)
    else:
        pool = np.arange(n)
    order = pool[np.lexsort((pool, -cosine[pool]))][:keep]
    return order, np.maximum(0.0, 1.0 - np.arange(len(order)) * (RANK_STEP / top_k))


class DecayAgent:
    """Human-like recall and consolidation (seed 003): memories recalled above a probability, then reinforced."""

    options = (
        Option("threshold", float, 0.86, "recall a memory when its recall probability exceeds this"),
        Option("time_scale", float, 1e7, "seconds per unit of t in p_n(t) and S(t)"),
        Option(
            "relevance",
            str,
            "rank",
            "r in p_n(t): rank (calibrated by cosine rank, any embedder) or cosine (the seed's raw cosine)",
            choices=("rank", "cosine"),
        ),
        ANN_OPTION,
    )

    blocking = False  # see RetrievalAgent.blocking

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.blocking = is_remote(config.embedder)
        opts = resolve(self.options, config.options, "decay")
        self.threshold, self.time_scale = opts["threshold"], opts["time_scale"]
        self.relevance: str = opts["relevance"]
        if self.time_scale <= 0:
            raise MemplugError(f"decay: time_scale must be positive, got {self.time_scale}")
        self.top_k = config.top_k
        # the cosine behind r is the plain dense retriever's (weight 1, nothing blended);
        # messages are embedded lazily, in one batch at the next question
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
        rows, relevance = self._relevance(question.text)
        now = parse_time(question.time)
        if now is None:
            known = self.last[~np.isnan(self.last)]
            now = float(known.max()) if len(known) else 0.0
        last = self.last[rows]
        last = np.where(np.isnan(last), now, last)
        # time runs forward only: a memory stamped after the question counts as fresh
        elapsed = np.maximum(now - last, 0.0) / self.time_scale
        p = recall_probability(relevance, elapsed, self.g[rows])
        above = np.flatnonzero(p > self.threshold)
        picked = above[np.argsort(-p[above], kind="stable")][: self.top_k]
        chosen = rows[picked]
        self.g[chosen] += consolidation_gain(elapsed[picked])
        self.last[chosen] = now
        return Recall(tuple(self.log.item(int(i), float(p[j])) for i, j in zip(chosen, picked)))

    def _relevance(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, r) of the memories that can be recalled for ``query``, r clipped at 0.

        p_n(t) <= p_n(0) = (1 - e^-r) / (1 - e^-1): only memories with r above
        :meth:`_min_relevance` can be recalled, so p is computed for those alone (a
        million memories: a few); by rank, those are the first ceil((1 - floor) * top_k /
        RANK_STEP).
        """
        rows, cosine = self.retriever.dense_candidates(query, self.top_k)
        if rows is None:
            rows = np.arange(len(cosine))
        floor = self._min_relevance()
        if self.relevance == "rank":
            keep = None if floor is None else max(0, math.ceil((1.0 - floor) * self.top_k / RANK_STEP))
            picked, relevance = rank_relevance(cosine, self.top_k, keep)
            return rows[picked], relevance
        relevance = np.maximum(cosine, 0.0)
        if floor is None:
            return rows, relevance
        keep_rows = np.flatnonzero(relevance > floor)
        return rows[keep_rows], relevance[keep_rows]

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
