"""`--concurrency auto`: the adaptive limit of calls in flight (memplug.llm.adaptive)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click
import pytest

from inprocess import memplug_main
from memplug.cli.eval import AUTO_CEILING, _Concurrency
from memplug.llm import LLM
from memplug.llm.adaptive import MIN_WINDOW, PROBE_EVERY, AdaptiveLimit
from memplug.llm.retry import Transient

if TYPE_CHECKING:
    from openai_stub import OpenAIStub


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _window(limit: AdaptiveLimit, clock: Clock, seconds: float, latency: float, calls: int | None = None) -> None:
    """One window of finished calls with callers waiting (the limit binds): ``calls`` calls
    (default: a window's worth) spread over ``seconds``, each ``latency`` long."""
    calls = calls or max(MIN_WINDOW, int(limit.limit))
    held = [asyncio.ensure_future(limit.acquire()) for _ in range(int(limit.limit) + 1)]  # one waits
    await asyncio.sleep(0)
    for _ in range(calls):
        clock.now += seconds / calls
        limit.finished(latency)
    for task in held:
        if task.done():
            limit.release()
        else:
            task.cancel()
    await asyncio.gather(*held, return_exceptions=True)


def test_slow_start_doubles_while_throughput_rises_then_probes_one_at_a_time():
    async def main() -> None:
        clock = Clock()
        limit = AdaptiveLimit(64, start=4, clock=clock)
        await _window(limit, clock, 1.0, 0.1)  # 4 calls/s: the first window always rises
        assert limit.limit == 8 and limit.phase == "slow start"
        await _window(limit, clock, 1.0, 0.1)  # 8 calls/s
        assert limit.limit == 16
        await _window(limit, clock, 2.0, 0.1)  # 16 calls in 2 s: no more throughput
        assert limit.phase == "steady" and limit.limit == 16
        for _ in range(PROBE_EVERY - 1):
            await _window(limit, clock, 2.0, 0.1)
        assert limit.limit == 17, "one more after PROBE_EVERY steady windows"

    asyncio.run(main())


def test_a_window_in_which_no_call_waited_changes_nothing():
    clock = Clock()
    limit = AdaptiveLimit(64, start=4, clock=clock)
    for _ in range(3 * MIN_WINDOW):  # callers slower than the server: the limit never binds
        clock.now += 0.1
        limit.finished(0.05)
    assert limit.limit == 4 and limit.history == []


def test_latency_that_grows_without_throughput_lowers_the_limit():
    async def main() -> None:
        clock = Clock()
        limit = AdaptiveLimit(64, start=8, clock=clock)
        limit.phase = "steady"
        await _window(limit, clock, 1.0, 0.1)
        await _window(limit, clock, 1.0, 0.3)  # the same throughput, three times the latency
        assert limit.limit == pytest.approx(8 * 0.9)
        assert limit.history[-1][2] == "latency grew, throughput did not"

    asyncio.run(main())


def test_a_429_halves_in_slow_start_then_cuts_to_what_was_in_flight():
    async def main() -> None:
        clock = Clock()
        limit = AdaptiveLimit(64, start=32, clock=clock)
        sent = clock.now
        clock.now = 1.0
        limit.throttled(sent)
        assert limit.limit == 16 and limit.phase == "steady"
        limit.throttled(sent)  # sent before that cut: the cut answered it already
        assert limit.limit == 16
        for _ in range(13):
            await limit.acquire()
        clock.now = 2.0
        limit.throttled(1.5)  # 13 in flight, this one among them: the server takes 12
        assert limit.limit == 12
        assert limit.throttles == 3

    asyncio.run(main())


def test_the_slot_reports_429s_and_answers():
    async def main() -> None:
        clock = Clock()
        limit = AdaptiveLimit(8, start=4, clock=clock)
        limit.phase = "steady"
        with pytest.raises(Transient):
            async with limit.slot():
                raise Transient("HTTP 429: slow down", 1.0, 429)
        assert limit.throttles == 1 and limit.in_flight == 0
        with pytest.raises(Transient):
            async with limit.slot():
                raise Transient("HTTP 503: busy", None, 503)
        assert limit.throttles == 1
        async with limit.slot():
            clock.now += 0.2
        assert limit._done == 1 and limit.in_flight == 0

    asyncio.run(main())


def test_it_settles_near_what_a_server_takes(openai_stub: OpenAIStub, tmp_path: Path) -> None:
    """The stub answers 429 to a call that arrives while 6 are served: 32 callers, an
    adaptive ceiling of 32, and the limit ends near 6 with every call answered."""
    openai_stub.capacity, openai_stub.latency, openai_stub.retry_after = 6, 0.05, 0.05
    llm = LLM(
        "openai/stub",
        api_base=openai_stub.base_url,
        api_key="sk-test",
        use_cache=False,
        concurrency=32,
        adaptive=True,
        max_retries=20,
    )
    queue = iter(range(360))

    async def worker() -> None:
        for i in queue:
            await llm.acomplete([{"role": "user", "content": f"question {i}"}])

    async def main() -> None:
        await asyncio.gather(*(worker() for _ in range(32)))

    try:
        asyncio.run(main())
    finally:
        llm.close()
    assert llm.adaptive is not None
    info = llm.adaptive.describe()
    assert llm.usage.calls == 360
    assert openai_stub.refused > 0 and info["throttled"] == openai_stub.refused
    assert 4 <= info["final"] <= 7, info
    assert info["peak"] > 6  # it did look above the level


def test_concurrency_auto_on_the_command_line():
    convert = _Concurrency().convert
    assert convert("auto", None, None) == (AUTO_CEILING, True)
    assert convert("auto:8", None, None) == (8, True)
    assert convert("12", None, None) == (12, False)
    for bad in ("0", "auto:x", "", "automatic", "600"):
        with pytest.raises(click.BadParameter):
            convert(bad, None, None)


def test_run_json_records_where_each_model_settled(
    openai_stub: OpenAIStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    result = memplug_main(
        [
            "eval",
            "--agent",
            "recent",
            "--dataset",
            "memsim",
            "-o",
            "n=12",
            "--reader",
            "llm",
            "--llm",
            "openai/stub",
            "--api-base",
            openai_stub.base_url,
            "--concurrency",
            "auto:8",
            "--output",
            str(tmp_path / "runs"),
            "--quiet",
        ],
        env=dict(os.environ),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    run = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    assert run["spec"]["concurrency"] == 8 and run["spec"]["concurrency_auto"] is True
    settled = run["resolved"]["concurrency_auto"]["llm"]
    assert settled["ceiling"] == 8 and 1 <= settled["final"] <= 8
