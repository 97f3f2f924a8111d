"""Lexical (BM25) and dense (cosine) scores over the same texts, alone or blended.

The `bm25` and `embedding` agents are both this retriever with different weights:
``lexical=1, dense=0`` is plain BM25, ``lexical=0, dense=1`` plain cosine similarity.
With both weights set, each score is min-max scaled to [0, 1] before the weighted sum,
because BM25 scores are unbounded and cosines are not comparable to them.

``feedback`` adds pseudo-relevance feedback (Rocchio, as in RM3): the best document
is used as a second query and its scores, times ``feedback``, are added. Questions
often name one fact to reach another ("the person whose employer is X — what is their
job?"); the first hit names the person, and feedback brings the facts about them.

Dense vectors are computed lazily: ingestion only queues texts, and the queue is
embedded in one batch at the next search, which keeps ingestion cheap and lets the
embedder work on large batches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, cast

import numpy as np

from memplug.adapters.retrieval.bm25_index import BM25Index, top_k
from memplug.adapters.retrieval.dense_index import DenseIndex
from memplug.adapters.retrieval.embedders import Embedder, embed_batched, get_embedder

if TYPE_CHECKING:
    from memplug.llm import LLM


#: texts embedded per call when the queue is flushed (embed_batched's batch)
EMBED_BATCH = 4096


def _minmax(scores: np.ndarray) -> np.ndarray:
    if len(scores) == 0:
        return scores
    lo, hi = float(scores.min()), float(scores.max())
    if hi - lo < 1e-12:
        return np.zeros_like(scores) if hi <= 0 else np.ones_like(scores)
    return (scores - lo) / (hi - lo)


class Retriever:
    """Texts numbered 0, 1, 2 … in the order added, scored against a query by BM25, cosine or both."""

    def __init__(
        self,
        lexical: float = 1.0,
        dense: float = 0.0,
        feedback: float = 0.0,
        embedder: str = "wordllama",
        llm: "LLM | None" = None,
        ann_from: int = 0,
    ) -> None:
        if lexical < 0 or dense < 0 or lexical + dense <= 0:
            raise ValueError("retriever weights must be non-negative and not both zero")
        self.lexical, self.dense, self.feedback = lexical, dense, feedback
        self._texts: list[str] = []
        self._bm25 = BM25Index() if lexical > 0 else None
        self._embedder_name, self._llm = embedder, llm
        self._embedder: Embedder | None = None
        self._dense: DenseIndex | None = None
        self._pending = 0  # texts not embedded yet
        #: dense top-k is approximate from this many vectors on (0: always exact; DenseIndex)
        self.ann_from = ann_from

    def __len__(self) -> int:
        return len(self._texts)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self._embedder_name, self._llm)
        return self._embedder

    def add(self, texts: Sequence[str]) -> None:
        self._texts.extend(texts)
        if self._bm25 is not None:
            self._bm25.add(texts)
        self._pending += len(texts)

    def flush(self) -> None:
        """Embed the queued texts (dense part only); BM25 rebuilds itself on search."""
        if self.dense > 0 and self._pending:
            new = self._texts[len(self._texts) - self._pending :]
            # batch by batch into room reserved once: the vectors are never held twice
            # (a million messages: 1 GB of float32 rows, not 2 GB)
            for start in range(0, len(new), EMBED_BATCH):
                vectors = embed_batched(self.embedder, new[start : start + EMBED_BATCH])
                if self._dense is None:
                    self._dense = DenseIndex(vectors.shape[1], approximate_from=self.ann_from)
                if start == 0:
                    self._dense.reserve(len(self._dense) + len(new))
                self._dense.add(vectors)
        self._pending = 0

    def embed_query(self, text: str) -> np.ndarray:
        return cast(np.ndarray, self.embedder.embed([text])[0])

    def _scores(self, query: str) -> np.ndarray:
        if self.dense > 0:
            self.flush()
        blend = (self.lexical > 0) + (self.dense > 0) > 1 or self.feedback > 0
        total = np.zeros(len(self._texts), dtype=np.float32)
        if self._bm25 is not None:
            lex = self._bm25.scores(query)
            total += self.lexical * (_minmax(lex) if blend else lex)
        if self.dense > 0 and self._dense is not None:
            cos = self._dense.similarities(self.embed_query(query))
            total += self.dense * (_minmax(cos) if blend else cos)
        return total

    def scores(self, query: str) -> np.ndarray:
        """One score per text, higher is better."""
        if not self._texts:
            return np.zeros(0, dtype=np.float32)
        scores = self._scores(query)
        if self.feedback > 0:
            best = top_k(scores, 1)
            if best:
                scores = scores + self.feedback * self._scores(self._texts[best[0][0]]) / (self.lexical + self.dense)
        return scores

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top-k (text number, score), best first; always k results when k texts exist.

        Documents that share no word with the query still fill the list (in dataset
        order): a retriever asked for k memories returns k, like the seed's RetrMem.
        """
        if self._dense_only() and self._texts:
            self.flush()
            if self._dense is not None:  # the same list as below (0 + 1 * cosine is the cosine)
                return self._dense.search(self.embed_query(query), k)
        return top_k(self.scores(query), k, keep_zero=True)

    def _dense_only(self) -> bool:
        return self._bm25 is None and self.dense == 1.0 and self.feedback == 0

    def dense_candidates(self, query: str, k: int | None = None) -> tuple[np.ndarray | None, np.ndarray]:
        """Cosines of the query with the texts worth scoring (dense weight only): (None,
        every text's cosine) while the index is exact, else (rows, their exact cosines)
        of the rows the approximate index's first pass keeps for a top ``k`` (see
        DenseIndex.candidates)."""
        if not self._texts:
            return None, np.zeros(0, dtype=np.float32)
        self.flush()
        if self._dense is None:
            return None, np.zeros(len(self._texts), dtype=np.float32)
        return self._dense.candidates(self.embed_query(query), k)
