"""How busy does memplug keep an LLM endpoint? (issue 7)

Starts a loopback OpenAI-compatible server that answers every chat completion after a
fixed latency, then runs `memplug eval` (a separate process, as a user would) on the
offline MemSim generator with the llm reader at concurrency 1, 16, 64 and 256. The default
agent is `recent`, whose own work is negligible, so what is measured is memplug's
overhead; pass `--agent bm25` to include a retriever's work (agents' own speed is
bench/agents_scale.py's subject). MemSim trajectories carry one question each, so every sample costs one
LLM call and concurrency comes from samples side by side.

    efficiency = calls x latency / concurrency / wall        (1.0 is the limit)

`wall` is the evaluation's own wall time from summary.json (first sample to summary;
it excludes interpreter start-up and dataset generation, reported beside it as
`process_s`). Each run is then repeated on its warm cache (`--warm-runs` times, 5 by
default), which must make no LLM call; `warm_wall_ratio` is the fastest warm run's wall
time over the cold one's, per concurrency, and `warm_walls_s` lists them all;
`warm_process_s` is the fastest warm run's whole process, start-up included. The
fastest, as `timeit` reports: a warm run lasts a fifth of a second, and on the shared
2-core VM this was written on, identical warm runs measured anywhere from 0.16 to
0.31 s, the slow ones in phases when the whole machine was slower (their interpreter
start-up slowed alike). The last line printed is a JSON object with the figures.

``--sdk-imported`` imports the openai SDK in the eval's process before memplug starts
(outside the timed wall; the JSON says ``"sdk_imported": true``): a cold run otherwise
imports it at its first call (0.6 s of CPU on an idle machine, more on a busy one) while
every sample waits, and this shows the figure without that fixed cost.

``--transport plain`` replaces the SDK altogether, in the eval's process, with a bare
aiohttp client (bench/plain_transport.py; the JSON says ``"transport": "plain"``): the
figure without the SDK's per-call cost and import, so what is left is memplug's own.

    python bench/eval_throughput.py [--latency 0.2] [--seconds 4] [--warm-runs 5]
                                    [--sdk-imported | --transport plain]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from openai_stub import OpenAIStub  # noqa: E402  (the tests' loopback server)


#: what the eval's process runs before memplug's CLI (as ``-m`` would run it), per mode:
#: the SDK imported first (``--sdk-imported``), or no SDK at all (``--transport plain``)
CLI = "runpy.run_module('memplug.cli', run_name='__main__')"
PRELUDES = {
    "sdk-imported": f"import openai, httpx_aiohttp, runpy; {CLI}",
    "plain": f"import sys, runpy; sys.path.insert(0, {str(ROOT / 'bench')!r}); "
    f"import plain_transport; plain_transport.install(); {CLI}",
}


def run_eval(
    agent: str, base_url: str, concurrency: int, n: int, out: Path, cache: Path, mode: str = "sdk"
) -> tuple[dict, float]:
    env = {**os.environ, "MEMPLUG_CACHE_DIR": str(cache), "OPENAI_API_KEY": "sk-bench"}
    cmd = [
        sys.executable,
        *(["-c", PRELUDES[mode]] if mode in PRELUDES else ["-m", "memplug.cli"]),
        "eval",
        "--agent",
        agent,
        "--dataset",
        "memsim",
        "-o",
        f"n={n}",
        "--reader",
        "llm",
        "--llm",
        "openai/bench-model",
        "--api-base",
        base_url,
        "--concurrency",
        str(concurrency),
        "--output",
        str(out),
        "--quiet",
    ]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    process_s = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"memplug eval failed:\n{res.stderr}")
    run_dir = Path(res.stdout.strip().splitlines()[-1])
    return json.loads((run_dir / "summary.json").read_text()), process_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="injected seconds per chat completion")
    parser.add_argument("--seconds", type=float, default=4.0, help="ideal wall time per run (sets n)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument(
        "--warm-runs", type=int, default=5, help="warm reruns per concurrency (the fastest is reported)"
    )
    parser.add_argument(
        "--sdk-imported",
        action="store_true",
        help="import the openai SDK before the eval starts (the figures without its import)",
    )
    parser.add_argument(
        "--transport",
        choices=("sdk", "plain"),
        default="sdk",
        help="plain: a bare aiohttp client instead of the SDK (the figures without the SDK)",
    )
    parser.add_argument(
        "--agent",
        default="recent",
        help="memory agent (default recent: it costs next to nothing, "
        "so the figures are memplug's own overhead; agents' costs are in bench/agents_scale.py)",
    )
    args = parser.parse_args()
    if args.sdk_imported and args.transport == "plain":
        parser.error("--sdk-imported measures the SDK's path; --transport plain leaves the SDK out")
    mode = "plain" if args.transport == "plain" else "sdk-imported" if args.sdk_imported else "sdk"

    result: dict = {
        "agent": args.agent,
        "latency_s": args.latency,
        "sdk_imported": args.sdk_imported,
        "transport": args.transport,
        "efficiency": {},
        "wall_s": {},
        "process_s": {},
        "calls": 0,
        "warm_calls": 0,
        "warm_wall_s": {},
        "warm_walls_s": {},
        "warm_wall_ratio": {},
        "warm_process_s": {},
    }
    with tempfile.TemporaryDirectory() as tmp, OpenAIStub(latency=args.latency) as stub:
        tmp_path = Path(tmp)
        for c in args.concurrency:
            n = max(c, int(args.seconds / args.latency) * c)
            cache = tmp_path / f"cache-{c}"
            summary, process_s = run_eval(args.agent, stub.base_url, c, n, tmp_path / "runs", cache, mode)
            calls, wall = summary["llm"]["calls"], summary["efficiency"]["wall_s"]
            eff = calls * args.latency / c / wall
            warms = [
                run_eval(args.agent, stub.base_url, c, n, tmp_path / "runs", cache, mode) for _ in range(args.warm_runs)
            ]
            warm_walls = [w["efficiency"]["wall_s"] for w, _ in warms]
            warm_wall = min(warm_walls)
            key = str(c)
            result["efficiency"][key] = round(eff, 3)
            result["wall_s"][key] = wall
            result["process_s"][key] = round(process_s, 2)
            result["calls"] += calls
            result["warm_calls"] += sum(w["llm"]["calls"] for w, _ in warms)
            result["warm_wall_s"][key] = warm_wall
            result["warm_walls_s"][key] = warm_walls
            result["warm_wall_ratio"][key] = round(warm_wall / wall, 4)
            result["warm_process_s"][key] = round(min(p for _, p in warms), 2)
            print(
                f"concurrency {c:>3}: {calls} calls in {wall:.2f} s (process {process_s:.2f} s), "
                f"efficiency {eff:.3f}, errors {summary['n_errors']}; warm reruns: "
                f"{sum(w['llm']['calls'] for w, _ in warms)} calls, {warms[0][0]['llm']['cache_hits']} cache hits each, "
                f"{', '.join(f'{t:.3f}' for t in warm_walls)} s (fastest {warm_wall / wall:.1%} of cold, median "
                f"{statistics.median(warm_walls) / wall:.1%}; "
                f"process {', '.join(f'{p:.2f}' for _, p in warms)} s)",
                flush=True,
            )
    result["load_avg"] = [round(x, 1) for x in os.getloadavg()[:2]]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
