"""Ingest throughput, recall latency and peak memory of bm25, embedding, decay and emg.

For each agent and size N, a fresh agent ingests N synthetic messages in chunks of 16,
then answers ``--questions`` questions. Ingest time includes building the indexes
(the first recall after ingestion, where bm25 re-indexes and dense agents embed what
they queued), so ``ingest_per_s`` is the honest rate of getting N messages searchable;
recall latencies are measured on the questions that follow. Each measurement runs in a
fresh process; ``peak_mb`` is that process's peak resident memory minus its resident
memory just before the agent was built (libraries and the embedder already loaded).

    .venv/bin/python bench/agents_scale.py --sizes 1000,10000,100000,1000000

The last line printed is a JSON object keyed by agent, then by size.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import resource
import time
from pathlib import Path

import numpy as np

from memplug.adapters.bm25 import BM25Agent
from memplug.adapters.decay import DecayAgent
from memplug.adapters.emg import EMGAgent
from memplug.adapters.embedding import EmbeddingAgent
from memplug.adapters.retrieval.embedders import get_embedder
from memplug.models import AgentQuestion, Chunk, Message
from memplug.protocols import AgentConfig

AGENTS = {"bm25": BM25Agent, "embedding": EmbeddingAgent, "decay": DecayAgent, "emg": EMGAgent}
PEOPLE = [f"{a} {b}" for a in ("Anna", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun")
          for b in ("Abe", "Berg", "Cruz", "Diaz", "Engel", "Fox", "Gray", "Holm", "Ito", "Jaro")]
RELATIONS = ["is married to", "was born in the city of", "works in the field of", "is a citizen of",
             "plays the position of", "is employed by", "speaks the language of"]
VALUES = [f"Value{i}" for i in range(5000)]


def messages(n: int, seed: int = 0) -> list[Message]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        subject = f"{rng.choice(PEOPLE)} {i % 997}"
        out.append(Message(str(i), f"{subject} {rng.choice(RELATIONS)} {rng.choice(VALUES)}.",
                           time=str(1_700_000_000 + 60 * i)))
    return out


def measure(cls, n: int, questions: int) -> dict[str, float]:
    msgs = messages(n)
    rng = random.Random(1)
    asked = [AgentQuestion(f"q{j}", f"Who is {rng.choice(PEOPLE)} {rng.randrange(997)} married to?", "bench",
                           time=str(1_700_000_000 + 60 * n)) for j in range(questions + 1)]
    get_embedder("wordllama")  # loaded before the baseline, like a warm process
    baseline_kb = _rss_kb()
    agent = cls(AgentConfig(top_k=5), Path("."))
    t0 = time.perf_counter()
    for start in range(0, n, 16):
        agent.ingest(Chunk(start // 16, msgs[start : start + 16]))
    agent.recall(asked[0])  # builds what ingestion left for later
    ingest_s = time.perf_counter() - t0
    latencies = []
    for q in asked[1:]:
        t = time.perf_counter()
        agent.recall(q)
        latencies.append(time.perf_counter() - t)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux
    agent.close()
    return {
        "ingest_per_s": round(n / ingest_s, 1),
        "recall_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 3),
        "recall_p95_ms": round(float(np.percentile(latencies, 95)) * 1000, 3),
        "peak_mb": round(max(peak_kb - baseline_kb, 0) / 1024, 1),
    }


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def _measure_in_child(args: tuple[str, int, int]) -> dict[str, float]:
    name, n, questions = args
    return measure(AGENTS[name], n, questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--questions", type=int, default=50)
    args = parser.parse_args()
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name in args.agents.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            # a fresh process per measurement, so peak memory is this agent's alone
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                row = pool.apply(_measure_in_child, ((name, n, args.questions),))
            results.setdefault(name, {})[str(n)] = row
            print(f"{name:10s} {n:>8d} {row}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
