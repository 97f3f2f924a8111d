"""Limits shared by every LLM of a process, per model, set from outside: concurrent calls
(``--llm-limit``) and tokens per minute (``--llm-tpm``).

``set_call_limiter(limiter)`` installs ``limiter(model)``, an async context held around
each attempt of every LLM call of this process, on top of each LLM's own
``concurrency``; the Ray executor sets one that holds a permit of a cluster-wide
semaphore per model (memplug.executors, ``--llm-limit``).

``set_token_limiter(limiter)`` installs token budgets: before each attempt a call takes
its estimate (the prompt's tokens, plus ``max_tokens`` when given) and waits while the
budget is spent; after it, the server's count replaces the estimate. In process the
budgets are :class:`TokenBucket` objects; on Ray they live in the limiter actor.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any, Awaitable, Callable, Mapping

_CALL_LIMITER: Callable[[str], Any] | None = None


def set_call_limiter(limiter: Callable[[str], Any] | None) -> None:
    """Install (or remove, with None) the process-wide limit of concurrent LLM calls."""
    global _CALL_LIMITER
    _CALL_LIMITER = limiter


def call_limit(model: str) -> Any:
    """The async context of one attempt under the installed limiter (none: a no-op)."""
    return contextlib.nullcontext() if _CALL_LIMITER is None else _CALL_LIMITER(model)


# --- tokens per minute ---------------------------------------------------------------


class TokenBucket:
    """A budget of ``per_minute`` tokens that refills continuously (a minute's worth at most).

    :meth:`take` debits at once and returns how long the caller must wait before sending:
    the level may go below zero, and each caller waits until the refill has paid for what
    was taken before it, so callers are served in the order they asked, from any thread or
    event loop (the arithmetic is under a thread lock; the waiting is the caller's).
    ``clock`` is injectable for tests.
    """

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1:
            raise ValueError(f"a token budget needs at least 1 token a minute, got {per_minute}")
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0  # tokens a second
        self.level = self.capacity
        self.clock = clock
        self.stamp = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + max(now - self.stamp, 0.0) * self.rate)
        self.stamp = now

    def take(self, tokens: float) -> float:
        """Debit ``tokens`` (at most a minute's worth: a bigger request could never fit) and
        return the seconds to wait before using them (0.0: at once)."""
        with self._lock:
            self._refill()
            self.level -= min(max(tokens, 0.0), self.capacity)
            return max(-self.level, 0.0) / self.rate

    def available(self) -> float:
        """The tokens in the bucket now (below zero: owed by callers waiting)."""
        with self._lock:
            self._refill()
            return self.level

    def give_back(self, tokens: float) -> None:
        """Credit ``tokens`` (an estimate above what was used; negative: debit more)."""
        with self._lock:
            self._refill()
            self.level = min(self.capacity, self.level + tokens)


class TokenLimiter:
    """Token budgets per model (``"*"``: each model not named), taken before each attempt
    and settled after it with what the server says it used.

    ``acquire`` waits (``sleep``, injectable for tests) until the budget allows the
    estimate; ``settle`` corrects it with the real count. The Ray executor installs a
    limiter of this shape whose buckets live in its limiter actor, shared by all workers.
    """

    def __init__(
        self,
        budgets: Mapping[str, int],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.budgets = dict(budgets)
        self.clock, self.sleep = clock, sleep
        self.buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()
        #: seconds waited and tokens used (as the servers counted them) per model
        self.waited: dict[str, float] = {}
        self.used: dict[str, int] = {}

    def applies(self, model: str) -> bool:
        return model in self.budgets or "*" in self.budgets

    def bucket(self, model: str) -> TokenBucket:
        with self._lock:
            if model not in self.buckets:
                self.buckets[model] = TokenBucket(self.budgets.get(model, self.budgets.get("*", 0)), self.clock)
            return self.buckets[model]

    async def acquire(self, model: str, tokens: int) -> None:
        bucket = self.bucket(model)
        tokens = min(tokens, int(bucket.capacity))  # as the bucket takes them
        wait = bucket.take(tokens)
        if wait <= 0:
            return
        self.waited[model] = self.waited.get(model, 0.0) + wait
        try:
            await self.sleep(wait)
        except BaseException:  # cancelled while waiting: nothing was sent
            bucket.give_back(tokens)
            raise

    def settle(self, model: str, estimated: int, used: int) -> None:
        with self._lock:
            self.used[model] = self.used.get(model, 0) + used
        bucket = self.bucket(model)
        taken = min(estimated, int(bucket.capacity))
        if taken != used:
            bucket.give_back(taken - used)


_TOKEN_LIMITER: TokenLimiter | Any = None


def set_token_limiter(limiter: "TokenLimiter | Any") -> None:
    """Install (or remove, with None) the process-wide token budgets: a :class:`TokenLimiter`,
    or anything with its ``applies``, ``acquire`` and ``settle`` (the Ray workers')."""
    global _TOKEN_LIMITER
    _TOKEN_LIMITER = limiter


def token_limiter(model: str) -> Any:
    """The installed token limiter when it limits ``model``, else None."""
    limiter = _TOKEN_LIMITER
    return limiter if limiter is not None and limiter.applies(model) else None


class Meter:
    """The tokens of one call under a token limit: estimated before each attempt, then the
    count the server reported (``used``, set by a successful attempt)."""

    __slots__ = ("limiter", "model", "estimate", "used")

    def __init__(self, limiter: Any, model: str, estimate: int) -> None:
        self.limiter, self.model, self.estimate = limiter, model, estimate
        self.used: int | None = None

    async def take(self) -> None:
        self.used = None
        await self.limiter.acquire(self.model, self.estimate)

    def settle(self) -> None:
        """After an attempt: a reply's real count replaces the estimate; a failed attempt
        keeps the estimate spent (a server may have counted it; never more than allowed)."""
        if self.used is not None:
            self.limiter.settle(self.model, self.estimate, self.used)
