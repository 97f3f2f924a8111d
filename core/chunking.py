"""Packs a sample's messages into chunks of at most ``chunk_size`` tokens."""

from __future__ import annotations

import sqlite3
from array import array
from typing import Iterable, Iterator, Sequence

import attrs

from memplug.cache import ResponseCache, cache_key, cache_unwritable, default_cache_path, open_cache
from memplug.models import Chunk, Message, Sample
from memplug.tokens import count_tokens, encoding


def split_message(message: Message, chunk_size: int, tokens: list[int]) -> list[Message]:
    """Cut one oversize message into parts of at most ``chunk_size`` tokens.

    Parts keep the message id (so recall@K still credits it) and carry
    ``meta["part"] = [index, count]``. Only the first part keeps ``shows``: a later one is
    cut from the text's middle, so an external system is given its time and speaker
    again (``[time] speaker:``) rather than a fragment with neither; a stamp at the text's
    end (MemSim's) is then in the last part twice, in two formats.
    """
    enc = encoding()
    pieces = [tokens[i : i + chunk_size] for i in range(0, len(tokens), chunk_size)]
    return [
        attrs.evolve(
            message,
            text=enc.decode(piece),
            meta={**message.meta, "part": [i, len(pieces)]},
            shows=message.shows if i == 0 else (),
        )
        for i, piece in enumerate(pieces)
    ]


def chunk_messages(
    messages: Sequence[Message], chunk_size: int, counts: Sequence[int] | None = None
) -> Iterator[Chunk]:
    """Yield chunks of whole messages in dataset order, each at most ``chunk_size`` tokens.

    Messages are joined by a newline inside a chunk; the newline is counted, so a
    chunk's text really is within budget. A message longer than a chunk is split.
    ``counts`` are the messages' token counts when known (see :class:`TokenCounts`).
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    enc = encoding()
    current: list[Message] = []
    used = 0
    index = 0
    for i, message in enumerate(messages):
        n = counts[i] if counts is not None else count_tokens(message.text)
        parts = (
            [message]
            if n <= chunk_size
            else split_message(message, chunk_size, enc.encode(message.text, disallowed_special=()))
        )
        for part in parts:
            cost = n if len(parts) == 1 else len(enc.encode(part.text, disallowed_special=()))
            cost = min(cost, chunk_size)
            separator = 1 if current else 0
            if current and used + separator + cost > chunk_size:
                yield Chunk(index, tuple(current))
                index += 1
                current, used, separator = [], 0, 0
            current.append(part)
            used += separator + cost
    if current:
        yield Chunk(index, tuple(current))


class TokenCounts:
    """Token counts of samples' messages, kept between runs in a cache file of their own
    (``tokens.sqlite3`` beside the LLM cache; a :class:`ResponseCache` for the same reasons).

    Counting is most of memplug's own work when a rerun's answers all come from the
    cache (tiktoken takes ~7 us a message, a third of the time per question). So the
    counts of every sample are fetched in one query when a run starts, and the new ones
    stored in one transaction when it ends: no round trip per sample. Without a cache
    (``--no-cache``) every count is computed.
    """

    #: part of every key: bump it if the way messages are counted ever changes
    VERSION = 1

    @classmethod
    def on_disk(cls, enabled: bool = True) -> "TokenCounts":
        """Counts kept in ``tokens.sqlite3`` beside the LLM cache; none kept when not ``enabled``."""
        return cls(open_cache(default_cache_path().with_name("tokens.sqlite3")) if enabled else None)

    def __init__(self, cache: ResponseCache | None) -> None:
        self.cache = cache
        self._known: dict[str, list[int]] = {}
        self._new: dict[str, bytes] = {}
        #: id(sample) -> (sample, key) for the prefetched samples: each key is hashed once.
        #: The sample is kept, and checked, so that a reused id never finds another's key.
        self._keys: dict[int, tuple[Sample, str]] = {}

    def _key(self, sample: Sample) -> str:
        known = self._keys.get(id(sample))
        if known is not None and known[0] is sample:
            return known[1]
        texts = [m.text for m in sample.messages]
        return cache_key({"v": self.VERSION, "kind": "token-counts", "encoding": "cl100k_base", "texts": texts})

    def prefetch(self, samples: Iterable[Sample]) -> None:
        """Look up the counts of all ``samples`` at once."""
        if self.cache is None:
            return
        self._keys = {id(s): (s, self._key(s)) for s in samples}
        for key, raw in self.cache.get_many(key for _, key in self._keys.values()).items():
            self._known[key] = array("I", raw).tolist()

    def of(self, sample: Sample) -> list[int]:
        """The token count of each of ``sample``'s messages, in order."""
        if self.cache is None:
            return [count_tokens(m.text) for m in sample.messages]
        key = self._key(sample)
        counts = self._known.get(key)
        if counts is None:
            counts = self._known[key] = [count_tokens(m.text) for m in sample.messages]
            self._new[key] = array("I", counts).tobytes()
        return counts

    def save(self) -> None:
        """Store the counts computed since the last save (one transaction)."""
        if self.cache is not None and self._new:
            try:
                self.cache.put_many(self._new)
            except (sqlite3.Error, OSError) as exc:  # a full disk: the counts are only a saving
                cache_unwritable(self.cache.path, exc)
                self.cache = None
            self._new.clear()
