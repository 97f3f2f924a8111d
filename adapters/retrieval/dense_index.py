"""Cosine top-k over a growing set of unit vectors: numpy, or faiss when installed.

Vectors are appended to a preallocated matrix that doubles when full, so adding is
amortised O(1) and a search is one matrix-vector product. faiss (IndexFlatIP, exact
inner product) is used instead when it is importable and ``use_faiss`` allows it.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from memplug.adapters.retrieval.bm25_index import top_k


def faiss_available() -> bool:
    return importlib.util.find_spec("faiss") is not None


class DenseIndex:
    def __init__(self, dim: int, use_faiss: bool | None = None) -> None:
        self.dim = dim
        self._n = 0
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._faiss = None
        if use_faiss is None:
            use_faiss = faiss_available()
        if use_faiss:
            import faiss

            self._faiss = faiss.IndexFlatIP(dim)

    def __len__(self) -> int:
        return self._n

    def add(self, vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        if self._faiss is not None:
            self._faiss.add(vectors)
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
        if self._n == 0 or k <= 0:
            return []
        if self._faiss is not None:
            scores, rows = self._faiss.search(np.asarray(query, dtype=np.float32).reshape(1, self.dim), min(k, self._n))
            return [(int(r), float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]
        return top_k(self.similarities(query), k, keep_zero=True)
