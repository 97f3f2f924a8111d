"""The LLM: one model endpoint behind a cache, limits, the retry policy and accounting.

Requests run on one event loop per LLM (:class:`IOLoop`), so the transport's connection
pool, the litellm clients and the concurrency limit are made once and shared by async
callers on any event loop and by sync callers on any thread (``concurrency`` bounds
requests in flight per LLM, whoever makes them). That loop is a private daemon thread's,
or, inside ``async with llm.hosted():``, the caller's own: the runner lends its samples'
loop for a run, so a reader's or a judge's call is awaited where it is made instead of
handed to another thread and back (at 256 calls in flight that hop cost a tenth of the
run's throughput: two busy threads trading the GIL; docs/performance.md). Cache look-ups
and accounting happen in the caller, so a cache hit never leaves the caller's thread and
``usage_scope`` sees the caller's context.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
import weakref
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Coroutine, Literal, Sequence, TypeVar

import attrs

from memplug.cache import ResponseCache
from memplug.errors import MemplugError
from memplug.llm import local
from memplug.llm.adaptive import AdaptiveLimit
from memplug.llm.caching import CallCache
from memplug.llm.limits import Meter, call_limit, token_limiter
from memplug.llm.retry import DEFAULT_DEADLINE_S, RetryPolicy
from memplug.llm.transport import (
    OPENAI_COMPATIBLE,
    LiteLLMTransport,
    OpenAITransport,
    Transport,
    api_key_for,
)
from memplug.llm.usage import Completion, Embedded, Usage, record
from memplug.secrets import redact_url, scrub
from memplug.tokens import count_tokens

T = TypeVar("T")

#: settings of the LLM object, not of one call (stream: a Completion is one whole reply)
FORBIDDEN_PARAMS = frozenset({"api_key", "api_base", "base_url", "timeout", "stream"})
EMBED_BATCH = 128


def default_model() -> str | None:
    """The model named by ``MEMPLUG_LLM``, or None when unset."""
    return os.environ.get("MEMPLUG_LLM") or None


class IOLoop:
    """The event loop that carries an LLM's requests and owns its transport (connection pool):
    a daemon thread's own (:meth:`start`), or a running loop lent to it (:meth:`lend`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self.loop = loop
        self.thread = thread  # the loop's thread: a call made there is awaited in place
        self.pid = os.getpid()
        self.transport: Transport | None = None  # made on the loop, at the first call
        self.semaphore: asyncio.Semaphore | None = None
        #: set once the pool is closed: no new one is made on this loop
        self.released = False
        #: the calls other threads sent here and that have not ended (see :meth:`release`)
        self.pending: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()

    @classmethod
    def start(cls) -> "IOLoop":
        """A new loop in a daemon thread of its own."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="memplug-llm-io", daemon=True)
        thread.start()
        return cls(loop, thread)

    @classmethod
    def lend(cls) -> "IOLoop":
        """The running loop, lent for as long as its lender says (see :meth:`LLM.hosted`)."""
        return cls(asyncio.get_running_loop(), threading.current_thread())

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run a call of another thread here; its future until it ends is in :attr:`pending`."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        with self._lock:
            self.pending.add(future)
        future.add_done_callback(self._ended)
        return future

    def _ended(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self.pending.discard(future)

    async def release(self) -> None:
        """Close the transport's pool (on this loop, whose pool it is).

        The calls other threads sent here and that are still running (an agent's thread
        given up after --sample-timeout, at the end of a ``hosted`` block) are cancelled
        first, and given a second to end: their caller's thread gets CancelledError, where
        a pool closed under them would have failed their attempts as timeouts and retried
        them. A call that comes later gets no new pool."""
        self.released = True
        with self._lock:
            pending = list(self.pending)
        for future in pending:
            future.cancel()
        for _ in range(100):
            if not self.pending:
                break
            await asyncio.sleep(0.01)
        if self.transport is not None:
            transport, self.transport = self.transport, None
            with contextlib.suppress(Exception):  # closing a pool must not hide why we close
                await transport.aclose()

    async def _shutdown(self) -> None:
        await self.release()
        # what else runs here ends first, as asyncio.run ends its loop: litellm starts a
        # logging worker on the loop of its first call, which a loop stopped under it left
        # pending, to be garbage-collected later ("Exception ignored in: ... _worker_loop")
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=1)
        self.loop.stop()

    def close(self) -> None:
        """Close the pool and stop the loop; callable from any thread, the loop's own included
        (a finalizer runs wherever the last reference to its LLM is dropped)."""
        if self.loop.is_closed() or os.getpid() != self.pid or not self.thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop)  # not a call: release() waits for those
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=5)
            if not self.thread.is_alive():
                self.loop.close()


class LLM:
    """A model endpoint with a response cache, a concurrency limit, retries and usage.

    ``transport``: ``"auto"`` (the ``openai`` SDK for ``openai/*`` and ``hosted_vllm/*``
    models with an ``api_base``, litellm otherwise), ``"litellm"`` or ``"openai"`` (also
    spelled ``"http"``). ``retry_base`` and ``retry_cap`` shape the backoff (seconds) when
    the server gives no Retry-After. ``max_retries`` counts retries: at most
    ``max_retries + 1`` attempts per call, all of them within ``deadline`` seconds.

    ``adaptive``: the calls in flight find their own level up to ``concurrency``
    (:mod:`memplug.llm.adaptive`, ``--concurrency auto``) instead of ``concurrency`` always.

    ``model`` ``local`` or ``local:PATH`` is a GGUF served by llama.cpp on loopback
    (:mod:`memplug.llm.local`): ``api_base`` is ignored (it is the other model's), one call
    is in flight at a time, and the timeout is fitted to the model's measured speed.
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
        transport: Literal["auto", "litellm", "openai", "http"] = "auto",
        retry_base: float = 0.5,
        retry_cap: float = 30.0,
        deadline: float = DEFAULT_DEADLINE_S,
        adaptive: bool = False,
    ) -> None:
        if not (0 < timeout < float("inf")) or not (0 < deadline < float("inf")):
            raise MemplugError(f"LLM timeout and deadline must be finite and positive, got {timeout} and {deadline}")
        if concurrency < 1:
            raise MemplugError(f"LLM concurrency must be at least 1, got {concurrency}")
        if transport not in ("auto", "litellm", "openai", "http"):
            raise MemplugError(f'LLM transport must be "auto", "litellm" or "openai", got {transport!r}')
        #: the local model ``local``/``local:PATH`` names, else None
        self.local = local.LocalModel.parse(model) if local.is_local(model) else None
        if self.local is not None:
            # llama.cpp's server computes one request at a time: more in flight would only
            # queue there, inside their timeouts
            api_base, concurrency, transport = None, 1, "auto"
        if transport in ("openai", "http") and not api_base:
            raise MemplugError(f'LLM transport "{transport}" needs an api_base')
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
        self.policy = RetryPolicy(
            timeout=timeout, max_retries=max_retries, deadline=deadline, retry_base=retry_base, retry_cap=retry_cap
        )
        #: whether the openai SDK carries the requests (else litellm)
        self.direct = (
            self.local is not None
            or transport in ("openai", "http")
            or (transport == "auto" and bool(self.api_base) and model.startswith(OPENAI_COMPATIBLE))
        )
        self.calls = CallCache(self.local.identity if self.local else model, self.api_base, cache_path, use_cache)
        self._server: local.LocalServer | None = None
        self._server_lock = threading.Lock()
        #: the local model's server as run.json records it (kept after close), else None
        self.local_info: dict[str, Any] | None = None
        self.usage = Usage()
        #: the adaptive limit of calls in flight (``adaptive``; not for a local model, which
        #: takes one call at a time), else None: ``concurrency`` is the limit
        self.adaptive = AdaptiveLimit(concurrency) if adaptive and self.local is None else None
        self._io: IOLoop | None = None
        #: the loop lent by :meth:`hosted` while its block runs, else None
        self._host: IOLoop | None = None
        self._io_lock = threading.Lock()
        self._finalizer: weakref.finalize[..., Any] | None = None

    def __repr__(self) -> str:
        key = "'***'" if self.api_key else "None"
        return f"LLM(model={self.model!r}, api_base={redact_url(self.api_base)!r}, api_key={key}, use_cache={self.use_cache}, concurrency={self.concurrency})"

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache in use (None: uncached, or given up after a failed write)."""
        return self.calls.store

    # --- public API -----------------------------------------------------------------

    async def acomplete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        """One chat completion; served from the cache when the call is deterministic."""
        body, key = self._prepare(messages, params)
        hit = self._cached(key)
        if hit is not None:
            return hit
        return self._finish(key, await self._run(lambda io: self._chat(io, body)))

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
            batches, makers = self._embed_batches(texts, missing)
            results = await asyncio.gather(*map(self._run, makers))
            self._embed_store(keys, vectors, batches, list(results))
        return vectors  # type: ignore[return-value]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The blocking twin of ``aembed``; safe from any thread, including worker threads."""
        keys, vectors, missing = self._embed_lookup(texts)
        if missing:
            batches, makers = self._embed_batches(texts, missing)
            futures = [self._submit(make) for make in makers]
            self._embed_store(keys, vectors, batches, [self._wait(f) for f in futures])
        return vectors  # type: ignore[return-value]

    @contextlib.asynccontextmanager
    async def hosted(self) -> AsyncIterator[None]:
        """Lend this LLM the running event loop for the block: calls made on that loop are
        awaited in place, not handed to the LLM's I/O thread and back, and sync callers on
        other threads (agents' worker threads) send theirs to it; the concurrency limit is
        the loop's. The lender keeps the loop running until the block has ended, which
        closes the connection pool made on it. A sync call from the loop's own thread (an
        inline agent calling :meth:`complete`) cannot wait on the loop it blocks: it goes
        to the I/O thread, under that thread's limit. Already lent a loop (by another
        block), the LLM keeps that one."""
        host = IOLoop.lend()
        with self._io_lock:
            lent = self._host is None
            if lent:
                self._host = host
        if not lent:
            yield
            return
        try:
            yield
        finally:
            with self._io_lock:
                self._host = None
            await host.release()

    def close(self) -> None:
        """Close the connection pool and stop the I/O thread (a later call starts a new one;
        a loop lent by :meth:`hosted` closes its pool when its block ends)."""
        with self._io_lock:
            io, self._io = self._io, None
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
        if io is not None:
            io.close()
        with self._server_lock:
            server, self._server = self._server, None
        if server is not None:
            local.release(server)  # the last LLM on it stops the server
        self.calls.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def local_server(self) -> local.LocalServer:
        """The local model's server, started (or joined) now, with this LLM's timeout fitted to
        its measured speed (:meth:`memplug.llm.local.LocalServer.call_timeout`); and the deadline
        at least that long, or no attempt could end before it."""
        if self.local is None:
            raise MemplugError(f"{self.model} is not a local model")
        with self._server_lock:
            if self._server is None:
                server = local.acquire(self.local)
                self.timeout = server.call_timeout(self.timeout)
                self.deadline = max(self.deadline, self.timeout)
                self.policy = attrs.evolve(self.policy, timeout=self.timeout, deadline=self.deadline)
                self.local_info = {**server.describe(), "timeout_s": self.timeout}
                self._server = server
            return self._server

    # --- caller side: cache and accounting -------------------------------------------

    def _prepare(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        bad = FORBIDDEN_PARAMS & params.keys()
        if bad:
            raise TypeError(f"LLM call parameters {sorted(bad)} are set on the LLM, not per call")
        body = {"temperature": self.temperature, **params, "messages": messages}
        if self.seed is not None:
            body.setdefault("seed", self.seed)
        return body, self.calls.chat_key(body)

    def _cached(self, key: str | None) -> Completion | None:
        hit = self.calls.completion(key)
        if hit is not None:
            record(self.usage, cache_hits=1)
        return hit

    def _finish(self, key: str | None, result: Completion) -> Completion:
        self.calls.keep_completion(key, result)
        record(
            self.usage,
            calls=1,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cost_usd=result.cost_usd,
        )
        return result

    def _embed_lookup(self, texts: Sequence[str]) -> tuple[list[str], list[list[float] | None], list[int]]:
        keys = self.calls.embed_keys(texts)
        vectors = self.calls.vectors(keys)
        hits = sum(v is not None for v in vectors)
        if hits:
            record(self.usage, cache_hits=hits)
        return keys, vectors, [i for i, v in enumerate(vectors) if v is None]

    def _embed_batches(
        self, texts: Sequence[str], missing: list[int]
    ) -> tuple[list[list[int]], list[Callable[[IOLoop], Coroutine[Any, Any, Embedded]]]]:
        """The requests of the texts at the ``missing`` indices, EMBED_BATCH to a request."""
        batches = [missing[i : i + EMBED_BATCH] for i in range(0, len(missing), EMBED_BATCH)]
        return batches, [self._embedder([texts[i] for i in b]) for b in batches]

    def _embed_store(
        self, keys: list[str], vectors: list[list[float] | None], batches: list[list[int]], results: list[Embedded]
    ) -> None:
        for _, tokens, cost in results:
            record(self.usage, calls=1, prompt_tokens=tokens, cost_usd=cost)
        self.calls.keep_vectors(keys, vectors, batches, results)

    # --- the I/O loop side ------------------------------------------------------------

    def _loop(self) -> IOLoop:
        with self._io_lock:
            if self._io is None or self._io.pid != os.getpid():  # first use, or a forked child
                self._io = IOLoop.start()
                if self._finalizer is not None:
                    self._finalizer.detach()
                self._finalizer = weakref.finalize(self, self._io.close)
            return self._io

    async def _run(self, make: Callable[[IOLoop], Coroutine[Any, Any, T]]) -> T:
        """An async caller's request: awaited in place on a lent loop (:meth:`hosted`), else
        on the I/O loop."""
        host = self._host
        if host is not None and host.thread is threading.current_thread():
            return await make(host)
        return await asyncio.wrap_future(self._submit(make))

    def _submit(self, make: Callable[[IOLoop], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        """Run ``make(io)`` on the lent loop (from another thread) or the I/O loop; the
        coroutine gets its loop's state explicitly, so a ``close()`` or the end of a
        ``hosted`` block racing with it cannot swap the loop under it."""
        with self._io_lock:  # held while sending: the lent loop cannot be given back meanwhile
            host = self._host
            if host is not None and host.thread is not threading.current_thread() and host.pid == os.getpid():
                return host.submit(make(host))
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
        return api_key_for(self.model, self.api_key)

    def _scrub(self, text: str) -> str:
        """Mask the key, the endpoint's password, and every key-like environment value."""
        return scrub(text, secrets=(self.api_key,), urls=(self.api_base,))

    def _transport(self, io: IOLoop) -> Transport:
        """The transport of this I/O loop, made on first use (on the loop: its pool is the loop's)."""
        if io.transport is None:
            if io.released:  # a pool made now would never be closed
                raise RuntimeError("the event loop lent to this LLM was given back")
            if self.local is not None:
                io.transport = local.LocalTransport(self.local_server(), self.timeout)
            elif self.direct:
                assert self.api_base is not None
                io.transport = OpenAITransport(self.model, self.api_base, self.api_key, self.timeout, self.concurrency)
            else:
                io.transport = LiteLLMTransport(self.model, self.api_base, self.api_key, self.timeout)
        return io.transport

    @contextlib.asynccontextmanager
    async def _slot(self, io: IOLoop, meter: Meter | None) -> AsyncIterator[None]:
        """The permits of one attempt: its tokens under the process's budget per model (waited
        for first: no call slot is held while the budget refills), this LLM's concurrency,
        and the process's limit of calls per model."""
        if io.semaphore is None:
            io.semaphore = asyncio.Semaphore(self.concurrency)
        # the adaptive limit lives on one loop: the lent one while there is one (a call of
        # the loop's own thread that went to the I/O thread meanwhile has that one's limit)
        adaptive = self.adaptive if self.adaptive is not None and io is (self._host or self._io) else None
        if meter is not None:
            await meter.take()
        try:
            async with adaptive.slot() if adaptive is not None else io.semaphore, call_limit(self.model):
                yield
        finally:
            if meter is not None:
                meter.settle()

    def _meter(self, texts: Callable[[], list[str]], reserve: int = 0) -> Meter | None:
        """A meter of the call's tokens when a token budget limits this model (else None,
        and no token is counted)."""
        limiter = token_limiter(self.model)
        if limiter is None:
            return None
        return Meter(limiter, self.model, sum(count_tokens(t) for t in texts()) + reserve)

    async def _chat(self, io: IOLoop, body: dict[str, Any]) -> Completion:
        transport = self._transport(io)
        meter = self._meter(
            lambda: [str(m.get("content") or "") for m in body["messages"]],
            int(body.get("max_tokens") or body.get("max_completion_tokens") or 0),
        )

        async def attempt() -> Completion:
            result = await transport.chat(body)
            if meter is not None:
                meter.used = result.prompt_tokens + result.completion_tokens
            return result

        return await self.policy.run("chat completion", attempt, lambda: self._slot(io, meter), self.model, self._scrub)

    def _embedder(self, texts: list[str]) -> Callable[[IOLoop], Coroutine[Any, Any, Embedded]]:
        async def embed(io: IOLoop) -> Embedded:
            transport = self._transport(io)
            meter = self._meter(lambda: texts)

            async def attempt() -> Embedded:
                result = await transport.embed(texts)
                if meter is not None:
                    meter.used = result[1]
                return result

            return await self.policy.run("embedding", attempt, lambda: self._slot(io, meter), self.model, self._scrub)

        return embed
