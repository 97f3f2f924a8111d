"""Cosine scores over a growing set of unit vectors, in numpy.

Vectors are appended to a preallocated matrix that doubles when full, so adding is
amortised O(1) and scoring every vector is one matrix-vector product. The retrievers
need the score of every vector to blend, feed back and re-rank; those use
:meth:`DenseIndex.similarities`, always exact.

Plain top-k search (:meth:`search`) and the rows worth scoring (:meth:`candidates`)
are exact too, unless ``approximate_from`` is set (the dense agents' ``ann_from``
option; off by default): from that many vectors on they search in two stages
(:class:`_SignCodes`). Every vector is also kept as one bit per dimension, the sign of
what is left of it after the vectors' common mean (32 bytes for 256 dimensions); a
query's first pass is the Hamming distance from its own signs to every row's (XOR and
popcount on uint64 words: 32 MB read at a million rows, where the float32 rows are 1
GB), and the ``max(MIN_CANDIDATES, CANDIDATES_PER_K * k)`` nearest rows (with the rows
tied at the last distance) are then scored by exact float32 cosine (the same product
as :meth:`similarities` on those rows; a BLAS may sum a subset in another order, so the
last bit can differ). A row of the exact top k is missed only when its signs are
farther than the candidates' (measured in docs/performance.md: at a million messages
99.8% of the exact top 5, ~7 ms a question, where exact cosine takes ~100 ms).
"""

from __future__ import annotations

from typing import cast

import numpy as np

from memplug.adapters.retrieval.bm25_index import top_k


#: rows the first (Hamming) pass keeps: at least this many, and this many per result asked
MIN_CANDIDATES, CANDIDATES_PER_K = 1000, 200
#: rows encoded per block (bounded temporary memory); rows rescored per matrix product
#: (below the size where the BLAS library starts threads, which on a busy machine wait)
_BLOCK, _RESCORE_BLOCK = 65_536, 1024
#: vectors the common mean is taken over (a strided sample)
_MEAN_SAMPLE = 65_536
#: set bits of each byte value, for numpy < 2.0 (no np.bitwise_count)
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(axis=1).astype(np.uint8)


def popcount(words: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (uint8): np.bitwise_count where numpy has it (2.0 on)."""
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        return cast(np.ndarray, count(words))
    return cast(np.ndarray, _BYTE_BITS[words.view(np.uint8)].reshape(len(words), 8).sum(axis=1, dtype=np.uint8))


class _SignCodes:
    """The sign bits of each row minus the rows' mean, stored word by word (one uint64
    array per 64 dimensions, so that the distance is summed over a few long arrays)."""

    def __init__(self, vectors: np.ndarray) -> None:
        n, dim = vectors.shape
        self.mean = vectors[:: max(1, n // _MEAN_SAMPLE)].mean(axis=0, dtype=np.float64).astype(np.float32)
        self.words = -(-dim // 64)
        self.encoded = 0
        self._codes = np.zeros((self.words, 0), dtype=np.uint64)
        self.update(vectors)

    def encode(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows), words) uint64: the signs of rows - mean, zero-padded to whole words."""
        bits = np.packbits((rows - self.mean) > 0, axis=1)
        padded = np.zeros((len(rows), self.words * 8), dtype=np.uint8)
        padded[:, : bits.shape[1]] = bits
        return padded.view(np.uint64)

    def update(self, vectors: np.ndarray) -> None:
        """Encode the rows added since the last call."""
        n = len(vectors)
        if n <= self.encoded:
            return
        if n > self._codes.shape[1]:
            grown = np.zeros((self.words, max(n, 2 * self._codes.shape[1])), dtype=np.uint64)
            grown[:, : self.encoded] = self._codes[:, : self.encoded]
            self._codes = grown
        for i in range(self.encoded, n, _BLOCK):
            block = vectors[i : min(i + _BLOCK, n)]
            self._codes[:, i : i + len(block)] = self.encode(block).T
        self.encoded = n

    def nearest(self, query: np.ndarray, count: int) -> np.ndarray:
        """The rows whose signs are nearest the query's: the ``count`` nearest and those
        tied with the last of them (at most 4 * count; ties beyond that: the earlier
        rows), ascending."""
        n = self.encoded
        q = self.encode(query.reshape(1, -1))[0]
        distance = np.zeros(n, dtype=np.uint16)
        for w in range(self.words):
            distance += popcount(self._codes[w, :n] ^ q[w])
        reached = np.cumsum(np.bincount(distance, minlength=64 * self.words + 1))
        cut = int(np.searchsorted(reached, count))  # the distance at which `count` rows are reached
        if reached[cut] <= 4 * count:
            return np.flatnonzero(distance <= cut)
        inside = np.flatnonzero(distance < cut)
        tied = np.flatnonzero(distance == cut)[: count - len(inside)]
        return np.sort(np.concatenate([inside, tied]))


class DenseIndex:
    """Unit vectors of one dimension, rows numbered 0, 1, 2 … in the order they were added.

    ``approximate_from``: from this many vectors on, :meth:`search` and
    :meth:`candidates` score exactly only the rows whose sign bits are nearest the
    query's (None or 0: always exact). ``min_candidates`` and ``candidates_per_k``: how
    many rows the first pass keeps (see the module docstring)."""

    def __init__(
        self,
        dim: int,
        approximate_from: int | None = None,
        min_candidates: int = MIN_CANDIDATES,
        candidates_per_k: int = CANDIDATES_PER_K,
    ) -> None:
        self.dim = dim
        self._n = 0
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self.approximate_from = approximate_from or None
        self.min_candidates, self.candidates_per_k = min_candidates, candidates_per_k
        self._codes: _SignCodes | None = None

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
        """True when search and candidates go through the sign bits (from approximate_from vectors)."""
        return self.approximate_from is not None and self._n >= self.approximate_from

    def candidates(self, query: np.ndarray, k: int | None = None) -> tuple[np.ndarray | None, np.ndarray]:
        """(rows, their cosines): every row (rows None) while exact, else the rows the
        sign bits put nearest the query (enough for a top ``k``; None: the minimum),
        ascending, with their exact cosines."""
        query = np.asarray(query, dtype=np.float32).reshape(self.dim)
        count = max(self.min_candidates, self.candidates_per_k * (k or 0))
        if not self.approximate or count >= self._n:
            return None, self.similarities(query)
        vectors = self.vectors
        if self._codes is None or 2 * self._codes.encoded < self._n:  # a new mean as the index doubles
            self._codes = _SignCodes(vectors)
        else:
            self._codes.update(vectors)
        rows = self._codes.nearest(query, count)
        # in blocks small enough that the BLAS does not start threads (which, on a busy
        # machine, wait for a core: 2,000 rows took 8 ms, 1,000 rows 0.06 ms)
        scores = np.concatenate(
            [vectors[rows[i : i + _RESCORE_BLOCK]] @ query for i in range(0, len(rows), _RESCORE_BLOCK)]
        )
        return rows, scores

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k (row, cosine), best first (ties: the earlier row)."""
        rows, scores = self.candidates(query, k)
        if rows is None:
            return top_k(scores, k, keep_zero=True)
        return [(int(rows[i]), s) for i, s in top_k(scores, k, keep_zero=True)]
