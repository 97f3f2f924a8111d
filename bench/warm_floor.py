"""What could a warm rerun cost at best? (issue 31: warm rerun <= 2% of the cold wall at 64)

Runs bench/eval_throughput.py's eval once cold (the stub answers every call after
``--latency``), then reruns it on its warm cache with one part of memplug's per-question
work taken out at a time, each in a fresh process (the parts are replaced before memplug's
CLI starts, by a prelude like eval_throughput's ``--sdk-imported``):

    none         the rerun as it is
    diagnosis    no question diagnosed, no sample's store measured (memplug.diagnosis)
    records      no record turned into its samples.jsonl line (the summary is still made)
    stored       no stored.jsonl line written
    all          the three together

A part's wall with it taken out is the floor of what making that part faster can win: the
rest of the work (the agent, the reader's prompt, the cache look-up, scoring, the event
loop) stays. The runs with a part out are not valid runs (no diagnoses, or empty
samples.jsonl); only their wall is read. Fastest of ``--warm-runs``; the last line
printed is a JSON object with the walls and their share of the cold wall.

    python bench/warm_floor.py [--concurrency 64] [--warm-runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_throughput  # noqa: E402  (its eval, stub and preludes)
from openai_stub import OpenAIStub  # noqa: E402

#: what each variant replaces, run before memplug's CLI
OUT = {
    "none": "",
    "diagnosis": "import memplug.diagnosis as d; d.diagnose = lambda *a, **k: None; "
    "d.sample_points = lambda *a, **k: None",
    "records": "import memplug.record as r; r.QuestionRecord.to_line = lambda self: b''",
    "stored": "import memplug.stored as s; s.StoredFile.write = lambda self, line: None",
}
OUT["all"] = "; ".join(OUT[k] for k in ("diagnosis", "records", "stored"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="injected seconds per chat completion")
    parser.add_argument("--seconds", type=float, default=4.0, help="ideal wall time of the cold run (sets n)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--warm-runs", type=int, default=5, help="reruns per variant (the fastest is reported)")
    args = parser.parse_args()
    c = args.concurrency
    n = max(c, int(args.seconds / args.latency) * c)
    result: dict = {"concurrency": c, "questions": n, "latency_s": args.latency, "warm_wall_s": {}, "of_cold": {}}
    with tempfile.TemporaryDirectory() as tmp, OpenAIStub(latency=args.latency) as stub:
        runs, cache = Path(tmp) / "runs", Path(tmp) / "cache"
        cold, _ = eval_throughput.run_eval("recent", stub.base_url, c, n, runs, cache)
        result["cold_wall_s"] = cold_wall = cold["efficiency"]["wall_s"]
        print(f"cold: {n} questions in {cold_wall:.3f} s", flush=True)
        for name, prelude in OUT.items():
            mode = f"out-{name}"
            eval_throughput.PRELUDES[mode] = f"{prelude + '; ' if prelude else ''}import runpy; {eval_throughput.CLI}"
            walls = []
            for _ in range(args.warm_runs):
                summary, _ = eval_throughput.run_eval("recent", stub.base_url, c, n, runs, cache, mode)
                if summary["llm"]["calls"]:
                    raise SystemExit(f"{name}: the warm rerun made {summary['llm']['calls']} calls")
                walls.append(summary["efficiency"]["wall_s"])
            result["warm_wall_s"][name] = min(walls)
            result["of_cold"][name] = round(min(walls) / cold_wall, 4)
            print(f"{name:>9} out: {', '.join(f'{w:.3f}' for w in walls)} s (fastest {min(walls) / cold_wall:.1%})")
    result["load_avg"] = [round(x, 1) for x in os.getloadavg()[:2]]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
