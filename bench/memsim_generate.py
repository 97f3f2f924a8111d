"""Generation speed of the `memsim` builder: trajectories per second on one core.

Generates ``--n`` trajectories (default 3,000, the six categories evenly) in one
process and times the build alone; ``--check`` also times the validator. Target: at
least 500 trajectories per second.

    .venv/bin/python bench/memsim_generate.py [--n 3000] [--lang en|zh] [--eta 1] [--check]

The last line printed is a JSON object with ``trajectories_per_s``.
"""

from __future__ import annotations

import argparse
import json
import time

from memplug.datasets.memsim.generator import MemSimBuilder
from memplug.protocols import BuildOptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--lang", default="en", choices=("en", "zh"))
    parser.add_argument("--eta", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="also run and time the validator")
    args = parser.parse_args()
    builder = MemSimBuilder()
    options = BuildOptions(values={"n": args.n, "lang": args.lang, "eta": args.eta}, seed=args.seed)
    start = time.perf_counter()
    samples = list(builder.build(options))
    build_s = time.perf_counter() - start
    result = {
        "n": len(samples),
        "lang": args.lang,
        "eta": args.eta,
        "build_s": round(build_s, 3),
        "trajectories_per_s": round(len(samples) / build_s, 1),
        "messages": sum(len(s.messages) for s in samples),
    }
    if args.check:
        start = time.perf_counter()
        report = builder.check(samples)
        result |= {"check_s": round(time.perf_counter() - start, 3), "check_ok": report.ok, "swi": report.stats["swi"]}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
