"""A BM25 index over a growing list of texts, with lazy re-indexing in numpy.

BM25's idf and average length change with every document, so the index is static:
adding documents means building it again. Building after every ingested chunk would
make ingestion quadratic, so texts are tokenized once when added (their token ids are
appended to one flat array) and the index is rebuilt from those ids only when a search
finds documents added since the last build. An agent that ingests a whole history and
then answers questions pays for one build.

The index is bm25s's (``method="lucene"``, k1 = 1.5, b = 0.75, float32 scores in a
term-major sparse matrix), built with whole-array numpy operations instead of bm25s's
loop over documents: the same numbers bit for bit (tests/test_retrieval.py compares
them with bm25s), about ten times faster, and in flat arrays rather than a Python list
per document, which is what lets it reach millions of messages.
"""

from __future__ import annotations

import math
from array import array
from typing import Callable, Sequence

import numpy as np

from memplug.adapters.retrieval.tokenizer import tokenize


class BM25Index:
    """Documents are numbered 0, 1, 2 … in the order they were added."""

    def __init__(self, tokenizer: Callable[[str], list[str]] = tokenize, k1: float = 1.5, b: float = 0.75) -> None:
        self._tokenizer = tokenizer
        self._k1, self._b = k1, b
        self._vocab: dict[str, int] = {}
        self._tokens = array("i")  # every document's token ids, one after the other
        self._lengths = array("i")  # tokens per document
        # the built index: term t's postings are indices/data[indptr[t]:indptr[t + 1]]
        self._data = np.zeros(0, dtype=np.float32)
        self._indices = np.zeros(0, dtype=np.int32)
        self._indptr = np.zeros(1, dtype=np.int64)
        self._built = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, texts: Sequence[str]) -> None:
        vocab, tokens, lengths = self._vocab, self._tokens, self._lengths
        for text in texts:
            ids = [vocab.setdefault(tok, len(vocab)) for tok in self._tokenizer(text)]
            tokens.extend(ids)
            lengths.append(len(ids))

    def _build(self) -> None:
        """bm25s's ``BM25(method="lucene").index((ids, vocab))``, vectorised.

        As there, a document without tokens holds one empty token (id ``len(vocab)``),
        so it has a length of 1 and can be indexed.
        """
        n, k1, b = len(self._lengths), self._k1, self._b
        n_vocab = len(self._vocab) + 1  # + the empty token
        lengths = np.array(self._lengths, dtype=np.int64)
        tokens = np.array(self._tokens, dtype=np.int64)
        docs = np.repeat(np.arange(n, dtype=np.int64), lengths)
        empty = np.flatnonzero(lengths == 0)
        if len(empty):
            tokens = np.concatenate([tokens, np.full(len(empty), n_vocab - 1, dtype=np.int64)])
            docs = np.concatenate([docs, empty])
            lengths[empty] = 1
        avg_len = lengths.mean()
        # (term, document) pairs sorted term-major: the order of the sparse matrix
        pairs, tf = np.unique(tokens * n + docs, return_counts=True)
        del tokens, docs
        terms, rows = np.divmod(pairs, n)
        df = np.bincount(terms, minlength=n_vocab)
        # idf in Python floats (math.log), stored as float32, as bm25s computes it
        idf = np.zeros(n_vocab, dtype=np.float32)
        for t in np.flatnonzero(df).tolist():
            d = int(df[t])
            idf[t] = math.log(1 + (n - d + 0.5) / (d + 0.5))
        # tf / (k1 * (1 - b + b * len / avg) + tf) in float64, times idf, kept as float32
        norm = k1 * ((1 - b) + b * lengths.astype(np.float64) / avg_len)
        tf = tf.astype(np.float64)
        data = (idf[terms].astype(np.float64) * (tf / (norm[rows] + tf))).astype(np.float32)
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        self._data, self._indices, self._indptr = data, rows.astype(np.int32), indptr
        self._built = n

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for the query (zeros for an empty index)."""
        n = len(self._lengths)
        if not n:
            return np.zeros(0, dtype=np.float32)
        if self._built != n:
            self._build()
        ids = sorted({self._vocab[t] for t in self._tokenizer(query) if t in self._vocab})
        out = np.zeros(n, dtype=np.float32)
        indptr, indices, data = self._indptr, self._indices, self._data
        for t in ids:  # a term's postings name each document once: a plain indexed add
            start, end = indptr[t], indptr[t + 1]
            out[indices[start:end]] += data[start:end]
        return out

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top-k (document number, score), best first; documents scoring 0 are left out."""
        return top_k(self.scores(query), k)


#: from this many scores on, top_k takes the k best without partitioning everything
_LONG = 32_768
_SAMPLE = 4_096


def top_k(scores: np.ndarray, k: int, keep_zero: bool = False) -> list[tuple[int, float]]:
    """Indices and values of the k largest scores, best first (ties: earlier index first).

    On long arrays (a memory of 32,768 items or more) the k best are found among the
    scores at least as high as the k-th best of a strided sample, which include them,
    and of scores tied at the k-th place the earliest are kept. Shorter arrays go
    through ``np.argpartition``, whose pick among scores tied at the k-th place is its
    own (it is kept there so that results on the datasets measured so far do not move).
    """
    n = len(scores)
    if n == 0 or k <= 0:
        return []
    k = min(k, n)
    if n >= _LONG:
        order = _top_k_long(scores, k)
    else:
        part = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        order = part[np.lexsort((part, -scores[part]))]
    return [(int(i), float(scores[i])) for i in order if keep_zero or scores[i] > 0]


def _top_k_long(scores: np.ndarray, k: int) -> np.ndarray:
    """The first k of all indices ordered by (score descending, index); NaN counts as lowest."""
    if k == 1:
        best = int(np.argmax(scores))  # the first of the highest
        if not np.isnan(scores[best]):
            return np.array([best])
    sample = scores[:: max(1, len(scores) // _SAMPLE)]
    if len(sample) > k:
        threshold = np.partition(sample, len(sample) - k)[len(sample) - k]
        if np.isfinite(threshold):
            candidates = np.flatnonzero(scores >= threshold)
            if len(candidates) <= len(scores) // 8:
                return candidates[np.lexsort((candidates, -scores[candidates]))[:k]]
    # most scores are candidates (e.g. a list filled with zeros): the k-th value, the
    # scores above it, then the earliest of those equal to it
    if np.isnan(scores).any():
        scores = np.where(np.isnan(scores), -np.inf, scores)
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    above = np.flatnonzero(scores > kth)
    chosen = np.concatenate([above, np.flatnonzero(scores == kth)[: k - len(above)]])
    return chosen[np.lexsort((chosen, -scores[chosen]))]
