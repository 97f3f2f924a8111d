"""How fast is `--llm local` on this machine? (issue 28)

Two figures, both on the packaged SmolLM2-135M-Instruct (Q4_1) under llama.cpp's server as
memplug starts it (memplug.llm.local: its window, threads and prompt cache):

1. tokens per second, prompt and generation. Prompt: a chat call with a one-token reply on
   prompts of about 500, 2,000 and 4,000 tokens, each new to the server's prompt cache (its
   first line differs), the median of ``--repeats``. Generation: replies of at most 256
   tokens to a short prompt, the prompt's share (at the measured prompt speed) taken off.
   The server's own quick measurement at start (which sets the per-call timeout) is
   printed beside them.
2. the wall time of the headline command with the local model,
   ``memplug eval --agent bm25 --dataset memsim -o n=5 --reader llm --llm local``, as a
   user runs it (a process of its own, server start included), on an empty response cache
   and again on the warm one (which makes no LLM call but still starts the server).

The last line printed is a JSON object with the figures.

    python bench/local_model.py [--repeats 3] [--n 5]
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

from memplug.llm import local


def prompt_speed(server: local.LocalServer, tokens: int, repeats: int) -> float:
    """Median prompt tokens per second for a prompt of about ``tokens`` tokens."""
    rates = []
    for r in range(repeats):
        # a first line of its own: no earlier prompt's state in the server's cache helps
        lines = [f"Run {time.time_ns()} {r}."] + [
            f"Note {i}: the parcel for room {i * 37 % 101} left at {i % 24:02d}:{i * 7 % 60:02d}."
            for i in range(tokens // 22)
        ]
        t0 = time.perf_counter()
        reply = server.chat([{"role": "user", "content": "\n".join(lines)}], 1, 600)
        rates.append(reply["usage"]["prompt_tokens"] / (time.perf_counter() - t0))
    return statistics.median(rates)


def generation_speed(server: local.LocalServer, prompt_tps: float, repeats: int) -> tuple[float, int]:
    """Median generated tokens per second, and the tokens of the last reply."""
    rates, produced = [], 0
    for r in range(repeats):
        t0 = time.perf_counter()
        reply = server.chat(
            [
                {
                    "role": "user",
                    "content": f"Story {r}: write a long story about a lighthouse keeper "
                    "and a storm, in many paragraphs.",
                }
            ],
            256,
            600,
        )
        usage = reply["usage"]
        produced = usage["completion_tokens"]
        rates.append(produced / (time.perf_counter() - t0 - usage["prompt_tokens"] / prompt_tps))
    return statistics.median(rates), produced


def headline(n: int, out: Path, cache: Path) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "memplug.cli",
        "eval",
        "--agent",
        "bm25",
        "--dataset",
        "memsim",
        "-o",
        f"n={n}",
        "--reader",
        "llm",
        "--llm",
        "local",
        "--output",
        str(out),
        "--quiet",
    ]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env={**os.environ, "MEMPLUG_CACHE_DIR": str(cache)}, capture_output=True, text=True)
    process_s = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"memplug eval failed: {res.stderr.strip()}")
    run_dir = Path(res.stdout.strip().splitlines()[-1])
    summary = json.loads((run_dir / "summary.json").read_text())
    run = json.loads((run_dir / "run.json").read_text())
    return {
        "process_s": round(process_s, 2),
        "wall_s": summary["efficiency"]["wall_s"],
        "calls": summary["llm"]["calls"],
        "cache_hits": summary["llm"]["cache_hits"],
        "errors": summary["n_errors"],
        "metrics": summary["metrics"]["overall"],
        "timeout_s": run["resolved"]["local_models"]["llm"]["timeout_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="calls per figure (the median is reported)")
    parser.add_argument("--n", type=int, default=5, help="MemSim trajectories of the headline command")
    args = parser.parse_args()

    model = local.LocalModel.parse("local")
    server = local.LocalServer(model)
    server.start()
    try:
        result: dict = {
            "gguf": model.gguf.name,
            "threads": model.threads,
            "cpus": os.cpu_count(),
            "window": server.info["window"],
            "load_s": server.info["load_s"],
            "llama_cpp": server.info["llama_cpp"],
            "llama_cpp_python": server.info["llama_cpp_python"],
            "at_start": {
                "prompt_tps": server.speed.prompt_tps if server.speed else None,
                "generation_tps": server.speed.generation_tps if server.speed else None,
            },
            "prompt_tps": {},
        }
        for tokens in (500, 2000, 4000):
            rate = prompt_speed(server, tokens, args.repeats)
            result["prompt_tps"][str(tokens)] = round(rate, 1)
            print(f"prompt of ~{tokens} tokens: {rate:.0f} tokens/s", flush=True)
        rate, produced = generation_speed(server, result["prompt_tps"]["500"], args.repeats)
        result["generation_tps"], result["generated_tokens"] = round(rate, 1), produced
        print(f"generation: {rate:.1f} tokens/s ({produced} tokens in the last reply)", flush=True)
    finally:
        server.stop()
    with tempfile.TemporaryDirectory() as tmp:
        cold = headline(args.n, Path(tmp) / "runs", Path(tmp) / "cache")
        warm = headline(args.n, Path(tmp) / "runs", Path(tmp) / "cache")
    result["headline"] = {
        "command": f"memplug eval --agent bm25 --dataset memsim -o n={args.n} --reader llm --llm local",
        "cold": cold,
        "warm": warm,
    }
    print(
        f"headline, cold cache: {cold['process_s']} s ({cold['calls']} calls, eval wall {cold['wall_s']} s); "
        f"warm: {warm['process_s']} s ({warm['cache_hits']} cache hits)",
        flush=True,
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
