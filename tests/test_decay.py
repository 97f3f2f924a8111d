"""The decay agent reproduces the seed's Table 1 (seed-exact, ``relevance=cosine``),
consolidates what it recalls, and by default (``relevance=rank``) recalls on any
embedder's scale while still forgetting what is never recalled."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memplug.adapters.decay import RANK_STEP, DecayAgent, consolidation_gain, rank_relevance, recall_probability
from memplug.models import AgentQuestion, Chunk, Message
from memplug.protocols import AgentConfig

# seed 003, Table 1 (Model 1): relevance, time (s), gradient g, score
TABLE_1 = [
    (0.776, 434_700, 5.102, 0.850),
    (0.745, 148_800, 5.229, 0.830),
    (0.757, 331_500, 5.028, 0.836),
    (0.756, 55_800, 1.000, 0.836),
]


@pytest.mark.parametrize("r, seconds, g, score", TABLE_1)
def test_table_1_is_reproduced_with_a_time_scale_of_1e7_seconds(r, seconds, g, score):
    assert float(recall_probability(r, seconds / 1e7, g)) == pytest.approx(score, abs=1e-3)


def test_probability_is_one_for_full_relevance_at_time_zero_and_decays():
    assert float(recall_probability(1.0, 0.0, 1.0)) == pytest.approx(1.0)
    assert recall_probability(0.9, 2.0, 1.0) < recall_probability(0.9, 1.0, 1.0)
    # more consolidated memories decay more slowly
    assert recall_probability(0.9, 2.0, 3.0) > recall_probability(0.9, 2.0, 1.0)


def test_consolidation_gain_is_the_modified_sigmoid():
    assert float(consolidation_gain(0.0)) == 0.0
    assert float(consolidation_gain(1.0)) == pytest.approx((1 - math.exp(-1)) / (1 + math.exp(-1)))
    assert float(consolidation_gain(50.0)) == pytest.approx(1.0)


class FixedEmbedder:
    """Maps known texts to fixed unit vectors so relevance is exact."""

    name, dim = "fixed", 2
    table = {"q": [1.0, 0.0], "near": [1.0, 0.0], "far": [0.0, 1.0], "mid": [0.6, 0.8], "q far": [0.0, 1.0]}

    def embed(self, texts):
        return np.asarray([self.table[t] for t in texts], dtype=np.float32)


def make_agent(monkeypatch: pytest.MonkeyPatch, top_k: int = 5, **options: Any) -> DecayAgent:
    monkeypatch.setattr("memplug.adapters.retrieval.retriever.get_embedder", lambda name, llm=None: FixedEmbedder())
    return DecayAgent(AgentConfig(options=options, top_k=top_k), Path("."))


def test_seed_exact_recall_uses_dataset_time_and_consolidates(monkeypatch):
    agent = make_agent(monkeypatch, time_scale=1.0, relevance="cosine")
    agent.ingest(
        Chunk(
            0, [Message("a", "near", time="1000"), Message("b", "far", time="1000"), Message("c", "mid", time="1000")]
        )
    )
    first = agent.recall(AgentQuestion("q1", "q", "c", time="1000"))
    assert [i.message_ids for i in first.items] == [("a",)]  # r = 1, t = 0: p = 1
    assert first.items[0].score == pytest.approx(1.0)
    assert agent.g[0] == pytest.approx(1.0)  # S(0) = 0
    # two seconds later: t = 2, so p = (1 - exp(-e^-2)) / (1 - e^-1) < 0.86, nothing recalled
    later = agent.recall(AgentQuestion("q2", "q", "c", time="1002"))
    assert later.items == ()
    lenient = make_agent(monkeypatch, time_scale=1.0, threshold=0.1, relevance="cosine")
    lenient.ingest(Chunk(0, [Message("a", "near", time="1000")]))
    lenient.recall(AgentQuestion("q", "q", "c", time="1002"))
    assert lenient.g[0] == pytest.approx(1.0 + float(consolidation_gain(2.0)))
    assert lenient.last[0] == 1002


def test_question_without_time_is_asked_at_the_newest_memory(monkeypatch):
    agent = make_agent(monkeypatch)
    agent.ingest(Chunk(0, [Message("a", "near", time="2024年04月01日 周一 08:39")]))
    assert [i.message_ids for i in agent.recall(AgentQuestion("q", "q", "c")).items] == [("a",)]


class RandomEmbedder:
    """Fixed random unit vectors per text: relevances spread over (-1, 1)."""

    name, dim = "random", 4

    def embed(self, texts):
        rows = [np.random.default_rng(int(t.split()[-1])).normal(size=4) for t in texts]
        return np.asarray([r / np.linalg.norm(r) for r in rows], dtype=np.float32)


def _every_memory_recall(agent: DecayAgent, question: AgentQuestion) -> list[tuple[str, float]]:
    """Recall as first written: p for every memory (no relevance floor), r by a full sort
    of the cosines for ``relevance=rank``."""
    agent._sync()
    cosine = agent.retriever.scores(question.text)
    if agent.relevance == "rank":
        order = sorted(range(len(cosine)), key=lambda i: (-cosine[i], i))
        relevance = np.zeros(len(cosine))
        relevance[order] = [max(0.0, 1.0 - rank * (RANK_STEP / agent.top_k)) for rank in range(len(order))]
    else:
        relevance, order = np.maximum(cosine, 0.0), list(range(len(cosine)))
    assert question.time is not None
    now = float(question.time)
    last = np.where(np.isnan(agent.last), now, agent.last)
    elapsed = np.maximum(now - last, 0.0) / agent.time_scale
    p = recall_probability(relevance, elapsed, agent.g)
    above = [i for i in order if p[i] > agent.threshold]  # ties in p: the agent's order
    chosen = np.asarray(sorted(above, key=lambda i: -p[i])[: agent.top_k], dtype=int)
    agent.g[chosen] += consolidation_gain(elapsed[chosen])
    agent.last[chosen] = now
    return [(agent.log.entries[i].message_id, float(p[i])) for i in chosen]


@pytest.mark.parametrize("relevance", ["rank", "cosine"])
@pytest.mark.parametrize("threshold", [0.86, 0.5, 0.0, -0.5, 1.0, 1.7])
def test_relevance_floor_recalls_what_scoring_every_memory_recalls(monkeypatch, threshold, relevance):
    monkeypatch.setattr("memplug.adapters.retrieval.retriever.get_embedder", lambda name, llm=None: RandomEmbedder())
    options = {"threshold": threshold, "time_scale": 50.0, "relevance": relevance}
    agents = [DecayAgent(AgentConfig(options=options, top_k=5), Path(".")) for _ in range(2)]
    for agent in agents:
        agent.ingest(Chunk(0, [Message(str(i), f"m {i}", time=str(i)) for i in range(400)]))
        if threshold == 0.86:
            assert agent._min_relevance() is not None
    for j in range(30):
        q = AgentQuestion(f"q{j}", f"q {1000 + j}", "c", time=str(400 + 10 * j))
        fast = [(i.message_ids[0], i.score) for i in agents[0].recall(q).items]
        assert fast == _every_memory_recall(agents[1], q)
    assert np.array_equal(agents[0].g, agents[1].g) and np.array_equal(agents[0].last, agents[1].last)


def test_rank_relevance_is_one_for_the_best_match_and_steps_down_per_rank():
    cosine = np.asarray([0.2, 0.5, 0.5, 0.9, 0.1], dtype=np.float32)
    order, r = rank_relevance(cosine, top_k=2)
    assert order.tolist() == [3, 1, 2, 0, 4]  # the tie at 0.5 in dataset order
    assert r == pytest.approx([1.0, 0.95, 0.9, 0.85, 0.8])
    # the first `keep` are those of the full sort, ties at the cut included
    for keep in range(6):
        part_order, part_r = rank_relevance(cosine, top_k=2, keep=keep)
        assert part_order.tolist() == order[:keep].tolist() and part_r == pytest.approx(r[:keep])
    assert rank_relevance(np.linspace(0, 1, 100), top_k=1)[1].min() == 0.0  # clipped, never negative


class LowCosineEmbedder:
    """Every text a fixed random direction near one common vector: cosines of 0.2 to 0.4,
    far below the 0.784 the seed's threshold needs (wordllama's scale on MemSim)."""

    name, dim = "low", 64

    def embed(self, texts):
        common = np.zeros(64)
        common[0] = 1.0
        rows = [0.5 * common + np.random.default_rng(int(t.split()[-1])).normal(size=64) / 8 for t in texts]
        return np.asarray([r / np.linalg.norm(r) for r in rows], dtype=np.float32)


@pytest.mark.parametrize("relevance, recalled", [("rank", 5), ("cosine", 0)])
def test_by_default_the_top_k_by_cosine_is_recalled_on_a_low_cosine_scale(monkeypatch, relevance, recalled):
    monkeypatch.setattr("memplug.adapters.retrieval.retriever.get_embedder", lambda name, llm=None: LowCosineEmbedder())
    agent = DecayAgent(AgentConfig(options={"relevance": relevance}, top_k=5), Path("."))
    agent.ingest(Chunk(0, [Message(str(i), f"m {i}", time="2024-05-01") for i in range(8)]))
    question = AgentQuestion("q", "q 99", "c", time="2024-05-03")
    cosine = agent.retriever.scores(question.text)
    assert cosine.max() < 0.6
    items = agent.recall(question).items
    assert len(items) == recalled
    # what it recalls is the embedding agent's top k, in the same order
    assert [i.message_ids[0] for i in items] == [str(i) for i in np.argsort(-cosine, kind="stable")[:recalled]]


def test_by_default_a_memory_never_recalled_is_forgotten_and_a_rehearsed_one_kept(monkeypatch):
    """Two memories stored on 1 January, each the best match of its own question. One is
    asked about every ten days; two months on, it is still recalled (each recall reset its
    clock and grew g), while the other, the best match of its question too, never asked
    about, is forgotten: p fell below the threshold 28 days after it was stored."""

    def fresh() -> DecayAgent:
        agent = make_agent(monkeypatch, top_k=1)
        agent.ingest(Chunk(0, [Message("a", "near", time="2024-01-01"), Message("b", "far", time="2024-01-01")]))
        return agent

    control = fresh()  # nine days on, b's question still cues it
    cued = control.recall(AgentQuestion("q", "q far", "c", time="2024-01-10")).items
    assert [i.message_ids for i in cued] == [("b",)]
    agent = fresh()
    for day in ("2024-01-11", "2024-01-21", "2024-01-31", "2024-02-10", "2024-02-20", "2024-03-01"):
        assert [i.message_ids for i in agent.recall(AgentQuestion("q", "q", "c", time=day)).items] == [("a",)]
    assert agent.g[0] > 1.0 and agent.g[1] == 1.0
    forgotten = agent.recall(AgentQuestion("q", "q far", "c", time="2024-03-01")).items
    assert ("b",) not in [i.message_ids for i in forgotten]
    assert float(recall_probability(1.0, (60 * 86400) / 1e7, 1.0)) < 0.86  # why: 60 days unrecalled
