"""bm25 ingesting one MemoryAgentBench-sized context: 1.5M tokens, as `memplug eval --dataset mab` feeds it.

MemoryAgentBench's longest contexts are about 1.5M tokens (ReDial's 1,480,000-token
``context_max_length``, InfBench-Sum's books). This script makes a synthetic context of
``--tokens`` o200k tokens with the offline NIAH-MQ generator (:mod:`memplug.datasets.mab.generator`:
RULER's needles in its noise haystack, repetitive text), writes it as a release parquet
file between two decoy rows of the same size, reads it back as ``--data`` (the loader
keeps the one row of the source) and builds the sample exactly as the ``mab`` dataset
does (the official sentence chunker at ``--chunk`` tokens, each chunk in the memorize
template), then drives the bm25 agent as the runner does: ``ingest`` of every chunk, then ``recall`` of every question (the first
recall builds the index). Targets: load + ingest + first recall under 60 s, and the
process's peak resident memory under 2 GB.

    .venv/bin/python bench/mab_ingest.py                     # 1,500,000 tokens, 4096-token chunks
    .venv/bin/python bench/mab_ingest.py --tokens 500000 --chunk 512

The last line is JSON: ``build_sample_s`` (read the parquet + chunk + wrap), ``ingest_s`` (every
``ingest`` call plus the first recall), ``total_s``, ``recall_p50_ms``, ``chunks``,
``hit_rate`` (share of questions whose needles' chunks were all recalled in the top 10),
``peak_rss_mb`` (getrusage, since the start) and whether both targets hold.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

TARGET_S = 60.0
TARGET_MB = 2048.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1_500_000, help="context length in o200k tokens")
    parser.add_argument("--chunk", type=int, default=4096, help="tokens per chunk (the data configs' 4096)")
    parser.add_argument("--questions", type=int, default=20, help="questions, four needles each")
    args = parser.parse_args(argv)

    from memplug.adapters.bm25 import BM25Agent
    from memplug.datasets.mab.builder import MABBuilder
    from memplug.models import AgentQuestion, Chunk
    from memplug.options import resolve
    from memplug.protocols import AgentConfig, BuildOptions

    import random
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from memplug.datasets.mab.generator import SOURCE, niah_mq_row

    folder = Path(tempfile.mkdtemp(prefix="mab-ingest-"))
    release = folder / "Accurate_Retrieval-00000-of-00001.parquet"
    wanted = niah_mq_row(args.tokens, args.questions, random.Random("mab-ingest"), "bench")
    decoy = {**wanted, "metadata": {**wanted["metadata"], "source": "decoy"}}
    pq.write_table(pa.Table.from_pylist([decoy, wanted, decoy]), release)  # the loader must skip the decoys
    del wanted, decoy
    t0 = time.perf_counter()
    values = {"source": SOURCE, "chunk": args.chunk}
    [sample] = list(MABBuilder().build(BuildOptions(values=values, data=release)))
    t1 = time.perf_counter()
    release.unlink()
    folder.rmdir()
    agent = BM25Agent(AgentConfig(options=resolve(BM25Agent.options, {}, "agent 'bm25'"), top_k=10), Path("."))
    for i, message in enumerate(sample.messages):
        agent.ingest(Chunk(index=i, messages=(message,)))
    asked = [AgentQuestion.of(q) for q in sample.questions]
    first = agent.recall(asked[0])
    t2 = time.perf_counter()
    latencies, hits = [], 0
    for question, recall in zip(sample.questions, [first, *(None for _ in asked[1:])]):
        s = time.perf_counter()
        recall = recall or agent.recall(AgentQuestion.of(question))
        latencies.append((time.perf_counter() - s) * 1000)
        recalled = {m for item in recall.items for m in item.message_ids}
        hits += set(question.targets) <= recalled
    agent.close()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = t2 - t0
    print(
        json.dumps(
            {
                "tokens": args.tokens,
                "chunk": args.chunk,
                "chunks": len(sample.messages),
                "context_chars": sum(len(m.text) for m in sample.messages),
                "build_sample_s": round(t1 - t0, 2),
                "ingest_s": round(t2 - t1, 2),
                "total_s": round(total, 2),
                "recall_p50_ms": round(statistics.median(latencies[1:] or latencies), 2),
                "hit_rate": hits / len(sample.questions),
                "peak_rss_mb": round(peak_mb, 1),
                "under_60s": total < TARGET_S,
                "under_2gb": peak_mb < TARGET_MB,
            }
        )
    )
    return 0 if total < TARGET_S and peak_mb < TARGET_MB else 1


if __name__ == "__main__":
    sys.exit(main())
