"""Does `--concurrency auto` find a server's level? (issue 31)

The tests' OpenAI-compatible stub runs in its own process with a capacity: a call that
arrives while ``--capacity`` are being served is answered 429 at once, with Retry-After
(an overloaded server or a provider's limit). The LLM layer then makes ``--calls`` chat
completions from ``--callers`` concurrent callers, once for each fixed concurrency of
``--fixed`` and once adaptive (ceiling ``--ceiling``), and reports each one's throughput
(calls answered a second over the wall time, the SDK's import done before; a fixed
limit above the server's fails the calls whose retries all drew 429s), and
where the adaptive limit settled. ``auto_vs_best`` is the adaptive throughput over the
best fixed one's. The last line printed is a JSON object.

    python bench/adaptive_concurrency.py [--capacity 16] [--latency 0.1] [--calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


async def _run(base_url: str, calls: int, callers: int, concurrency: int, adaptive: bool) -> dict[str, Any]:
    from memplug.llm import LLM, LLMError

    with tempfile.TemporaryDirectory() as tmp:
        llm = LLM(
            "openai/bench-model",
            api_base=base_url,
            api_key="sk-bench",
            cache_path=Path(tmp) / "c.sqlite3",
            use_cache=False,
            concurrency=concurrency,
            adaptive=adaptive,
            max_retries=30,
        )
        queue = iter(range(calls))
        throttled = failed = 0

        async def worker() -> None:
            nonlocal failed
            for i in queue:
                try:
                    await llm.acomplete([{"role": "user", "content": f"question {i}"}])
                except LLMError:  # retries spent on 429s: a fixed limit above the server's
                    failed += 1

        try:
            await llm.acomplete([{"role": "user", "content": "warm-up"}])  # the SDK's import, out of the figure
            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(callers)))
            wall = time.perf_counter() - start
            if llm.adaptive is not None:
                throttled = llm.adaptive.throttles
        finally:
            llm.close()
    out: dict[str, Any] = {"calls_per_s": round((calls - failed) / wall, 1), "wall_s": round(wall, 2), "failed": failed}
    if llm.adaptive is not None:
        info = llm.adaptive.describe()
        out.update(throttled=throttled, final=info["final"], peak=info["peak"], changes=info["changes"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=16, help="calls the stub serves at once; more get 429")
    parser.add_argument("--latency", type=float, default=0.1, help="the stub's seconds per chat completion")
    parser.add_argument("--retry-after", type=float, default=0.1, help="the Retry-After of the stub's 429s")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--callers", type=int, default=64, help="concurrent callers (samples side by side)")
    parser.add_argument("--ceiling", type=int, default=64, help="the adaptive limit's ceiling")
    parser.add_argument("--fixed", type=int, nargs="+", default=[8, 12, 16, 24, 32])
    args = parser.parse_args()

    stub = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "openai_stub.py"),
            "--port",
            "0",
            "--latency",
            str(args.latency),
            "--capacity",
            str(args.capacity),
            "--retry-after",
            str(args.retry_after),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stub.stdout is not None
        base_url = stub.stdout.readline().split()[1]
        fixed: dict[str, dict[str, Any]] = {}
        for c in args.fixed:
            fixed[str(c)] = asyncio.run(_run(base_url, args.calls, args.callers, c, adaptive=False))
            print(f"fixed {c:>3}: {fixed[str(c)]['calls_per_s']} calls/s, {fixed[str(c)]['failed']} failed", flush=True)
        auto = asyncio.run(_run(base_url, args.calls, args.callers, args.ceiling, adaptive=True))
        print(
            f"auto (ceiling {args.ceiling}): {auto['calls_per_s']} calls/s, settled at {auto['final']} "
            f"(peak {auto['peak']}, {auto['throttled']} 429s)",
            flush=True,
        )
    finally:
        stub.terminate()
        stub.wait()
    best = max(fixed, key=lambda c: fixed[c]["calls_per_s"])
    print(
        json.dumps(
            {
                "capacity": args.capacity,
                "latency_s": args.latency,
                "calls": args.calls,
                "callers": args.callers,
                "fixed_calls_per_s": {c: f["calls_per_s"] for c, f in fixed.items()},
                "best_fixed": int(best),
                "auto": auto,
                "auto_vs_best": round(auto["calls_per_s"] / fixed[best]["calls_per_s"], 3),
                "load_avg": [round(x, 1) for x in os.getloadavg()[:2]],
            }
        )
    )


if __name__ == "__main__":
    main()
