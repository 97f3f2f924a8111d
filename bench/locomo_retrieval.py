"""Retrieval on LoCoMo, both ways in use: turn recall@K and session hit@K (categories 1-4).

Each native agent ingests every conversation of the file one turn per chunk (the
official RAG unit) and recalls K items per question of categories 1-4 (category 5 is
unanswerable by design). Scores are memplug's own metrics: ``recall@K`` (the share of a
question's evidence turns among the dia_ids of the first K items) and ``session_hit@K``
(any evidence session among the first K distinct sessions recalled), averaged over the
questions with evidence. Nothing is downloaded: wordllama's weights ship with it.

    .venv/bin/python bench/locomo_retrieval.py                      # the shared conv-26
    .venv/bin/python bench/locomo_retrieval.py --data locomo10.json --k 5

The last line printed is a JSON object: per agent (name and options), turn_recall@K,
session_hit@K, the number of questions, seconds in all (ingestion included) and
milliseconds per question.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from memplug.adapters.bm25 import BM25Agent
from memplug.adapters.embedding import EmbeddingAgent
from memplug.adapters.hybrid import HybridAgent
from memplug.datasets.locomo.release import load_release
from memplug.metrics import RecallAtK, SessionHitAtK
from memplug.models import AgentQuestion, Chunk
from memplug.protocols import AgentConfig, MetricConfig, ScoreContext

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_conv26.json"

#: (label, agent class, options): the native retrieval agents as shipped, blends, and
#: `hybrid` (the issue-16 agent) with and without its session-aware selection
AGENTS = [
    ("bm25", BM25Agent, {}),
    ("embedding", EmbeddingAgent, {}),
    ("bm25+dense", BM25Agent, {"dense": 0.5}),
    ("hybrid", HybridAgent, {}),
    ("hybrid keep=5", HybridAgent, {"keep": 5}),
]


def evaluate(cls, options: dict, samples, k: int) -> dict:
    recall_metric, hit_metric = RecallAtK(MetricConfig(top_k=k)), SessionHitAtK(MetricConfig(top_k=k))
    recalls, hits = [], []
    t0 = time.perf_counter()
    for sample in samples:
        agent = cls(AgentConfig(options=options, top_k=k, sample_id=sample.id), Path("."))
        for i, message in enumerate(sample.messages):
            agent.ingest(Chunk(i, (message,)))
        for q in sample.questions:
            if q.meta["locomo_category"] == 5 or not q.targets:
                continue
            items = agent.recall(AgentQuestion.of(q)).items
            ctx = ScoreContext(q, "", items)
            recalls.append(recall_metric.score(ctx))
            hits.append(hit_metric.score(ctx))
        agent.close()
    return {
        f"turn_recall@{k}": round(sum(recalls) / len(recalls), 4),
        f"session_hit@{k}": round(sum(hits) / len(hits), 4),
        "n": len(recalls),
        "seconds": round(time.perf_counter() - t0, 2),
        "ms_per_question": round(1000 * (time.perf_counter() - t0) / max(len(recalls), 1), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo release file (locomo10.json layout)")
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    samples = list(load_release(args.data))
    out = {"data": str(args.data), "conversations": len(samples), "categories": [1, 2, 3, 4], "agents": {}}
    for label, cls, options in AGENTS:
        result = evaluate(cls, options, samples, args.k)
        out["agents"][label] = {"agent": cls.__name__, "options": options, **result}
        print(f"{label:<16} {json.dumps(result)}", flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
