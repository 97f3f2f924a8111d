"""The retry policy: what a failed attempt means, and how long to wait before the next.

Every transport turns its failures into one of three kinds:

- :class:`Transient` (408/409/429, 5xx, timeouts, dropped connections, malformed bodies):
  retried with exponential backoff and jitter; a ``Retry-After`` header is honoured up to
  ``MAX_RETRY_AFTER_S``, and no call outlives its ``deadline``.
- :class:`Fatal` (a bad key, a forbidden or unknown model, a malformed request:
  400/401/403/404/405/422): raised as :class:`FatalLLMError`; retrying cannot fix it and
  neither can the next question, so the runner stops the run.
- :class:`Unanswered` (a request too long for the model's context; an empty, null or
  content-filtered reply): :class:`LLMError` of that one question, never retried.

:func:`on_wait` tells a progress display what a call is waiting for.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import re
import sys
import time
from typing import Any, AsyncContextManager, Awaitable, Callable, TypeVar

import attrs

from memplug.errors import MemplugError

log = logging.getLogger("memplug.llm")
T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 409, 429})
#: statuses that no retry and no other question can fix: stop the run
FATAL_STATUSES = frozenset({400, 401, 403, 404, 405, 422})
#: the longest Retry-After obeyed; a server asking for more gets this
MAX_RETRY_AFTER_S = 60.0
#: default overall deadline of one call, retries and waits included
DEFAULT_DEADLINE_S = 600.0
#: what a provider says when a request is too long for the model (that question's problem)
_TOO_LONG = re.compile(
    r"context.length|context.window|maximum context|too many tokens|prompt is too long|reduce the length"
    r"|input is too long|exceeds? the (?:max|model)",
    re.I,
)
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


# --- the kinds of failed attempts ----------------------------------------------------


class Transient(Exception):
    """A failed attempt worth retrying; ``retry_after`` is the server's wish, if any, and
    ``status`` the HTTP status when there was one (a 429 lowers ``--concurrency auto``)."""

    def __init__(self, reason: str, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.retry_after, self.status = reason, retry_after, status


class Fatal(Exception):
    """A failed attempt that retrying cannot fix (bad request, bad key, unknown model)."""


class Unanswered(Exception):
    """A failure of this one request that a retry would repeat: too long for the model's
    context, or an empty, null or filtered reply."""


def retry_after(headers: Any) -> float | None:
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


def status_failure(status: int, message: str, headers: Any) -> Exception:
    """The kind of an HTTP error status (with the server's message and headers)."""
    if status in RETRY_STATUSES or status >= 500:
        return Transient(f"HTTP {status}: {message}", retry_after(headers), status)
    if status == 413 or _TOO_LONG.search(message):
        return Unanswered(f"HTTP {status}: {message}")
    hint = _HINTS.get(status)
    return Fatal(f"HTTP {status}: {message}" + (f" ({hint})" if hint else ""))


def error_message(raw: bytes) -> str:
    """The message of an error body (OpenAI's ``{"error": {"message": ...}}``), on one line."""
    try:
        body = json.loads(raw)
        error = body.get("error", body) if isinstance(body, dict) else body
        message = error.get("message", error) if isinstance(error, dict) else error
    except ValueError:
        message = raw.decode("utf-8", "replace")
    return " ".join(str(message).split())[:300]


def reply_text(content: Any, finish_reason: str | None) -> str:
    """The reply's text; an empty, null or filtered reply is this question's error, since a
    scorer would read "" as a wrong answer and the cache would keep it."""
    if finish_reason == "content_filter":
        raise Unanswered("the provider's content filter withheld the reply (finish_reason content_filter)")
    if content is None or not str(content).strip():
        raise Unanswered(f"empty reply (content {content!r}, finish_reason {finish_reason!r})")
    return str(content)


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


def tell_waiting(reason: str | None) -> None:
    for listener in list(_WAIT_LISTENERS):
        try:
            listener(reason)
        except Exception:  # a display must never break a call
            pass


# --- the loop ------------------------------------------------------------------------

if sys.version_info >= (3, 11):

    def _within(seconds: float, awaitable: Awaitable[T]) -> Awaitable[T]:
        async def bounded() -> T:
            async with asyncio.timeout(seconds):  # no task per call, unlike wait_for before 3.12
                return await awaitable

        return bounded()
else:  # pragma: no cover - Python 3.10

    def _within(seconds: float, awaitable: Awaitable[T]) -> Awaitable[T]:
        return asyncio.wait_for(awaitable, seconds)


@attrs.frozen
class RetryPolicy:
    """At most ``max_retries + 1`` attempts of ``timeout`` seconds each, all within
    ``deadline`` seconds; between them exponential backoff from ``retry_base`` up to
    ``retry_cap`` seconds, or what the server's Retry-After asks for."""

    timeout: float
    max_retries: int
    deadline: float = DEFAULT_DEADLINE_S
    retry_base: float = 0.5
    retry_cap: float = 30.0

    async def run(
        self,
        what: str,
        attempt: Callable[[], Awaitable[T]],
        hold: Callable[[], AsyncContextManager[Any]],
        name: str,
        scrub: Callable[[str], str],
    ) -> T:
        """``attempt()`` until it succeeds, fails for good, or the deadline comes.

        ``hold()`` is entered around each attempt (the permits of the concurrency limits),
        not while backing off; ``name`` (the model) starts every message, and ``scrub``
        masks secrets in whatever text reaches the user.
        """
        failure = ""
        end = time.monotonic() + self.deadline
        for n in range(self.max_retries + 1):
            try:
                async with hold():
                    return await _within(self.timeout, attempt())
            except Fatal as exc:
                raise FatalLLMError(scrub(f"{name}: {what} failed: {exc}")) from None
            except Unanswered as exc:
                raise LLMError(scrub(f"{name}: {what} failed: {exc}")) from None
            except Transient as exc:
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
                raise LLMError(
                    scrub(
                        f"{name}: {what} failed: deadline of {self.deadline:g}s "
                        f"passed after {n + 1} attempts: {failure}"
                    )
                )
            reason = scrub(f"{what} attempt {n + 1} failed ({failure}); retrying in {wait:.1f}s")
            log.info("%s: %s", name, reason)
            tell_waiting(reason)
            try:
                await asyncio.sleep(wait)
            finally:
                tell_waiting(None)
        raise LLMError(scrub(f"{name}: {what} failed after {self.max_retries + 1} attempts: {failure}"))
