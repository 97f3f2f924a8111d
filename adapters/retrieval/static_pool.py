"""WordLlama's ``embed()`` without its padding, the same float32 rows bit for bit.

WordLlama tokenizes each batch with padding (every text as long as the batch's longest),
gathers a (texts x longest x dim) array of token vectors, masks it and sums it: on short
messages about 60% of the work is padding, and the tokenizer (a Llama SentencePiece BPE
run over each whole sentence: there is no pre-tokenizer, so its word cache never hits)
costs ~20 us a message. Here:

- **Tokens through a word cache.** The tokenizer normalises by prepending "▁" and
  replacing spaces with "▁", and no token of the vocabulary (nor any merge) holds a "▁"
  after another character, so BPE never merges across the start of a "▁"-prefixed word:
  a text's tokens are its words' tokens, one after the other. Each distinct word is
  tokenized once (by the model's own BPE, in one batch); texts are then lists of cached
  ids. :func:`splits_at_words` checks the property on the loaded vocabulary and merges:
  a tokenizer without it (or a text holding a special token such as ``<s>``) goes
  through the tokenizer as a whole.
- **Sums in WordLlama's order.** Its masked ``np.sum`` adds a text's token vectors one
  after the other (padding adds zeros), so the same sequential float32 sum, done position
  by position over texts sorted by length (only the texts still that long take part),
  and divided by the token count as float32, is the same row (tests/test_retrieval.py
  compares them with ``WordLlama.embed``). ``np.add.reduceat`` would be shorter but
  adds in another order (last bits differ).
- **Repeated texts once.** Identical texts in a batch are embedded once.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

import numpy as np

_SPACE = "▁"
#: a word: "▁"s then other characters; or a trailing run of "▁"s
_WORD = re.compile(f"{_SPACE}*[^{_SPACE}]+|{_SPACE}+")
#: distinct words kept (ids per word); cleared when full
MAX_WORDS = 1_000_000


def splits_at_words(tokenizer_json: dict[str, Any]) -> bool:
    """True when the tokenizer is the one this module reproduces: Prepend "▁" + Replace " "
    -> "▁" normalisation, no pre-tokenizer, BPE without dropout whose vocabulary and merges
    never put "▁" after another character (so BPE never crosses a word's start)."""
    model = tokenizer_json.get("model") or {}
    norm = tokenizer_json.get("normalizer") or {}
    steps = norm.get("normalizers") if norm.get("type") == "Sequence" else None
    expected = [
        {"type": "Prepend", "prepend": _SPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": _SPACE},
    ]
    if steps != expected or tokenizer_json.get("pre_tokenizer") is not None:
        return False
    if model.get("type") != "BPE" or model.get("dropout") not in (None, 0.0):
        return False
    if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        return False
    inner = re.compile(f"[^{_SPACE}]{_SPACE}")
    if any(inner.search(token) for token in model.get("vocab", {})):
        return False
    for merge in model.get("merges", []):
        left, right = merge if isinstance(merge, list) else merge.split(" ", 1)
        if not left.endswith(_SPACE) and right.startswith(_SPACE):
            return False
    return True


class StaticPooler:
    """Mean-pooled static token vectors of texts, as ``WordLlamaInference.embed(texts)``
    returns them (float32, not normalised)."""

    def __init__(self, embedding: np.ndarray, tokenizer: Any) -> None:
        from tokenizers import Tokenizer  # type: ignore[import-untyped]

        self.embedding = np.ascontiguousarray(embedding, dtype=np.float32)
        serialized = tokenizer.to_str()
        spec = json.loads(serialized)
        whole = Tokenizer.from_str(serialized)  # a copy: the model's own is padded
        whole.no_padding()
        whole.no_truncation()
        self._whole = whole
        self._words: Tokenizer | None = None
        if splits_at_words(spec):
            # the same BPE for one already normalised word at a time
            bare = dict(spec, normalizer=None, pre_tokenizer=None, post_processor=None, padding=None, truncation=None)
            self._words = Tokenizer.from_str(json.dumps(bare))
        self._special = [t["content"] for t in spec.get("added_tokens", [])]
        self._cache: dict[str, list[int]] = {}

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, as the model's tokenizer gives them (no special tokens)."""
        if self._words is None:
            return [e.ids for e in self._whole.encode_batch(list(texts), add_special_tokens=False)]
        # the ids of this call's words are kept here: the shared cache may be cleared by
        # another thread (the embedder is one object per process) between the two passes
        cache, known = self._cache, {}
        split: list[list[str] | None] = []
        missing: dict[str, None] = {}
        whole: list[int] = []
        for i, text in enumerate(texts):
            if any(s in text for s in self._special):
                split.append(None)
                whole.append(i)
                continue
            words = _WORD.findall(f"{_SPACE}{text.replace(' ', _SPACE)}") if text else []
            split.append(words)
            for w in words:
                if w not in known:
                    ids = cache.get(w)
                    if ids is None:
                        missing[w] = None
                    else:
                        known[w] = ids
        if missing:
            if len(cache) + len(missing) > MAX_WORDS:
                cache.clear()
            new = list(missing)
            for w, enc in zip(new, self._words.encode_batch(new, add_special_tokens=False)):
                cache[w] = known[w] = enc.ids
        out: list[list[int]] = []
        for parts in split:
            ids = []
            for w in parts or ():
                ids += known[w]
            out.append(ids)
        if whole:
            for i, enc in zip(whole, self._whole.encode_batch([texts[i] for i in whole], add_special_tokens=False)):
                out[i] = enc.ids
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 mean token vectors; identical texts computed once."""
        first: dict[str, int] = {}
        inverse = np.fromiter((first.setdefault(t, len(first)) for t in texts), dtype=np.int64, count=len(texts))
        pooled = self._pool(self.token_ids(list(first)))
        return pooled if len(first) == len(texts) else pooled[inverse]

    def _pool(self, ids: list[list[int]]) -> np.ndarray:
        table = self.embedding
        n = len(ids)
        out = np.zeros((n, table.shape[1]), dtype=np.float32)
        if not n:
            return out
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=n)
        flat = np.fromiter((t for row in ids for t in row), dtype=np.int64, count=int(lengths.sum()))
        np.clip(flat, 0, len(table) - 1, out=flat)  # as WordLlama clamps out-of-range ids
        starts = np.zeros(n, dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        order = np.argsort(-lengths, kind="stable")  # longest first: the texts at a position are a prefix
        sorted_lengths, sorted_starts = lengths[order], starts[order]
        acc = np.zeros((n, table.shape[1]), dtype=np.float32)
        longest = int(sorted_lengths[0])
        # active[p]: how many texts have more than p tokens
        active = np.searchsorted(-sorted_lengths, -np.arange(longest), side="left")
        for p in range(longest):
            m = int(active[p])
            acc[:m] += table[flat[sorted_starts[:m] + p]]
        acc /= np.maximum(sorted_lengths, 1).astype(np.float32)[:, None]
        out[order] = acc
        return out
