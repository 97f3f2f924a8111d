"""BM25 over token lists with weighted query terms, in numpy, rebuilt lazily.

The `hybrid` agent expands a query with weighted neighbour words (weight < 1), which
bm25s cannot score (its queries are sets of ids). Postings are kept per term; the
term-frequency factor of every posting is computed when a search finds documents added
since the last build, so an agent that ingests a history and then asks pays one build.
Scoring a query is one scatter-add per query term.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


class WeightedBM25:
    """Documents (token lists) numbered 0, 1, 2 … in the order added; Okapi BM25 with
    the Lucene idf, log(1 + (N - df + 0.5) / (df + 0.5))."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._docs: list[Sequence[str]] = []
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._built = -1

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, docs: Sequence[Sequence[str]]) -> None:
        self._docs.extend(docs)

    def replace(self, index: int, doc: Sequence[str]) -> None:
        """Replace document ``index`` (a turn whose context grew)."""
        self._docs[index] = doc
        self._built = -1

    def _build(self) -> None:
        n = len(self._docs)
        lengths = np.array([len(d) for d in self._docs], dtype=np.float64)
        avg = float(lengths.mean()) if n and lengths.sum() else 1.0
        norm = self.k1 * (1 - self.b + self.b * lengths / avg)
        raw: dict[str, tuple[list[int], list[int]]] = {}
        for i, doc in enumerate(self._docs):
            counts: dict[str, int] = {}
            for t in doc:
                counts[t] = counts.get(t, 0) + 1
            for t, c in counts.items():
                ids, tfs = raw.setdefault(t, ([], []))
                ids.append(i)
                tfs.append(c)
        postings = {}
        for t, (ids, tfs) in raw.items():
            ids_a, tf = np.array(ids), np.array(tfs, dtype=np.float64)
            idf = np.log(1 + (n - len(ids) + 0.5) / (len(ids) + 0.5))
            postings[t] = (ids_a, idf * tf * (self.k1 + 1) / (tf + norm[ids_a]))
        self._postings, self._built = postings, n

    def scores(self, query: Mapping[str, float]) -> np.ndarray:
        """BM25 score of every document for {term: weight}."""
        if self._built != len(self._docs):
            self._build()
        out = np.zeros(len(self._docs), dtype=np.float64)
        for term, weight in query.items():
            posting = self._postings.get(term)
            if posting is not None:
                out[posting[0]] += weight * posting[1]
        return out
