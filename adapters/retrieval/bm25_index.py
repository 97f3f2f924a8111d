"""A BM25 index over a growing list of texts, on bm25s, with lazy re-indexing.

bm25s builds a static index: adding one document means building it again. Building
after every ingested chunk would make ingestion quadratic, so texts are tokenized
once when added (their token ids are kept) and the bm25s index is rebuilt from those
ids only when a search finds documents added since the last build. An agent that
ingests a whole history and then answers questions pays for one build.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import bm25s
import numpy as np

from memplug.adapters.retrieval.tokenizer import tokenize

# bm25s logs at INFO on every build; keep runs quiet
logging.getLogger("bm25s").setLevel(logging.WARNING)


class BM25Index:
    """Documents are numbered 0, 1, 2 … in the order they were added."""

    def __init__(self, tokenizer: Callable[[str], list[str]] = tokenize, k1: float = 1.5, b: float = 0.75) -> None:
        self._tokenizer = tokenizer
        self._k1, self._b = k1, b
        self._vocab: dict[str, int] = {}
        self._docs: list[list[int]] = []
        self._retriever: bm25s.BM25 | None = None
        self._built = 0

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, texts: Sequence[str]) -> None:
        vocab = self._vocab
        for text in texts:
            self._docs.append([vocab.setdefault(tok, len(vocab)) for tok in self._tokenizer(text)])

    def _ensure_built(self) -> bm25s.BM25:
        if self._retriever is None or self._built != len(self._docs):
            retriever = bm25s.BM25(k1=self._k1, b=self._b)
            # the empty token lets bm25s index documents that have no tokens at all
            vocab = dict(self._vocab)
            vocab[""] = len(vocab)
            docs = [ids or [vocab[""]] for ids in self._docs]
            retriever.index((docs, vocab), show_progress=False, create_empty_token=False)
            self._retriever, self._built = retriever, len(self._docs)
        return self._retriever

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for the query (zeros for an empty index)."""
        if not self._docs:
            return np.zeros(0, dtype=np.float32)
        retriever = self._ensure_built()
        ids = sorted({self._vocab[t] for t in self._tokenizer(query) if t in self._vocab})
        if not ids:
            return np.zeros(len(self._docs), dtype=np.float32)
        return retriever.get_scores_from_ids(ids)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top-k (document number, score), best first; documents scoring 0 are left out."""
        return top_k(self.scores(query), k)


def top_k(scores: np.ndarray, k: int, keep_zero: bool = False) -> list[tuple[int, float]]:
    """Indices and values of the k largest scores, best first (ties: earlier index first)."""
    n = len(scores)
    if n == 0 or k <= 0:
        return []
    k = min(k, n)
    part = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    order = part[np.lexsort((part, -scores[part]))]
    return [(int(i), float(scores[i])) for i in order if keep_zero or scores[i] > 0]
