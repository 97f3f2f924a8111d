"""Cosine scores over a growing set of unit vectors, in numpy.

Vectors are appended to a preallocated matrix that doubles when full, so adding is
amortised O(1) and scoring every vector is one matrix-vector product. The retrievers
need the score of every vector (to blend, feed back and re-rank), so there is no
approximate or top-k-only index behind it.
"""

from __future__ import annotations

import numpy as np

from memplug.adapters.retrieval.bm25_index import top_k


class DenseIndex:
    """Unit vectors of one dimension, rows numbered 0, 1, 2 … in the order they were added."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._n = 0
        self._matrix = np.zeros((0, dim), dtype=np.float32)

    def __len__(self) -> int:
        return self._n

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` vectors in all, allocated once (a caller that knows how many
        are coming avoids the doubling's copy and its spare half)."""
        if rows > len(self._matrix):
            grown = np.zeros((rows, self.dim), dtype=np.float32)
            grown[: self._n] = self._matrix[: self._n]
            self._matrix = grown

    def add(self, vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        need = self._n + len(vectors)
        if need > len(self._matrix):
            grown = np.zeros((max(need, 2 * len(self._matrix), 64), self.dim), dtype=np.float32)
            grown[: self._n] = self._matrix[: self._n]
            self._matrix = grown
        self._matrix[self._n : need] = vectors
        self._n = need

    @property
    def vectors(self) -> np.ndarray:
        """The stored vectors (a view, rows in insertion order)."""
        return self._matrix[: self._n]

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of the (unit) query with every stored vector."""
        return self.vectors @ np.asarray(query, dtype=np.float32).reshape(self.dim)

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k (row, cosine), best first."""
        return top_k(self.similarities(query), k, keep_zero=True)
