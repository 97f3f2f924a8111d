"""``--concurrency auto``: a limit of calls in flight that finds the endpoint's own level.

A fixed ``--concurrency`` is a guess: too low leaves a server idle, too high fills its
queue (latency grows, throughput does not) or its rate limit (429s, each a retry after
Retry-After seconds). :class:`AdaptiveLimit` starts low and adjusts from what the calls
say, as TCP's congestion control and Inspect's adaptive connections do:

- **slow start**: the limit doubles after each window (as many finished calls as the
  limit, at least :data:`MIN_WINDOW`) whose throughput rose by more than
  :data:`RISE`, while the limit was what held calls back (a window in which no call
  waited says nothing about the server and changes nothing);
- then **one more every** :data:`PROBE_EVERY` **windows**, as long as latency stays below
  :data:`LATENCY_GROWTH` times the lowest seen or throughput still rises (a probe a
  window cost a 429, and its retry's wait, every other window); latency that grew
  without more throughput is a queue filling up: the limit drops by :data:`LATENCY_CUT`;
- **a 429** in slow start halves the limit (back to the last level that drew none);
  later it sets the limit to the calls in flight when it came, less one (the server
  refused one more than it takes), never below half the limit. The 429s of calls sent
  before that cut change nothing more.

One limit per LLM (per model), on its I/O loop; ``--concurrency`` stays the ceiling (the
samples side by side). :meth:`AdaptiveLimit.describe` is what run.json records.
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any, Callable

#: the limit a model starts at
START = 4
#: fewest finished calls that make a window (a measure of throughput and latency)
MIN_WINDOW = 4
#: slow start doubles while each window's throughput exceeds the last one's by this factor
RISE = 1.1
#: latency this many times the lowest window's, without more throughput: a queue is filling
LATENCY_GROWTH = 1.5
#: the limit is multiplied by this when latency grows without throughput
LATENCY_CUT = 0.9
#: after slow start, windows between two probes of one more call in flight
PROBE_EVERY = 4
#: changes of the limit kept for run.json (the first and the last ones)
HISTORY = 40


class AdaptiveLimit:
    """Calls in flight up to a limit that :meth:`finished` and :meth:`throttled` adjust.

    ``async with limit.slot():`` holds one call's permit (``slot`` is an async context
    manager; waiting callers are served in order). Not thread-safe: it lives on one event
    loop. ``clock`` is injectable for tests.
    """

    def __init__(self, ceiling: int, start: int = START, clock: Callable[[], float] = time.monotonic) -> None:
        self.ceiling = max(1, ceiling)
        self.start = min(max(1, start), self.ceiling)
        self.limit = float(self.start)
        self.clock = clock
        self.in_flight = 0
        self.phase = "slow start"
        #: 429s answered, and the highest limit reached
        self.throttles = 0
        self.peak = self.limit
        #: (seconds since start, new limit, why), the first and last HISTORY//2 changes
        self.history: list[tuple[float, int, str]] = []
        self._late: collections.deque[tuple[float, int, str]] = collections.deque(maxlen=HISTORY // 2)
        self._changes = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._started = clock()
        self._last_cut = float("-inf")
        self._prev_throughput: float | None = None
        self._min_latency = float("inf")
        self._steady_windows = 0
        self._reset_window()

    # --- permits --------------------------------------------------------------------

    def slot(self) -> "_Slot":
        """The permit of one attempt: it reports its outcome to the limit when it ends."""
        return _Slot(self)

    async def acquire(self) -> None:
        if self.in_flight < int(self.limit) and not self._waiters:
            self.in_flight += 1
            return
        self._waited = True
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled: pass it on
                self.release()
            elif waiter in self._waiters:  # (a cancelled one that _wake met is gone already)
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < int(self.limit):
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)

    # --- what the calls say ----------------------------------------------------------

    def finished(self, latency: float) -> None:
        """A call answered after ``latency`` seconds."""
        self._done += 1
        self._latency += latency
        if self._done >= max(MIN_WINDOW, int(self.limit)):
            self._adjust()

    def throttled(self, sent: float) -> None:
        """A call sent at ``sent`` (this clock) was answered 429."""
        self.throttles += 1
        if sent < self._last_cut:  # in flight before the last cut, which answered it already
            return
        if self.phase == "slow start":
            level = self.limit / 2
        else:
            level = min(self.limit - 1, max(self.limit / 2, self.in_flight - 1))
        self.phase = "steady"
        self._set(level, "429")
        self._last_cut = self.clock()
        self._prev_throughput = None  # throughput at the old limit says nothing about the new one
        self._reset_window()

    def _adjust(self) -> None:
        now = self.clock()
        elapsed = max(now - self._window_start, 1e-9)
        throughput, latency = self._done / elapsed, self._latency / self._done
        waited = self._waited
        self._reset_window()
        if not waited:  # the limit held nothing back: the callers, not the server, set the pace
            return
        rose = self._prev_throughput is None or throughput > self._prev_throughput * RISE
        self._prev_throughput = throughput
        self._min_latency = min(self._min_latency, latency)
        if self.phase == "slow start":
            if rose:
                self._set(self.limit * 2, "throughput rose")
                return
            self.phase = "steady"
        self._steady_windows += 1
        if latency > LATENCY_GROWTH * self._min_latency and not rose:
            self._set(self.limit * LATENCY_CUT, "latency grew, throughput did not")
        elif self._steady_windows >= PROBE_EVERY:
            self._set(self.limit + 1, "probe")

    def _set(self, limit: float, why: str) -> None:
        self._steady_windows = 0
        limit = min(float(self.ceiling), max(1.0, limit))
        if int(limit) != int(self.limit):
            change = (round(self.clock() - self._started, 3), int(limit), why)
            if self._changes < HISTORY // 2:
                self.history.append(change)
            else:
                self._late.append(change)
            self._changes += 1
        self.limit = limit
        self.peak = max(self.peak, limit)
        self._wake()

    def _reset_window(self) -> None:
        self._window_start = self.clock()
        self._done = 0
        self._latency = 0.0
        self._waited = bool(self._waiters)

    def describe(self) -> dict[str, Any]:
        """What run.json records of this model's limit."""
        return {
            "ceiling": self.ceiling,
            "start": self.start,
            "final": int(self.limit),
            "peak": int(self.peak),
            "throttled": self.throttles,
            "phase": self.phase,
            "changes": self._changes,
            "history": [list(c) for c in (*self.history, *self._late)],
        }


class _Slot:
    """One attempt's permit; its end tells the limit how the attempt went."""

    __slots__ = ("limit", "sent")

    def __init__(self, limit: AdaptiveLimit) -> None:
        self.limit = limit
        self.sent = 0.0

    async def __aenter__(self) -> None:
        await self.limit.acquire()
        self.sent = self.limit.clock()

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        try:  # told while this call still counts in flight
            if exc is None:
                self.limit.finished(self.limit.clock() - self.sent)
            elif getattr(exc, "status", None) == 429:
                self.limit.throttled(self.sent)
        finally:
            self.limit.release()
