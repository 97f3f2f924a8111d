"""memplug's one way to call an LLM: litellm behind a cache, a limit, retries and accounting.

    llm = LLM("openai/gpt-4o-mini")
    with usage_scope() as usage:
        reply = await llm.acomplete([{"role": "user", "content": "hi"}])
    usage.as_dict()  # {"calls": 1, "cache_hits": 0, "prompt_tokens": ..., ...}

Design decisions (numbers from a 2-core machine, 320 chat calls against
tests/openai_stub.py with 200 ms latency, efficiency = calls*latency/concurrency/wall):

- **Transport.** ``litellm.acompletion`` costs ~4.5 ms of CPU per call (efficiency 0.42-0.53
  at concurrency 64); the ``openai`` client on httpx stalls in httpcore's pool at 64
  (0.17-0.29); ``openai`` on aiohttp reaches 0.55-0.82. So for ``openai/<name>`` and
  ``hosted_vllm/<name>`` models with an ``api_base`` (vLLM, llama.cpp, LM Studio, proxies:
  the OpenAI-compatible servers where throughput matters) the layer POSTs the documented
  ``/chat/completions`` and ``/embeddings`` JSON through one pooled aiohttp session
  (efficiency 0.98 at 16 and 0.89-0.93 at 64 in flight, against 0.80 and 0.33 for litellm
  through this same layer). Every other model goes through litellm, which knows each
  provider's quirks; ``transport="litellm"`` forces litellm for any model.
- **One I/O loop per LLM.** All requests run on a private event loop in a daemon thread,
  so the connection pool, the litellm clients and the concurrency limit are created once
  and shared by async callers on any event loop and by sync callers on any thread
  (``concurrency`` bounds requests in flight per LLM, whoever makes them). Cache look-ups
  and accounting happen in the caller, so a cache hit never leaves the caller's thread
  and ``usage_scope`` sees the caller's context.
- **Errors by kind.** 408/409/429, 5xx, timeouts, dropped connections and malformed
  bodies are retried with exponential backoff and jitter; a ``Retry-After`` header is
  honoured up to ``MAX_RETRY_AFTER_S``, and no call outlives its ``deadline``. A bad key,
  a forbidden or unknown model and a malformed request (401/403/404/400/422) are
  :class:`FatalLLMError`: retrying cannot fix them and neither can the next question, so
  the runner stops the run. A request too long for the model's context, and an empty,
  null or content-filtered reply, are :class:`LLMError` of that one question: never
  retried, never cached, never scored as "". The permit is released while backing off,
  and :func:`on_wait` tells a progress display what the layer is waiting for.
- **Secrets.** The API key is never part of a cache key, a repr, a log line or an error
  message (any text that reaches the user goes through :func:`memplug.secrets.scrub`).
- **A failing cache is not a failing call.** When the cache cannot be written (a full
  disk), the layer warns once and goes on uncached.
"""

from __future__ import annotations

import array
import asyncio
import base64
import concurrent.futures
import contextlib
import contextvars
import email.utils
import functools
import json
import logging
import os
import random
import re
import sqlite3
import sys
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any, Awaitable, Callable, Coroutine, Literal, Sequence, TypeVar

import attrs
import orjson

from memplug.cache import ResponseCache, cache_key, cache_unwritable, open_cache
from memplug.errors import MemplugError
from memplug.secrets import redact_url, scrub
from memplug.tokens import count_tokens, litellm_dir

log = logging.getLogger(__name__)
T = TypeVar("T")
#: one embedding request's result: vectors, prompt tokens, cost
_Embedded = tuple[list[list[float]], int, float]

#: bump when the cached value's meaning changes, so old entries are not misread
CACHE_VERSION = 1
#: request parameters that do not change what the model writes; everything else is in the key
NOT_IN_KEY = frozenset({"metadata", "user", "stream_options", "extra_headers", "num_retries", "max_retries"})
#: settings of the LLM object, not of one call (stream: a Completion is one whole reply)
FORBIDDEN_PARAMS = frozenset({"api_key", "api_base", "base_url", "timeout", "stream"})
RETRY_STATUSES = frozenset({408, 409, 429})
#: litellm provider prefixes whose servers speak OpenAI's API verbatim (the direct path),
#: with the variable litellm reads the key from when none is given
OPENAI_COMPATIBLE = ("openai/", "hosted_vllm/")
KEY_VARIABLES = {"openai/": "OPENAI_API_KEY", "hosted_vllm/": "HOSTED_VLLM_API_KEY"}
EMBED_BATCH = 128
#: the longest Retry-After obeyed; a server asking for more gets this
MAX_RETRY_AFTER_S = 60.0
#: default overall deadline of one call, retries and waits included
DEFAULT_DEADLINE_S = 600.0
#: statuses that no retry and no other question can fix: stop the run
FATAL_STATUSES = frozenset({400, 401, 403, 404, 405, 422})
#: what a provider says when a request is too long for the model (that question's problem)
_TOO_LONG = re.compile(
    r"context.length|context.window|maximum context|too many tokens|prompt is too long|reduce the length"
    r"|input is too long|exceeds? the (?:max|model)", re.I)
_HINTS = {
    401: "check the API key (the provider's *_API_KEY variable, e.g. OPENAI_API_KEY)",
    403: "the key may not use this model or endpoint",
    404: "check the model name and --api-base",
}


class LLMError(MemplugError):
    """An LLM call that failed for good for this question: retries exhausted, the deadline
    passed, the request was too long for the model, or the reply was empty or filtered."""


class FatalLLMError(LLMError):
    """An LLM failure that every later call would repeat (bad key, unknown model, malformed
    request): the runner stops the run at once instead of failing question after question."""


def default_model() -> str | None:
    """The model named by ``MEMPLUG_LLM``, or None when unset."""
    return os.environ.get("MEMPLUG_LLM") or None


# --- what the layer waits for --------------------------------------------------------

_WAIT_LISTENERS: list[Callable[[str | None], None]] = []


def on_wait(listener: Callable[[str | None], None]) -> Callable[[], None]:
    """Call ``listener(reason)`` when a call starts backing off ("retrying in 4s: HTTP
    429 ...") and ``listener(None)`` when it stops; returns the function that removes it.

    For progress displays: a run that waits on a rate limit should say so, not look stuck.
    Listeners are called from the LLM's I/O thread.
    """
    _WAIT_LISTENERS.append(listener)
    return lambda: _WAIT_LISTENERS.remove(listener) if listener in _WAIT_LISTENERS else None


def _tell_waiting(reason: str | None) -> None:
    for listener in list(_WAIT_LISTENERS):
        try:
            listener(reason)
        except Exception:  # a display must never break a call
            pass


# --- accounting ----------------------------------------------------------------------


@attrs.define(eq=False)
class Usage:
    """Calls that reached a server, cache hits, tokens and dollars. Thread-safe to add to."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)

    def add(self, calls: int = 0, cache_hits: int = 0, prompt_tokens: int = 0, completion_tokens: int = 0, cost_usd: float = 0.0) -> None:
        with self._lock:
            self.calls += calls
            self.cache_hits += cache_hits
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.cost_usd += cost_usd

    def as_dict(self) -> dict[str, int | float]:
        with self._lock:
            return {
                "calls": self.calls,
                "cache_hits": self.cache_hits,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cost_usd": self.cost_usd,
            }


_SCOPES: contextvars.ContextVar[tuple[Usage, ...]] = contextvars.ContextVar("memplug_usage_scopes", default=())


class usage_scope:  # lower case: used like a function, ``with usage_scope() as usage``
    """Collect the usage of every LLM call made inside this block, and only those.

    A context variable, so it follows the code: tasks created inside the block and work
    sent to ``asyncio.to_thread`` count here, while a concurrent task with its own scope
    counts there. Scopes nest; an inner call counts in every enclosing scope. A class,
    not ``contextlib.contextmanager``: the runner opens two scopes per question, and a
    generator-based one cost three times as much.
    """

    def __enter__(self) -> Usage:
        self.usage = Usage()
        self._token = _SCOPES.set(_SCOPES.get() + (self.usage,))
        return self.usage

    def __exit__(self, *exc: object) -> None:
        _SCOPES.reset(self._token)


@attrs.frozen
class Completion:
    """One chat reply. For a cache hit (``cached``) the token counts and cost are those of
    the original call; the hit itself costs nothing and counts only in ``cache_hits``."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False


# --- litellm and cost look-ups ---------------------------------------------------------


@functools.cache
def _litellm() -> Any:
    """Import and quiet litellm on first need: the import alone takes 1-3 s."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map
    import litellm

    # pydantic warns about litellm's own response types on first use; nothing a user can act on
    warnings.filterwarnings("ignore", message=r"Item '.*' on TypedDict class '.*' is using the `ReadOnly` qualifier")

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.set_verbose = False
    # memplug reports failures itself (LLMError, scrubbed of keys); litellm's own
    # error logs would repeat them with tracebacks on every retry
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return litellm


@functools.cache
def _priced_models() -> frozenset[str]:
    """Model names in litellm's bundled price map, read without importing litellm."""
    root = litellm_dir()
    if root is None:
        return frozenset()
    try:
        return frozenset(json.loads((root / "model_prices_and_context_window_backup.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return frozenset()


def _token_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """Dollar cost from litellm's price map; 0.0 for models it does not price (local ones)."""
    names = _priced_models()
    if model not in names and model.split("/", 1)[-1] not in names:
        return 0.0  # skip importing litellm for a self-hosted model it cannot price anyway
    try:
        prompt_cost, completion_cost = _litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # litellm raises for unmapped models and odd providers alike
        return 0.0
    return float(prompt_cost + completion_cost)


# --- failures ----------------------------------------------------------------------


class _Transient(Exception):
    """A failed attempt worth retrying; ``retry_after`` is the server's wish, if any."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.retry_after = reason, retry_after


class _Fatal(Exception):
    """A failed attempt that retrying cannot fix (bad request, bad key, unknown model)."""


class _Unanswered(Exception):
    """A failure of this one request that a retry would repeat: too long for the model's
    context, or an empty, null or filtered reply."""


def _retry_after(headers: Any) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), if present."""
    if headers is None:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def _status_failure(status: int, message: str, headers: Any) -> Exception:
    if status in RETRY_STATUSES or status >= 500:
        return _Transient(f"HTTP {status}: {message}", _retry_after(headers))
    if status == 413 or _TOO_LONG.search(message):
        return _Unanswered(f"HTTP {status}: {message}")
    hint = _HINTS.get(status)
    return _Fatal(f"HTTP {status}: {message}" + (f" ({hint})" if hint else ""))


def _classify_litellm(exc: Exception) -> Exception:
    """litellm maps every provider's errors onto OpenAI's classes with a status code."""
    status = getattr(exc, "status_code", None)
    message = " ".join(str(exc).split())[:300]
    headers = getattr(exc, "litellm_response_headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    kind = type(exc).__name__
    if kind in ("ContextWindowExceededError", "ContentPolicyViolationError"):
        return _Unanswered(f"{kind}: {message}")
    if kind in ("APIConnectionError", "Timeout", "ServiceUnavailableError", "InternalServerError"):
        return _Transient(f"{kind}: {message}")
    if isinstance(status, int):
        return _status_failure(status, message, headers)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError, json.JSONDecodeError)):
        return _Transient(f"{kind}: {message}")
    return _Fatal(f"{kind}: {message}")


def _error_message(raw: bytes) -> str:
    try:
        body = json.loads(raw)
        error = body.get("error", body) if isinstance(body, dict) else body
        message = error.get("message", error) if isinstance(error, dict) else error
    except ValueError:
        message = raw.decode("utf-8", "replace")
    return " ".join(str(message).split())[:300]


def endpoint(api_base: str, route: str, key: str | None) -> tuple[str, dict[str, str]]:
    """The URL of ``route`` under ``api_base`` and its auth header.

    The route goes before the query string (``https://h/v1?api-version=x`` stays valid), and
    a user and password in the URL become a Basic header, since neither urllib nor aiohttp
    (beside a key) accept them in the URL; a key, when there is one, is sent as Bearer.
    """
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(api_base)
    host = parts.netloc.rpartition("@")[2]
    url = urlunsplit((parts.scheme, host, parts.path.rstrip("/") + route, parts.query, ""))
    if key:
        return url, {"Authorization": f"Bearer {key}"}
    if parts.username is not None:
        token = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
        return url, {"Authorization": f"Basic {token}"}
    return url, {}


#: memoised: the direct path asks for the same URL on every call
_endpoint = functools.lru_cache(maxsize=64)(endpoint)


def _env_proxy(url: str) -> str | None:
    """The HTTP(S)_PROXY that applies to ``url`` (NO_PROXY honoured), as httpx and litellm do.

    Resolved once per session: aiohttp's ``trust_env`` re-reads the environment and
    ~/.netrc on every request, which cost 0.1 of efficiency at 64 calls in flight.
    """
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    # proxy_bypass_environment is in urllib.request but not in typeshed's stub of it
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if not proxies or bypass(parts.hostname or "", proxies):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


# --- a limit shared with other processes ----------------------------------------------

#: ``limiter(model)``: an async context held around each attempt of every LLM call of this
#: process, on top of each LLM's own ``concurrency``; the Ray executor sets one that holds a
#: permit of a cluster-wide semaphore per model (memplug.executors, --llm-limit)
_CALL_LIMITER: Callable[[str], Any] | None = None


def set_call_limiter(limiter: Callable[[str], Any] | None) -> None:
    """Install (or remove, with None) the process-wide limit of concurrent LLM calls."""
    global _CALL_LIMITER
    _CALL_LIMITER = limiter


def _call_limit(model: str) -> Any:
    return contextlib.nullcontext() if _CALL_LIMITER is None else _CALL_LIMITER(model)


# --- the I/O loop ------------------------------------------------------------------


class _IOLoop:
    """An event loop in a daemon thread, owning the HTTP session of one LLM."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.session: Any = None  # aiohttp.ClientSession, made on first direct call
        self.proxy: str | None = None
        self.semaphore: asyncio.Semaphore | None = None
        self.thread = threading.Thread(target=self.loop.run_forever, name="memplug-llm-io", daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def _shutdown(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None
        self.loop.stop()

    def close(self) -> None:
        """Close the pool and stop the loop; callable from any thread, the loop's own included
        (a finalizer runs wherever the last reference to its LLM is dropped)."""
        if self.loop.is_closed() or os.getpid() != self.pid or not self.thread.is_alive():
            return
        self.submit(self._shutdown())
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=5)
            if not self.thread.is_alive():
                self.loop.close()


# --- the LLM -----------------------------------------------------------------------


class LLM:
    """A model endpoint with a response cache, a concurrency limit, retries and usage.

    ``transport``: ``"auto"`` (direct OpenAI-compatible HTTP for ``openai/*`` and
    ``hosted_vllm/*`` models with an ``api_base``, litellm otherwise), ``"litellm"`` or
    ``"http"``. ``retry_base`` and ``retry_cap`` shape the backoff (seconds) when the
    server gives no Retry-After. ``max_retries`` counts retries: at most
    ``max_retries + 1`` attempts per call, all of them within ``deadline`` seconds.
    """

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        cache_path: Path | None = None,
        use_cache: bool = True,
        concurrency: int = 16,
        timeout: float = 60.0,
        max_retries: int = 6,
        temperature: float = 0.0,
        seed: int | None = None,
        transport: Literal["auto", "litellm", "http"] = "auto",
        retry_base: float = 0.5,
        retry_cap: float = 30.0,
        deadline: float = DEFAULT_DEADLINE_S,
    ) -> None:
        if not (0 < timeout < float("inf")) or not (0 < deadline < float("inf")):
            raise MemplugError(f"LLM timeout and deadline must be finite and positive, got {timeout} and {deadline}")
        if concurrency < 1:
            raise MemplugError(f"LLM concurrency must be at least 1, got {concurrency}")
        if transport not in ("auto", "litellm", "http"):
            raise MemplugError(f'LLM transport must be "auto", "litellm" or "http", got {transport!r}')
        if transport == "http" and not api_base:
            raise MemplugError('LLM transport "http" needs an api_base')
        self.model = model
        self.api_base = api_base.rstrip("/") if api_base else None
        self.api_key = api_key
        self.use_cache = use_cache
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.seed = seed
        self.retry_base = retry_base
        self.retry_cap = retry_cap
        self.deadline = deadline
        self.direct = transport == "http" or (transport == "auto" and bool(self.api_base) and model.startswith(OPENAI_COMPATIBLE))
        self.cache = open_cache(cache_path) if use_cache else None
        self.usage = Usage()
        self._io: _IOLoop | None = None
        self._io_lock = threading.Lock()
        self._finalizer: weakref.finalize | None = None

    def __repr__(self) -> str:
        key = "'***'" if self.api_key else "None"
        return f"LLM(model={self.model!r}, api_base={redact_url(self.api_base)!r}, api_key={key}, use_cache={self.use_cache}, concurrency={self.concurrency})"

    # --- public API -----------------------------------------------------------------

    async def acomplete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        """One chat completion; served from the cache when the call is deterministic."""
        body, key = self._prepare(messages, params)
        hit = self._cached(key)
        if hit is not None:
            return hit
        result = await asyncio.wrap_future(self._submit(lambda io: self._chat(io, body)))
        return self._finish(key, result)

    def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        """The blocking twin of ``acomplete``; safe from any thread, including worker threads."""
        body, key = self._prepare(messages, params)
        hit = self._cached(key)
        if hit is not None:
            return hit
        return self._finish(key, self._wait(self._submit(lambda io: self._chat(io, body))))

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; each text is cached on its own."""
        keys, vectors, missing = self._embed_lookup(texts)
        if missing:
            batches, futures = self._embed_submit(texts, missing)
            results = await asyncio.gather(*map(asyncio.wrap_future, futures))
            self._embed_store(keys, vectors, batches, results)
        return vectors  # type: ignore[return-value]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The blocking twin of ``aembed``; safe from any thread, including worker threads."""
        keys, vectors, missing = self._embed_lookup(texts)
        if missing:
            batches, futures = self._embed_submit(texts, missing)
            self._embed_store(keys, vectors, batches, [self._wait(f) for f in futures])
        return vectors  # type: ignore[return-value]

    def close(self) -> None:
        """Close the connection pool and stop the I/O thread (a later call starts a new one)."""
        with self._io_lock:
            io, self._io = self._io, None
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
        if io is not None:
            io.close()
        if self.cache is not None:
            self.cache.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- caller side: cache and accounting -------------------------------------------

    def _prepare(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        bad = FORBIDDEN_PARAMS & params.keys()
        if bad:
            raise TypeError(f"LLM call parameters {sorted(bad)} are set on the LLM, not per call")
        body = {"temperature": self.temperature, **params, "messages": messages}
        if self.seed is not None:
            body.setdefault("seed", self.seed)
        temperature = body.get("temperature")
        deterministic = temperature is not None and float(temperature) <= 0.0
        if self.cache is None or not deterministic:
            return body, None
        shown = {k: v for k, v in body.items() if k not in NOT_IN_KEY}
        # model and api_base both: one name can be served by different servers
        key = cache_key({"v": CACHE_VERSION, "kind": "chat", "model": self.model, "api_base": self.api_base, "request": shown})
        return body, key

    def _cached(self, key: str | None) -> Completion | None:
        if key is None or self.cache is None:
            return None
        raw = self.cache.get(key)
        if raw is None:
            return None
        value = orjson.loads(raw)
        self._record(cache_hits=1)
        return Completion(value["text"], value["prompt_tokens"], value["completion_tokens"], value["cost_usd"], cached=True)

    def _finish(self, key: str | None, result: Completion) -> Completion:
        if key is not None and self.cache is not None:
            value = orjson.dumps(attrs.asdict(result, filter=lambda a, _: a.name != "cached"))
            self._cache_write(lambda cache: cache.put(key, value))
        self._record(calls=1, prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens, cost_usd=result.cost_usd)
        return result

    def _record(self, **counts: Any) -> None:
        for usage in (self.usage, *_SCOPES.get()):
            usage.add(**counts)

    def _embed_lookup(self, texts: Sequence[str]) -> tuple[list[str], list[list[float] | None], list[int]]:
        keys = [cache_key({"v": CACHE_VERSION, "kind": "embed", "model": self.model, "api_base": self.api_base, "text": t}) for t in texts]
        vectors: list[list[float] | None] = [None] * len(texts)
        if self.cache is not None and texts:
            found = self.cache.get_many(keys)
            for i, key in enumerate(keys):
                if key in found:
                    vectors[i] = array.array("d", found[key]).tolist()
            hits = sum(v is not None for v in vectors)
            if hits:
                self._record(cache_hits=hits)
        return keys, vectors, [i for i, v in enumerate(vectors) if v is None]

    def _embed_submit(
        self, texts: Sequence[str], missing: list[int]
    ) -> tuple[list[list[int]], list[concurrent.futures.Future[_Embedded]]]:
        """Send the texts at the ``missing`` indices to the I/O loop, EMBED_BATCH to a request."""
        batches = [missing[i : i + EMBED_BATCH] for i in range(0, len(missing), EMBED_BATCH)]
        return batches, [self._submit(self._embedder([texts[i] for i in b])) for b in batches]

    def _embed_store(self, keys: list[str], vectors: list[list[float] | None], batches: list[list[int]], results: list[_Embedded]) -> None:
        fresh: dict[str, bytes] = {}
        for batch, (batch_vectors, tokens, cost) in zip(batches, results):
            self._record(calls=1, prompt_tokens=tokens, cost_usd=cost)
            for i, vector in zip(batch, batch_vectors):
                vectors[i] = vector
                fresh[keys[i]] = array.array("d", vector).tobytes()  # float64: a hit equals a fresh call
        if self.cache is not None:
            self._cache_write(lambda cache: cache.put_many(fresh))

    def _cache_write(self, write: Callable[[ResponseCache], None]) -> None:
        """Store in the cache; when that fails (a full disk, a read-only file), warn once
        and go on uncached: the answer in hand is good, only its copy is lost."""
        cache = self.cache
        if cache is None:
            return
        try:
            write(cache)
        except (sqlite3.Error, OSError) as exc:
            self.cache = None
            cache_unwritable(cache.path, exc)

    # --- the I/O loop side ------------------------------------------------------------

    def _loop(self) -> _IOLoop:
        with self._io_lock:
            if self._io is None or self._io.pid != os.getpid():  # first use, or a forked child
                self._io = _IOLoop()
                if self._finalizer is not None:
                    self._finalizer.detach()
                self._finalizer = weakref.finalize(self, self._io.close)
            return self._io

    def _submit(self, make: Callable[[_IOLoop], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        """Run ``make(io)`` on the I/O loop; the coroutine gets its loop's state explicitly,
        so a ``close()`` racing with it cannot swap the loop under it."""
        io = self._loop()
        if threading.current_thread() is io.thread:
            raise RuntimeError("LLM calls cannot be made from the LLM's own I/O thread")
        return io.submit(make(io))

    @staticmethod
    def _wait(future: concurrent.futures.Future[T]) -> T:
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C in a sync caller: stop the request too
            raise

    def _http_key(self) -> str | None:
        """The given key, else the provider's variable, as litellm would pick it."""
        if self.api_key:
            return self.api_key
        prefix = next((p for p in KEY_VARIABLES if self.model.startswith(p)), None)
        return os.environ.get(KEY_VARIABLES[prefix]) if prefix else None

    def _scrub(self, text: str) -> str:
        """Mask the key, the endpoint's password, and every key-like environment value."""
        return scrub(text, secrets=(self.api_key,), urls=(self.api_base,))

    async def _retrying(self, io: _IOLoop, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        if io.semaphore is None:
            io.semaphore = asyncio.Semaphore(self.concurrency)
        failure = ""
        end = time.monotonic() + self.deadline
        for n in range(self.max_retries + 1):
            try:
                async with io.semaphore, _call_limit(self.model):  # held for the attempt, not while backing off
                    if self.direct:  # aiohttp's own timeout: wait_for would add a task per call
                        return await attempt()
                    return await asyncio.wait_for(attempt(), self.timeout)
            except _Fatal as exc:
                raise FatalLLMError(self._scrub(f"{self.model}: {what} failed: {exc}")) from None
            except _Unanswered as exc:
                raise LLMError(self._scrub(f"{self.model}: {what} failed: {exc}")) from None
            except _Transient as exc:
                failure, wait = exc.reason, exc.retry_after
            except (asyncio.TimeoutError, TimeoutError):
                failure, wait = f"no answer within {self.timeout:g}s", None
            if n == self.max_retries:
                break
            if wait is None:  # exponential backoff with "equal jitter"
                wait = min(self.retry_cap, self.retry_base * 2**n) * random.uniform(0.5, 1.0)
            else:
                wait *= random.uniform(1.0, 1.1)  # at least what the server asked for
            if time.monotonic() + wait + min(self.timeout, 1.0) > end:
                raise LLMError(self._scrub(f"{self.model}: {what} failed: deadline of {self.deadline:g}s "
                                           f"passed after {n + 1} attempts: {failure}"))
            reason = self._scrub(f"{what} attempt {n + 1} failed ({failure}); retrying in {wait:.1f}s")
            log.info("%s: %s", self.model, reason)
            _tell_waiting(reason)
            try:
                await asyncio.sleep(wait)
            finally:
                _tell_waiting(None)
        raise LLMError(self._scrub(f"{self.model}: {what} failed after {self.max_retries + 1} attempts: {failure}"))

    async def _chat(self, io: _IOLoop, body: dict[str, Any]) -> Completion:
        if self.direct:
            return await self._retrying(io, "chat completion", lambda: self._http_chat(io, body))
        return await self._retrying(io, "chat completion", lambda: self._litellm_chat(body))

    def _embedder(self, texts: list[str]) -> Callable[[_IOLoop], Coroutine[Any, Any, _Embedded]]:
        async def embed(io: _IOLoop) -> _Embedded:
            if self.direct:
                return await self._retrying(io, "embedding", lambda: self._http_embed(io, texts))
            return await self._retrying(io, "embedding", lambda: self._litellm_embed(texts))

        return embed

    # --- direct OpenAI-compatible HTTP ------------------------------------------------

    async def _post(self, io: _IOLoop, route: str, payload: dict[str, Any]) -> Any:
        """POST JSON to the endpoint; the parsed reply, or a classified failure."""
        import aiohttp

        if io.session is None:
            # no connection cap of its own: the semaphore is the limit
            io.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
            io.proxy = _env_proxy(f"{self.api_base}{route}")
        url, auth = _endpoint(self.api_base, route, self._http_key())
        headers = {"Content-Type": "application/json", **auth}
        name = self.model.split("/", 1)[1] if self.model.startswith(OPENAI_COMPATIBLE) else self.model
        payload = {**payload, "model": name}
        try:
            timeout = aiohttp.ClientTimeout(total=self.timeout)
            async with io.session.post(
                url, data=json.dumps(payload), headers=headers, timeout=timeout, proxy=io.proxy
            ) as response:
                raw = await response.read()
                status, response_headers = response.status, response.headers
        except (asyncio.TimeoutError, TimeoutError):
            raise
        except aiohttp.ClientError as exc:
            raise _Transient(f"connection failed: {type(exc).__name__}: {exc}") from None
        if status >= 400:
            raise _status_failure(status, _error_message(raw), response_headers)
        try:
            return json.loads(raw)
        except ValueError:
            raise _Transient(f"malformed response (HTTP {status}, not JSON): {raw[:80]!r}") from None

    async def _http_chat(self, io: _IOLoop, body: dict[str, Any]) -> Completion:
        reply = await self._post(io, "/chat/completions", body)
        try:
            choice = reply["choices"][0]
            text = _reply_text(choice["message"].get("content"), choice.get("finish_reason"))
        except (KeyError, IndexError, TypeError, AttributeError):
            raise _Transient("malformed response: no choices[0].message") from None
        usage = reply.get("usage") or {}
        prompt_tokens = usage.get("prompt_tokens")
        completion_tokens = usage.get("completion_tokens")
        if prompt_tokens is None or completion_tokens is None:  # some servers omit usage
            prompt_tokens = sum(count_tokens(str(m.get("content") or "")) for m in body["messages"])
            completion_tokens = count_tokens(text)
        cost = _token_cost(self.model, int(prompt_tokens), int(completion_tokens))
        return Completion(text, int(prompt_tokens), int(completion_tokens), cost)

    async def _http_embed(self, io: _IOLoop, texts: list[str]) -> _Embedded:
        reply = await self._post(io, "/embeddings", {"input": texts})
        try:
            rows = sorted(reply["data"], key=lambda row: row["index"])
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError, ValueError):
            raise _Transient("malformed embedding response") from None
        if len(vectors) != len(texts):
            raise _Transient(f"malformed embedding response: {len(vectors)} vectors for {len(texts)} texts")
        tokens = int((reply.get("usage") or {}).get("prompt_tokens") or 0)
        return vectors, tokens, _token_cost(self.model, tokens, 0)

    # --- litellm ------------------------------------------------------------------------

    def _litellm_args(self) -> dict[str, Any]:
        # our own loop does the retrying; litellm's and the openai client's would multiply it.
        # drop_params: the judge pins seed=0, which some providers reject instead of ignoring.
        return {"api_base": self.api_base, "api_key": self.api_key, "timeout": self.timeout, "num_retries": 0,
                "max_retries": 0, "drop_params": True}

    async def _litellm_chat(self, body: dict[str, Any]) -> Completion:
        litellm = _litellm()
        try:
            response = await litellm.acompletion(model=self.model, **{**self._litellm_args(), **body})
            choice = response.choices[0]
            usage = response.usage
        except Exception as exc:
            raise _classify_litellm(exc) from None
        text = _reply_text(choice.message.content, getattr(choice, "finish_reason", None))
        try:
            cost = float(litellm.completion_cost(completion_response=response))
        except Exception:  # an unpriced (self-hosted) model
            cost = 0.0
        return Completion(text, int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0), cost)

    async def _litellm_embed(self, texts: list[str]) -> _Embedded:
        litellm = _litellm()
        try:
            response = await litellm.aembedding(model=self.model, input=texts, **self._litellm_args())
            rows = sorted(response.data, key=lambda row: row["index"])
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except Exception as exc:
            raise _classify_litellm(exc) from None
        if len(vectors) != len(texts):
            raise _Transient(f"malformed embedding response: {len(vectors)} vectors for {len(texts)} texts")
        tokens = int(getattr(response.usage, "prompt_tokens", 0) or 0) if response.usage else 0
        return vectors, tokens, _token_cost(self.model, tokens, 0)


def _reply_text(content: Any, finish_reason: str | None) -> str:
    """The reply's text; an empty, null or filtered reply is this question's error, since a
    scorer would read "" as a wrong answer and the cache would keep it."""
    if finish_reason == "content_filter":
        raise _Unanswered("the provider's content filter withheld the reply (finish_reason content_filter)")
    if content is None or not str(content).strip():
        raise _Unanswered(f"empty reply (content {content!r}, finish_reason {finish_reason!r})")
    return str(content)

