"""What the Ray executor costs next to the in-process path, on one machine.

    python bench/executor_overhead.py [--n 200 1000] [--workers 2]

Runs bm25 on memsim -o n=N in process, then with a Ray executor on a local loopback Ray
(started once: ``ray_init_s``, its workers: ``workers_start_s``), twice: the first run builds
each worker's Evaluation (``ray_cold_wall_s``), the second finds them built, as the cells of a
sweep after the first do (``ray_warm_wall_s``). Checks that the records (timings apart) are
the same. Prints one JSON object per N (docs/scale.md quotes them).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from memplug.executors import RayExecutor, ray_init
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec
from memplug.testing import comparable_records


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="memplug-overhead-"))
    t0 = time.perf_counter()
    ray_init(num_cpus=args.workers)
    ray_init_s = time.perf_counter() - t0
    executor = RayExecutor(workers=args.workers)
    t0 = time.perf_counter()
    executor.start()
    workers_start_s = time.perf_counter() - t0
    try:
        for n in args.n:
            spec = RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": str(n)})
            walls = {}
            paths = {}
            for label, ex in (("local", None), ("ray_cold", executor), ("ray_warm", executor)):
                evaluation = Evaluation(spec)
                evaluation.samples()
                t0 = time.perf_counter()
                paths[label] = evaluation.run(output=out / label, executor=ex)
                walls[label] = round(time.perf_counter() - t0, 3)
            same = (
                comparable_records(paths["local"])
                == comparable_records(paths["ray_cold"])
                == comparable_records(paths["ray_warm"])
            )
            print(
                json.dumps(
                    {
                        "n_questions": RunDir(paths["local"]).summary().n_questions,
                        "workers": args.workers,
                        "cpus": os.cpu_count(),
                        "load_avg_1m": round(os.getloadavg()[0], 2),
                        "ray_init_s": round(ray_init_s, 2),
                        "workers_start_s": round(workers_start_s, 2),
                        "local_wall_s": walls["local"],
                        "ray_cold_wall_s": walls["ray_cold"],
                        "ray_warm_wall_s": walls["ray_warm"],
                        "same_records": same,
                    }
                )
            )
    finally:
        executor.close()


if __name__ == "__main__":
    main()
