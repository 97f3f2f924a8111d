"""Ingesting one conversation of BEAM's largest tier (10M tokens) with memplug's native agents.

BEAM's 10M tier (README of mohammadtavakoli78/BEAM @ b2a3ee8): ten conversations of about
10M tokens, on average 10,435 user and 10,435 assistant messages each. Their chat.json files
are too large to come with the repository's snapshot and no copy is here, so this bench
makes a conversation of that size and shape and runs it through the same path as
``memplug eval --dataset beam``:

1. **make**: ``--tokens`` cl100k tokens (default 10,000,000) of templated sentences about
   people, places, dates and purchases (bench/agents_scale.py's generator, fixed seed),
   cut into ``--turns`` user messages (a third of a turn's text) and as many assistant
   replies (two thirds), written in the release's 10M layout: ``chats/10M/1/chat.json``
   as ten plans of ten batches of turns, message ids unique across plans, a time anchor
   per batch, and ``probing_questions/probing_questions.json`` with BEAM's 20 questions
   (two per ability) whose ``source_chat_ids`` are messages of the chat;
2. **load**: memplug's ``beam`` loader reads the folder (``load_s``: JSON parse and
   messages; ``tokens`` is the exact cl100k count of the loaded messages' texts);
3. **ingest**, for each ``--agents`` (bm25, emg) in a fresh process: one message per
   chunk, as the BEAM protocol feeds them (unit "message"), then the 20 probing
   questions recalled. ``ingest_msgs_per_s`` is the messages over ``ingest_s`` (every
   ``ingest`` call) plus ``build_s`` (the first recall, where bm25 builds its index);
   ``ingest_tokens_per_s`` the same in tokens; ``recall_p50_ms``/``recall_p95_ms`` are
   over the other 19 questions, asked ``--repeat`` times; ``peak_rss_mb`` is the process's
   peak resident memory from just before the agent was built (bench/agents_scale.py's
   VmHWM reset), ``agent_peak_mb`` that minus ``baseline_mb`` (interpreter, libraries
   and the loaded conversation); ``recalled_first`` the items the first recall returned
   (a check that the agent answers at all). The questions are templated ones about the sentences'
   slots, unrelated to their ``source_chat_ids``: this bench times, it does not score.

    .venv/bin/python bench/beam_ingest.py                                  # 10M tokens, bm25 and emg
    .venv/bin/python bench/beam_ingest.py --tokens 1000000 --turns 1067 --agents bm25   # the 1M tier's size

One JSON line per agent, then a summary JSON line (the last line) keyed by agent.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from memplug.datasets.beam.release import ABILITIES

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agents_scale  # noqa: E402  (the generator, memory probes and agent factory of the scale bench)

AGENTS = ("bm25", "emg")
#: README of BEAM, "Dataset Statistics", 10M row: user messages per conversation
TURNS_10M = 10_435
PLANS, BATCHES = 10, 10


def make_release(root: Path, tokens: int, turns: int, seed: int = 0) -> dict:
    """Write chats/10M/1 under ``root`` (see the module docstring); what was written."""
    from memplug.tokens import encoding

    per_sentence = 13  # bench/agents_scale.py's sentences average about 13 cl100k tokens
    sentences = [m.text for m in agents_scale.generate(int(tokens / per_sentence * 1.05) + 3 * turns, seed)]
    # counted as they stand in a message, after a space
    counts = np.cumsum([len(t) for t in encoding().encode_ordinary_batch([" " + s for s in sentences], num_threads=2)])
    used = int(np.searchsorted(counts, tokens)) + 1  # the fewest sentences holding ``tokens`` tokens
    cuts = np.linspace(0, used, turns + 1).astype(int)
    plans: list[dict] = []
    mid = 0
    per_batch = -(-turns // (PLANS * BATCHES))
    for p in range(PLANS):
        batches = []
        for b in range(BATCHES):
            turn_list = []
            for t in range((p * BATCHES + b) * per_batch, min((p * BATCHES + b + 1) * per_batch, turns)):
                lo, hi = int(cuts[t]), int(cuts[t + 1])
                split = lo + max((hi - lo) // 3, 1)
                anchor = f"{agents_scale.MONTHS[(p * BATCHES + b) % 12]}-{1 + b}-{2024 + p // 4}"
                user = {
                    "role": "user",
                    "id": mid,
                    "time_anchor": anchor,
                    "index": f"{b + 1},{len(turn_list) + 1}",
                    "question_type": "main_question",
                    "content": " ".join(sentences[lo:split]),
                }
                reply = {"role": "assistant", "id": mid + 1, "content": " ".join(sentences[split:hi])}
                turn_list.append([user, reply])
                mid += 2
            if turn_list:
                batches.append(
                    {"batch_number": b + 1, "turns": turn_list, "time_anchor": turn_list[0][0]["time_anchor"]}
                )
        plans.append({f"plan-{p + 1}": batches})
    folder = root / "chats" / "10M" / "1"
    (folder / "probing_questions").mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(plans))
    rng = np.random.default_rng(seed + 1)
    asked = agents_scale.questions(2 * len(ABILITIES), mid)
    probing = {
        a: [
            {
                "question": asked[2 * i + j].text,
                "answer": "",
                "rubric": ["(synthetic)"],
                "source_chat_ids": sorted(int(x) for x in rng.choice(mid, size=3, replace=False)),
            }
            for j in range(2)
        ]
        for i, a in enumerate(ABILITIES)
    }
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(probing))
    return {"folder": str(folder), "chat_json_mb": round((folder / "chat.json").stat().st_size / 2**20, 1)}


def measure(name: str, folder: str, top_k: int, repeat: int) -> dict:
    """One agent, in this process: load the folder with the beam loader, ingest, recall."""
    from memplug.datasets.beam.release import load_release
    from memplug.models import AgentQuestion, Chunk
    from memplug.tokens import encoding

    t = time.perf_counter()
    (sample,) = load_release(Path(folder))
    load_s = time.perf_counter() - t
    tokens = sum(len(ids) for ids in encoding().encode_ordinary_batch([m.text for m in sample.messages], num_threads=2))
    chunks = [Chunk(i, (m,)) for i, m in enumerate(sample.messages)]
    asked = [AgentQuestion.of(q) for q in sample.questions]
    gc.collect()
    gc.freeze()
    baseline_kb = agents_scale._rss_kb()
    reset = agents_scale._reset_peak()
    agent = agents_scale._make_agent(name, top_k)
    t0 = time.perf_counter()
    for chunk in chunks:
        agent.ingest(chunk)
    t1 = time.perf_counter()
    first = agent.recall(asked[0])
    t2 = time.perf_counter()
    latencies = []
    for _ in range(repeat):
        for q in asked[1:]:
            t = time.perf_counter()
            agent.recall(q)
            latencies.append(time.perf_counter() - t)
    peak_kb = agents_scale._peak_kb(reset)
    agent.close()
    n = len(sample.messages)
    return {
        "agent": name,
        "messages": n,
        "tokens": tokens,
        "questions": len(asked),
        "load_s": round(load_s, 2),
        "ingest_s": round(t1 - t0, 2),
        "build_s": round(t2 - t1, 2),
        "ingest_msgs_per_s": round(n / (t2 - t0), 1),
        "ingest_tokens_per_s": round(tokens / (t2 - t0)),
        "recall_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 2),
        "recall_p95_ms": round(float(np.percentile(latencies, 95)) * 1000, 2),
        "recalled_first": len(first.items),
        "top_k": top_k,
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "agent_peak_mb": round(max(peak_kb - baseline_kb, 0) / 1024, 1),
        "baseline_mb": round(baseline_kb / 1024, 1),
        "peak_since": "agent" if reset else "start",
        "load_avg": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10_000_000, help="cl100k tokens of the conversation")
    parser.add_argument("--turns", type=int, default=TURNS_10M, help="user messages (each with a reply)")
    parser.add_argument("--agents", default=",".join(AGENTS), help=f"comma list of {', '.join(AGENTS)}")
    parser.add_argument("--top-k", type=int, default=5, help="BEAM's retrieval depth (answer_generation.py k)")
    parser.add_argument("--repeat", type=int, default=5, help="times the 19 timed questions are asked")
    args = parser.parse_args()
    names = [a for a in args.agents.split(",") if a]
    if not names or set(names) - set(AGENTS):
        parser.error(f"--agents: choose from {', '.join(AGENTS)}")
    if args.tokens < 1000 or args.turns < PLANS * BATCHES or args.tokens < 30 * args.turns:
        parser.error(f"--tokens must be at least 1000 and 30 per turn, --turns at least {PLANS * BATCHES}")
    summary: dict = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "results": {}}
    with tempfile.TemporaryDirectory(prefix="beam10m-") as tmp:
        t = time.perf_counter()
        made = make_release(Path(tmp), args.tokens, args.turns)
        summary["make_s"] = round(time.perf_counter() - t, 1)
        summary["chat_json_mb"] = made["chat_json_mb"]
        for name in names:
            # a fresh process per agent, so that peak memory is this agent's alone
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                row = pool.apply(measure, (name, made["folder"], args.top_k, args.repeat))
            print(json.dumps(row), flush=True)
            summary["results"][name] = {k: v for k, v in row.items() if k != "agent"}
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    sys.exit(main())
