"""What LLM calls cost: calls, cache hits, tokens and dollars, counted where they are made.

:class:`Usage` is a thread-safe tally; :class:`usage_scope` collects the calls made inside
a block (a context variable, so it follows tasks and ``asyncio.to_thread``). The price of a
call is the transport's to say (:func:`memplug.llm.transport.token_cost`, beside litellm).
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import attrs

from memplug.record import LLMUsage


@attrs.define(eq=False)
class Usage:
    """Calls that reached a server, cache hits, tokens and dollars. Thread-safe to add to."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)

    def add(
        self,
        calls: int = 0,
        cache_hits: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        with self._lock:
            self.calls += calls
            self.cache_hits += cache_hits
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.cost_usd += cost_usd

    def snapshot(self) -> LLMUsage:
        """The counts now, as the value a record keeps (this class only accumulates them)."""
        with self._lock:
            return LLMUsage(self.calls, self.cache_hits, self.prompt_tokens, self.completion_tokens, self.cost_usd)

    def as_dict(self) -> dict[str, Any]:
        return self.snapshot().to_json()


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


def record(usage: Usage, **counts: Any) -> None:
    """Add ``counts`` to ``usage`` (an LLM's own tally) and to every scope open here."""
    for each in (usage, *_SCOPES.get()):
        each.add(**counts)


@attrs.frozen
class Completion:
    """One chat reply. For a cache hit (``cached``) the token counts and cost are those of
    the original call; the hit itself costs nothing and counts only in ``cache_hits``."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False


#: one embedding request's result: vectors, prompt tokens, cost
Embedded = tuple[list[list[float]], int, float]
