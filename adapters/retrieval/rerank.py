"""PerLTQA re-ranking (seed 001, Eq. 3): retrieve per memory type, re-score by type fit.

The question is classified as semantic or episodic (pi = MC(q), Eq. 1); k memories are
retrieved from each type (2k candidates), and each candidate m_i is re-scored

    s'_i = alpha * P(pi | m_i) + beta * sigmoid(s_i),   alpha = beta = 0.5,

where P(pi | m_i) is the classifier's confidence that m_i is of the question's type
and s_i its retrieval score. The top k of the re-scored candidates are returned.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from memplug.adapters.retrieval.bm25_index import top_k
from memplug.adapters.retrieval.memory_types import EPISODIC, classify, episodic_probability

ALPHA = 0.5
BETA = 0.5


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


class PerLTQAReranker:
    """Keeps P(episodic | m) per stored memory, so each memory is classified once."""

    def __init__(self, alpha: float = ALPHA, beta: float = BETA) -> None:
        self.alpha, self.beta = alpha, beta
        self._p_episodic: list[float] = []

    def add(self, texts: Sequence[str], metas: Sequence[Mapping[str, Any]]) -> None:
        self._p_episodic.extend(episodic_probability(t, m) for t, m in zip(texts, metas))

    def rerank(self, question: str, scores: np.ndarray, k: int, pi: str | None = None) -> list[tuple[int, float]]:
        """Top k (memory number, s') from k candidates of each type; ``pi`` is the
        question's type when the caller already classified it."""
        pi = pi or classify(question)[0]
        p_epi = np.asarray(self._p_episodic[: len(scores)], dtype=np.float32)
        is_epi = p_epi > 0.5
        candidates: list[int] = []
        for mask in (is_epi, ~is_epi):
            masked = np.where(mask, scores, -np.inf)
            candidates += [i for i, s in top_k(masked, k, keep_zero=True) if np.isfinite(s)]
        fit = p_epi if pi == EPISODIC else 1.0 - p_epi
        rescored = np.full(len(scores), -np.inf, dtype=np.float64)
        for i in candidates:
            rescored[i] = self.alpha * float(fit[i]) + self.beta * _sigmoid(float(scores[i]))
        return [(i, s) for i, s in top_k(rescored, k, keep_zero=True) if np.isfinite(s)]
