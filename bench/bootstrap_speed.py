"""How long do memplug's confidence intervals take on a big run? (was a timed unit test)

Times ``memplug.stats.bootstrap_ci`` (1,000 resamples) on 10,000 continuous scores, the
slowest path (no clusters), best of ``--repeats``, and prints one JSON line. Measured
when it was a test: about 45 ms on a 2-core machine; the summary of a 10,000-question
run spends about that on each metric and category.

    python bench/bootstrap_speed.py [--questions 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from memplug.stats import bootstrap_ci


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    values = list(np.random.default_rng(0).random(args.questions))
    bootstrap_ci(values)  # numpy's first call pays for its set-up
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        bootstrap_ci(values)
        times.append(time.perf_counter() - start)
    print(
        json.dumps(
            {
                "questions": args.questions,
                "best_ms": round(1000 * min(times), 2),
                "all_ms": [round(1000 * t, 2) for t in times],
            }
        )
    )


if __name__ == "__main__":
    main()
