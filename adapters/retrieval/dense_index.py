"""Cosine scores over a growing set of unit vectors, in numpy.

Vectors are appended to a preallocated matrix that doubles when full, so adding is
amortised O(1) and scoring every vector is one matrix-vector product. The retrievers
need the score of every vector to blend, feed back and re-rank; those use
:meth:`DenseIndex.similarities`, always exact.

Plain top-k search (:meth:`search`) and the rows worth scoring (:meth:`candidates`)
are exact too, unless ``approximate_from`` is set (the dense agents' ``ann_from``
option; off by default): from that many vectors on they go through an inverted file
(:class:`_IVF`): the vectors are clustered by spherical k-means (on what is left of them
after their common mean), a query is compared with the centroids and only the vectors
of its ``probe`` nearest clusters are scored, exactly. Reading a million 256-dimension
rows costs ~100 ms a question (1 GB); the probed clusters are ~3% of that, at the cost
of missing some of the exact top k (measured in docs/performance.md).
"""

from __future__ import annotations

import numpy as np

from memplug.adapters.retrieval.bm25_index import top_k


#: clusters per vector (about sqrt(n) clusters of sqrt(n) vectors), within these bounds
_MIN_CLUSTERS, _MAX_CLUSTERS = 64, 2048
#: clusters a query reads (of sqrt(n)); ~3% of the vectors at a million
PROBE = 32
#: vectors k-means trains on (a strided sample), and its iterations
_TRAIN_SAMPLE, _TRAIN_ITERATIONS = 65_536, 10
#: rows assigned to clusters per matrix product (bounded memory)
_ASSIGN_BLOCK = 32_768


class _IVF:
    """Spherical k-means clusters over the rows of a matrix, with each row's cluster."""

    def __init__(self, vectors: np.ndarray, seed: int = 0) -> None:
        n = len(vectors)
        clusters = int(np.clip(round(np.sqrt(n)), _MIN_CLUSTERS, _MAX_CLUSTERS))
        sample = vectors[:: max(1, n // _TRAIN_SAMPLE)]
        # the rows share a large common direction (cosine ranks do not depend on it):
        # clusters are made of what is left, so that they part the rows by their differences
        self.mean = sample.mean(axis=0)
        sample = sample - self.mean
        rng = np.random.default_rng(seed)
        centroids = sample[rng.choice(len(sample), size=min(clusters, len(sample)), replace=False)].copy()
        for _ in range(_TRAIN_ITERATIONS):
            nearest = np.argmax(sample @ centroids.T, axis=1)
            order = np.argsort(nearest, kind="stable")
            used, starts = np.unique(nearest[order], return_index=True)
            sums = np.zeros_like(centroids)
            sums[used] = np.add.reduceat(sample[order], starts, axis=0)
            empty = ~np.any(sums, axis=1)
            sums[empty] = centroids[empty]  # an empty cluster keeps its centroid
            centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self.assigned = 0
        self.cluster = np.zeros(0, dtype=np.int32)  # each assigned row's cluster
        self._order = np.zeros(0, dtype=np.int64)  # rows grouped by cluster, ascending within one
        self._offsets = np.zeros(len(centroids) + 1, dtype=np.int64)
        self._grouped = 0  # rows in _order; later ones are looked up in `cluster` directly
        self.update(vectors)

    def update(self, vectors: np.ndarray) -> None:
        """Assign the rows added since the last call; regroup when a tenth are ungrouped."""
        n = len(vectors)
        if n > self.assigned:
            new = [np.argmax((vectors[i : i + _ASSIGN_BLOCK] - self.mean) @ self.centroids.T, axis=1).astype(np.int32)
                   for i in range(self.assigned, n, _ASSIGN_BLOCK)]
            self.cluster = np.concatenate([self.cluster[: self.assigned], *new])
            self.assigned = n
        if n - self._grouped > n // 10:
            self._order = np.argsort(self.cluster, kind="stable")
            np.cumsum(np.bincount(self.cluster, minlength=len(self.centroids)), out=self._offsets[1:])
            self._grouped = n

    def rows(self, query: np.ndarray, probe: int) -> np.ndarray:
        """The rows of the ``probe`` clusters nearest the query, ascending."""
        near = np.argsort(-(self.centroids @ query), kind="stable")[:probe]
        parts = [self._order[self._offsets[c] : self._offsets[c + 1]] for c in near.tolist()]
        if self.assigned > self._grouped:
            late = np.flatnonzero(np.isin(self.cluster[self._grouped :], near)) + self._grouped
            parts.append(late)
        return np.sort(np.concatenate(parts))


class DenseIndex:
    """Unit vectors of one dimension, rows numbered 0, 1, 2 … in the order they were added.

    ``approximate_from``: from this many vectors on, :meth:`search` and
    :meth:`candidates` score only the vectors of the query's nearest clusters (None or 0:
    always exact)."""

    def __init__(self, dim: int, approximate_from: int | None = None, probe: int = PROBE) -> None:
        self.dim = dim
        self._n = 0
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self.approximate_from = approximate_from or None
        self.probe = probe
        self._ivf: _IVF | None = None

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

    @property
    def approximate(self) -> bool:
        """True when search and candidates go through the clusters (from approximate_from vectors)."""
        return self.approximate_from is not None and self._n >= self.approximate_from

    def candidates(self, query: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """(rows, their cosines): every row (rows None) while exact, else the rows of the
        query's nearest clusters, ascending."""
        query = np.asarray(query, dtype=np.float32).reshape(self.dim)
        if not self.approximate:
            return None, self.similarities(query)
        vectors = self.vectors
        if self._ivf is None or 2 * self._ivf.assigned < self._n:  # (re)trained as the index doubles
            self._ivf = _IVF(vectors)
        else:
            self._ivf.update(vectors)
        rows = self._ivf.rows(query, self.probe)
        return rows, vectors[rows] @ query

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k (row, cosine), best first (ties: the earlier row)."""
        rows, scores = self.candidates(query)
        if rows is None:
            return top_k(scores, k, keep_zero=True)
        return [(int(rows[i]), s) for i, s in top_k(scores, k, keep_zero=True)]
