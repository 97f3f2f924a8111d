"""What one OpenAI-compatible call costs in CPU: memplug's LLM against the SDK alone (issue 31).

The stub (tests/openai_stub.py) runs in its own process, so the CPU measured is the
client's alone. Each mode runs in a fresh process that makes ``--calls`` chat
completions with ``--concurrency`` in flight, from an event loop as the runner's workers
do, and reports the process's CPU time per call (``time.process_time``: every thread,
the LLM's I/O thread included) over the calls after a warm-up (imports, connections):

- ``memplug``: ``LLM.acomplete`` with the response cache on (every call a miss, then a
  write), as a cold ``memplug eval`` makes them;
- ``memplug-hosted``: ``memplug`` inside ``LLM.hosted()``, calls awaited on the caller's
  loop as the runner makes them (no I/O thread);
- ``memplug-nocache``: the same without the cache;
- ``sdk``: ``AsyncOpenAI.post`` on the SDK's aiohttp backend, the request memplug sends,
  nothing else: the floor while the SDK is kept;
- ``sdk-thread``: ``sdk`` on an event loop in a second thread, each call handed over with
  ``run_coroutine_threadsafe`` and its result back, as memplug's LLM does (its pool lives
  on its own I/O thread): ``sdk-thread`` less ``sdk`` is the cost of that hop, ``memplug``
  less ``sdk-thread`` that of memplug's own code (cache, limits, retries, accounting);
- ``sdk-create``: ``chat.completions.create``, the SDK's typed path (pydantic replies);
- ``aiohttp``: a plain aiohttp session posting JSON, the floor of any Python client.

Wall times on a shared machine wait for a core; CPU per call does not, so it is the
figure to compare. Beside it each mode reports its ``efficiency`` (calls x latency /
concurrency / wall: 1.0 when every call takes the stub's latency and no more) and the
stub's own CPU per request (``stub_cpu_ms_per_call``, from /proc: its process is the
same for every mode), so that a trivial client (``aiohttp``) at ``--concurrency 256``
shows what the stub and this machine allow, whatever the client. The modes alternate over ``--repeats`` rounds and the median per mode
is reported. ``--before DIR`` adds the memplug modes of another copy of the tree (run
with ``PYTHONPATH=DIR/src``, as ``before:memplug``), interleaved with this one's, so a
change is measured against its base under the same load. ``--profile MODE`` prints a cProfile of one run of that mode instead.
The last line printed is a JSON object.

    python bench/llm_overhead.py [--calls 1280] [--concurrency 64] [--repeats 3]
    python bench/llm_overhead.py --profile memplug
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

ROOT = Path(__file__).resolve().parents[1]
MODES = ("memplug", "memplug-hosted", "memplug-nocache", "sdk", "sdk-thread", "sdk-create", "aiohttp")
WARMUP = 64
#: set in a child asked for a profile: enabled over the timed calls only (not imports, warm-up)
_PROFILER: cProfile.Profile | None = None
#: the profile of memplug's I/O thread, merged into the printed one
_IO_PROFILES: list[cProfile.Profile] = []


def _messages(i: int) -> list[dict[str, Any]]:
    """A reader-like prompt, different per call (so every memplug call misses the cache)."""
    return [
        {"role": "system", "content": "Answer the question from the memories below in a few words."},
        {"role": "user", "content": f"Memories:\n- item one about the {i}th day\n- item two\n\nQuestion {i}: when?"},
    ]


async def _drive(
    call: Callable[[int], Awaitable[Any]],
    calls: int,
    concurrency: int,
    io_loop: asyncio.AbstractEventLoop | None = None,
) -> tuple[float, float]:
    """``calls`` calls, ``concurrency`` at a time, after a warm-up; (CPU s, wall s) of them.

    ``io_loop``: the loop of memplug's I/O thread, profiled too when a profile is asked for
    (cProfile sees one thread)."""
    await asyncio.gather(*(call(-1 - i) for i in range(min(WARMUP, concurrency))))
    queue = iter(range(calls))
    io_profiler = cProfile.Profile(time.thread_time) if _PROFILER is not None and io_loop is not None else None
    if io_profiler is not None:
        assert io_loop is not None
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_call(io_profiler.enable), io_loop))

    async def worker() -> None:
        for i in queue:
            await call(i)

    if _PROFILER is not None:
        _PROFILER.enable()
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if _PROFILER is not None:
        _PROFILER.disable()
    if io_profiler is not None:
        assert io_loop is not None
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_call(io_profiler.disable), io_loop))
        _IO_PROFILES.append(io_profiler)
    return cpu, wall


async def _call(function: Callable[[], Any]) -> Any:
    return function()


async def _run_mode(mode: str, base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    if mode.startswith("memplug"):
        from memplug.llm import LLM

        with tempfile.TemporaryDirectory() as tmp:
            llm = LLM(
                "openai/bench-model",
                api_base=base_url,
                api_key="sk-bench",
                concurrency=concurrency,
                cache_path=Path(tmp) / "llm.sqlite3",
                use_cache=mode == "memplug",
            )
            try:
                if mode == "memplug-hosted":  # as the runner lends its samples' loop
                    async with llm.hosted():
                        return await _drive(lambda i: llm.acomplete(_messages(i), temperature=0), calls, concurrency)
                await llm.acomplete(_messages(-1000), temperature=0)  # the I/O thread started
                assert llm._io is not None
                return await _drive(
                    lambda i: llm.acomplete(_messages(i), temperature=0), calls, concurrency, llm._io.loop
                )
            finally:
                llm.close()
    if mode.startswith("sdk"):
        import httpx
        import openai

        if mode == "sdk-thread":
            return await _sdk_in_thread(base_url, calls, concurrency)
        http = openai.DefaultAioHttpClient(
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        )
        client = openai.AsyncOpenAI(api_key="sk-bench", base_url=base_url, max_retries=0, http_client=http)
        try:
            if mode == "sdk":

                async def post(i: int) -> Any:
                    body = {"temperature": 0, "messages": _messages(i), "model": "bench-model"}
                    return await client.post("/chat/completions", body=body, cast_to=object)  # type: ignore[call-overload]

                return await _drive(post, calls, concurrency)

            async def create(i: int) -> Any:
                return await client.chat.completions.create(
                    model="bench-model",
                    messages=_messages(i),  # type: ignore[arg-type]
                    temperature=0,
                )

            return await _drive(create, calls, concurrency)
        finally:
            await client.close()
    import aiohttp
    import orjson

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def raw(i: int) -> Any:
            body = orjson.dumps({"temperature": 0, "messages": _messages(i), "model": "bench-model"})
            async with session.post(
                f"{base_url}/chat/completions",
                data=body,
                headers={"Content-Type": "application/json", "Authorization": "Bearer sk-bench"},
            ) as response:
                return orjson.loads(await response.read())

        return await _drive(raw, calls, concurrency)


async def _sdk_in_thread(base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    """``sdk`` with the client on a loop in another thread, every call handed over and back."""
    import threading

    import httpx
    import openai

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def make() -> openai.AsyncOpenAI:
        http = openai.DefaultAioHttpClient(
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        )
        return openai.AsyncOpenAI(api_key="sk-bench", base_url=base_url, max_retries=0, http_client=http)

    client = asyncio.run_coroutine_threadsafe(make(), loop).result()

    async def post(i: int) -> Any:
        body = {"temperature": 0, "messages": _messages(i), "model": "bench-model"}
        return await client.post("/chat/completions", body=body, cast_to=object)

    try:
        return await _drive(
            lambda i: asyncio.wrap_future(asyncio.run_coroutine_threadsafe(post(i), loop)), calls, concurrency, loop
        )
    finally:
        asyncio.run_coroutine_threadsafe(client.close(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()


def child(mode: str, base_url: str, calls: int, concurrency: int, profile: bool) -> None:
    """One mode in this process: prints its figures as one JSON line (or a profile)."""
    global _PROFILER
    if profile:
        _PROFILER = cProfile.Profile(time.thread_time)  # CPU of its thread: waits for the GIL are not work
    cpu, wall = asyncio.run(_run_mode(mode, base_url, calls, concurrency))
    if _PROFILER is not None:
        stats = pstats.Stats(_PROFILER, *_IO_PROFILES)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(45)
    print(json.dumps({"mode": mode, "cpu_ms_per_call": round(cpu / calls * 1000, 4), "wall_s": round(wall, 3)}))


def _cpu_s(pid: int) -> float:
    """CPU seconds (user and system, every thread) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1280)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2, help="the stub's seconds per chat completion")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of every mode (median reported)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--profile", choices=MODES, help="print a cProfile of one run of this mode")
    parser.add_argument("--before", type=Path, help="a copy of the tree to measure memplug's modes of too")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.base_url, args.calls, args.concurrency, args.profile is not None)
        return

    stub = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "openai_stub.py"), "--port", "0", "--latency", str(args.latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stub.stdout is not None
        base_url = stub.stdout.readline().split()[1]
        modes = [args.profile] if args.profile else args.modes
        if args.before and not args.profile:
            modes = [each for m in modes for each in ([m, f"before:{m}"] if m.startswith("memplug") else [m])]
        figures: dict[str, list[float]] = {m: [] for m in modes}
        efficiency: dict[str, list[float]] = {m: [] for m in modes}
        stub_cpu: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(1 if args.profile else args.repeats):
            for mode in modes:
                tree, _, own = mode.rpartition(":")
                cmd = [
                    sys.executable,
                    __file__,
                    "--child",
                    own,
                    "--base-url",
                    base_url,
                    "--calls",
                    str(args.calls),
                    "--concurrency",
                    str(args.concurrency),
                ] + (["--profile", own] if args.profile else [])
                env = {**os.environ, "OPENAI_API_KEY": "sk-bench"}
                if tree:
                    env["PYTHONPATH"] = str(args.before.resolve() / "src")
                stub_before = _cpu_s(stub.pid)
                out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                # every request the child made: the timed calls, the warm-up, memplug's first call
                served = args.calls + min(WARMUP, args.concurrency) + (1 if own.startswith("memplug") else 0)
                stub_ms = (_cpu_s(stub.pid) - stub_before) / served * 1000
                if out.returncode != 0:
                    raise SystemExit(f"{mode} failed:\n{out.stderr}")
                if args.profile:
                    print(out.stdout.rsplit("\n", 2)[0])
                line = json.loads(out.stdout.strip().splitlines()[-1])
                figures[mode].append(line["cpu_ms_per_call"])
                efficiency[mode].append(round(args.calls * args.latency / args.concurrency / line["wall_s"], 3))
                stub_cpu[mode].append(round(stub_ms, 3))
                print(
                    f"{mode:>16}: {line['cpu_ms_per_call']:.3f} ms CPU a call, {args.calls} calls in {line['wall_s']:.2f} s "
                    f"(efficiency {efficiency[mode][-1]:.3f}; the stub's CPU {stub_ms:.3f} ms a request)",
                    flush=True,
                )
    finally:
        stub.terminate()
        stub.wait()
    print(
        json.dumps(
            {
                "calls": args.calls,
                "concurrency": args.concurrency,
                "latency_s": args.latency,
                "before": str(args.before) if args.before else None,
                "cpu_ms_per_call": {m: round(statistics.median(v), 3) for m, v in figures.items()},
                "efficiency": {m: round(statistics.median(v), 3) for m, v in efficiency.items()},
                "stub_cpu_ms_per_call": {m: round(statistics.median(v), 3) for m, v in stub_cpu.items()},
                "runs": figures,
                "load_avg": [round(x, 1) for x in os.getloadavg()[:2]],
            }
        )
    )


if __name__ == "__main__":
    main()
