"""How long do `memplug --help`, `memplug list` and a missing provider key take? (issue 31)

Each command runs ``--runs`` times as a fresh process (``python -m memplug.cli``, as the
installed script does), the commands alternating, as hyperfine would; the wall time of
each run and its CPU time (user + system, from the child's rusage) are recorded, and
the fastest and median are reported. On a shared machine the wall time waits for a core:
the CPU time is the figure to compare, the load average is printed beside it.
``--before DIR`` runs the same commands from another copy of the tree too
(``PYTHONPATH=DIR/src``), interleaved. The last line printed is a JSON object.

Targets: ``--help`` within 0.3 s, ``list`` within 0.5 s, and a missing key (``--llm
gemini/gemini-1.5-flash`` without GEMINI_API_KEY, a provider litellm alone knew) within
1 s, said before litellm is imported.

    python bench/startup.py [--runs 10] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "help": ["--help"],
    "list": ["list"],
    "missing_key": ["eval", "--agent", "bm25", "--dataset", "memsim", "--llm", "gemini/gemini-1.5-flash"],
}
KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def run_once(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of one ``memplug ARGS``."""
    before = os.times()
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "memplug.cli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, result.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--before", type=Path, help="a copy of the tree to time too (PYTHONPATH=DIR/src)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    trees = {"after": env}
    if args.before:
        trees["before"] = {**env, "PYTHONPATH": str(args.before.resolve() / "src")}
    walls: dict[str, dict[str, list[float]]] = {t: {c: [] for c in COMMANDS} for t in trees}
    cpus: dict[str, dict[str, list[float]]] = {t: {c: [] for c in COMMANDS} for t in trees}
    for _ in range(args.runs):
        for name, command in COMMANDS.items():
            for tree, tree_env in trees.items():
                wall, cpu, code = run_once(command, tree_env)
                if code != (2 if name == "missing_key" else 0):
                    raise SystemExit(f"{tree} {name}: exit {code}")
                walls[tree][name].append(wall)
                cpus[tree][name].append(cpu)
    result: dict = {"runs": args.runs, "load_avg": [round(x, 1) for x in os.getloadavg()[:2]]}
    for tree in trees:
        result[tree] = {
            name: {
                "wall_min_s": round(min(walls[tree][name]), 3),
                "wall_median_s": round(statistics.median(walls[tree][name]), 3),
                "cpu_min_s": round(min(cpus[tree][name]), 3),
                "cpu_median_s": round(statistics.median(cpus[tree][name]), 3),
            }
            for name in COMMANDS
        }
        for name, figures in result[tree].items():
            print(
                f"{tree:>6} {name:>12}: wall {figures['wall_min_s']:.3f} s fastest, {figures['wall_median_s']:.3f} "
                f"median; CPU {figures['cpu_min_s']:.3f} / {figures['cpu_median_s']:.3f} s",
                flush=True,
            )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
