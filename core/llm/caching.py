"""How the LLM layer uses the response cache (memplug.cache): what is a key, what is kept.

A chat call is cached only when it is deterministic (temperature 0); its key is the
model, the endpoint and every request parameter that changes what the model writes
(never the API key). Each embedded text is cached on its own, as float64 bytes, so a hit
equals a fresh call. Failures are never stored. A failing cache is not a failing call:
when the cache cannot be written (a full disk) the layer warns once and goes on uncached.
"""

from __future__ import annotations

import array
import sqlite3
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


class CallCache:
    """The cache of one LLM (a model at an endpoint); ``store`` is None when uncached."""

    def __init__(self, model: str, api_base: str | None, path: Path | None, use: bool) -> None:
        self.model, self.api_base = model, api_base
        self.store: ResponseCache | None = open_cache(path) if use else None

    def chat_key(self, body: dict[str, Any]) -> str | None:
        """The key of a chat request, or None when its reply must not be cached."""
        temperature = body.get("temperature")
        if self.store is None or temperature is None or float(temperature) > 0.0:
            return None
        shown = {k: v for k, v in body.items() if k not in NOT_IN_KEY}
        # model and api_base both: one name can be served by different servers
        return cache_key({"v": CACHE_VERSION, "kind": "chat", "model": self.model, "api_base": self.api_base, "request": shown})

    def completion(self, key: str | None) -> Completion | None:
        if key is None or self.store is None:
            return None
        raw = self.store.get(key)
        if raw is None:
            return None
        value = orjson.loads(raw)
        return Completion(value["text"], value["prompt_tokens"], value["completion_tokens"], value["cost_usd"], cached=True)

    def keep_completion(self, key: str | None, result: Completion) -> None:
        if key is not None and self.store is not None:
            value = orjson.dumps(attrs.asdict(result, filter=lambda a, _: a.name != "cached"))
            self._write(lambda cache: cache.put(key, value))

    def embed_keys(self, texts: Sequence[str]) -> list[str]:
        return [cache_key({"v": CACHE_VERSION, "kind": "embed", "model": self.model, "api_base": self.api_base, "text": t})
                for t in texts]

    def vectors(self, keys: list[str]) -> list[list[float] | None]:
        """The cached vector of each key, None where there is none."""
        vectors: list[list[float] | None] = [None] * len(keys)
        if self.store is not None and keys:
            found = self.store.get_many(keys)
            for i, key in enumerate(keys):
                if key in found:
                    vectors[i] = array.array("d", found[key]).tolist()
        return vectors

    def keep_vectors(self, keys: list[str], vectors: list[list[float] | None], batches: list[list[int]],
                     results: list[Embedded]) -> None:
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
        if self.store is not None:
            self.store.close()
