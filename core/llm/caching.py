"""How the LLM layer uses the response cache (memplug.cache): what is a key, what is kept.

A chat call is cached only when it is deterministic (temperature 0); its key is the
model, the endpoint and every request parameter that changes what the model writes
(never the API key). Each embedded text is cached on its own, as float64 bytes, so a hit
equals a fresh call. Failures are never stored. A failing cache is not a failing call:
when the cache cannot be written (a full disk) the layer warns once and goes on uncached.

Fresh chat replies are written in batches (:data:`BATCH`, or once the oldest has waited
:data:`BATCH_S`; and when the LLM is closed or the process exits): a write of its own per
reply cost 40-55 us of CPU, and 100-250 us of the caller's wall time waiting for the GIL
back from the I/O thread, per call at 64 in flight (bench/llm_overhead.py), against 3 us a
reply in a batch. A reply not yet written is served from memory to every LLM of the process
on that cache file; another process sees it once written; a process killed before then
loses at most those replies (recomputed the next time), as the run's records are flushed
every 50 ms too.
"""

from __future__ import annotations

import array
import atexit
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import attrs
import orjson

from memplug.cache import ResponseCache, cache_key, cache_unwritable, open_cache
from memplug.llm.usage import Completion, Embedded

#: bump when the cached value's meaning changes, so old entries are not misread
CACHE_VERSION = 1
#: request parameters that do not change what the model writes; everything else is in the key
NOT_IN_KEY = frozenset({"metadata", "user", "stream_options", "extra_headers", "num_retries", "max_retries"})
#: fresh replies written together, and the longest one waits to be written (seconds)
BATCH = 64
BATCH_S = 0.05


class _Unwritten:
    """Fresh replies not written yet (key -> value), shared with the hook that writes them
    when the process exits without closing the LLM."""

    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}
        self.since = 0.0
        self.lock = threading.Lock()

    def add(self, key: str, value: bytes) -> dict[str, bytes] | None:
        """Keep one; the batch to write now when it is full or old enough, else None."""
        with self.lock:
            if not self.items:
                self.since = time.monotonic()
            self.items[key] = value
            if len(self.items) < BATCH and time.monotonic() - self.since < BATCH_S:
                return None
            items, self.items = self.items, {}
            return items

    def take(self) -> dict[str, bytes]:
        with self.lock:
            items, self.items = self.items, {}
            return items


#: the replies not yet written, per cache file: shared by the LLMs of this process that use it
_UNWRITTEN: dict[Path, _Unwritten] = {}
_UNWRITTEN_LOCK = threading.Lock()


def _unwritten(store: ResponseCache) -> _Unwritten:
    """The replies not yet written to ``store``'s file, whichever LLM of this process keeps
    them; the first request for a file registers their writing at the process's exit."""
    with _UNWRITTEN_LOCK:
        found = _UNWRITTEN.get(store.path)
        if found is None:
            found = _UNWRITTEN[store.path] = _Unwritten()
            atexit.register(_write_at_exit, store, found)
        return found


def _write_at_exit(store: ResponseCache, unwritten: _Unwritten) -> None:
    items = unwritten.take()
    if items:
        try:
            store.put_many(items)
        except (sqlite3.Error, OSError) as exc:
            cache_unwritable(store.path, exc)


class CallCache:
    """The cache of one LLM (a model at an endpoint); ``store`` is None when uncached."""

    def __init__(self, model: str, api_base: str | None, path: Path | None, use: bool) -> None:
        self.model, self.api_base = model, api_base
        self.store: ResponseCache | None = open_cache(path) if use else None
        self._unwritten = _unwritten(self.store) if self.store is not None else _Unwritten()

    def chat_key(self, body: dict[str, Any]) -> str | None:
        """The key of a chat request, or None when its reply must not be cached."""
        temperature = body.get("temperature")
        if self.store is None or temperature is None or float(temperature) > 0.0:
            return None
        shown = {k: v for k, v in body.items() if k not in NOT_IN_KEY}
        # model and api_base both: one name can be served by different servers
        return cache_key(
            {"v": CACHE_VERSION, "kind": "chat", "model": self.model, "api_base": self.api_base, "request": shown}
        )

    def completion(self, key: str | None) -> Completion | None:
        if key is None or self.store is None:
            return None
        raw = self._unwritten.items.get(key) or self.store.get(key)
        if raw is None:
            return None
        value = orjson.loads(raw)
        return Completion(
            value["text"], value["prompt_tokens"], value["completion_tokens"], value["cost_usd"], cached=True
        )

    def keep_completion(self, key: str | None, result: Completion) -> None:
        if key is not None and self.store is not None:
            value = orjson.dumps(attrs.asdict(result, filter=lambda a, _: a.name != "cached"))
            batch = self._unwritten.add(key, value)
            if batch:
                self._write(lambda cache: cache.put_many(batch))

    def flush(self) -> None:
        """Write the replies kept in memory so far."""
        batch = self._unwritten.take()
        if batch and self.store is not None:
            self._write(lambda cache: cache.put_many(batch))

    def embed_keys(self, texts: Sequence[str]) -> list[str]:
        return [
            cache_key({"v": CACHE_VERSION, "kind": "embed", "model": self.model, "api_base": self.api_base, "text": t})
            for t in texts
        ]

    def vectors(self, keys: list[str]) -> list[list[float] | None]:
        """The cached vector of each key, None where there is none."""
        vectors: list[list[float] | None] = [None] * len(keys)
        if self.store is not None and keys:
            found = self.store.get_many(keys)
            for i, key in enumerate(keys):
                if key in found:
                    vectors[i] = array.array("d", found[key]).tolist()
        return vectors

    def keep_vectors(
        self, keys: list[str], vectors: list[list[float] | None], batches: list[list[int]], results: list[Embedded]
    ) -> None:
        """Put the vectors of ``results`` (one per batch of indices) in place and in the cache."""
        fresh: dict[str, bytes] = {}
        for batch, (batch_vectors, _, _) in zip(batches, results):
            for i, vector in zip(batch, batch_vectors):
                vectors[i] = vector
                fresh[keys[i]] = array.array("d", vector).tobytes()  # float64: a hit equals a fresh call
        if self.store is not None:
            self._write(lambda cache: cache.put_many(fresh))

    def _write(self, write: Callable[[ResponseCache], None]) -> None:
        """Store in the cache; when that fails (a full disk, a read-only file), warn once
        and go on uncached: the answer in hand is good, only its copy is lost."""
        store = self.store
        if store is None:
            return
        try:
            write(store)
        except (sqlite3.Error, OSError) as exc:
            self.store = None
            cache_unwritable(store.path, exc)

    def close(self) -> None:
        self.flush()
        if self.store is not None:
            self.store.close()
