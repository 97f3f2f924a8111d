"""The decay agent reproduces the seed's Table 1 and consolidates what it recalls."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from memplug.adapters.decay import DecayAgent, consolidation_gain, recall_probability
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
    table = {"q": [1.0, 0.0], "near": [1.0, 0.0], "far": [0.0, 1.0], "mid": [0.6, 0.8]}

    def embed(self, texts):
        return np.asarray([self.table[t] for t in texts], dtype=np.float32)


def make_agent(monkeypatch, **options) -> DecayAgent:
    monkeypatch.setattr("memplug.adapters.retrieval.retriever.get_embedder", lambda name, llm=None: FixedEmbedder())
    return DecayAgent(AgentConfig(options=options, top_k=5), Path("."))


def test_recall_uses_dataset_time_and_consolidates(monkeypatch):
    agent = make_agent(monkeypatch, time_scale=1.0)
    agent.ingest(Chunk(0, [Message("a", "near", time="1000"), Message("b", "far", time="1000"),
                           Message("c", "mid", time="1000")]))
    first = agent.recall(AgentQuestion("q1", "q", "c", time="1000"))
    assert [i.message_ids for i in first.items] == [("a",)]  # r = 1, t = 0: p = 1
    assert first.items[0].score == pytest.approx(1.0)
    assert agent.g[0] == pytest.approx(1.0)  # S(0) = 0
    # two seconds later: t = 2, so p = (1 - exp(-e^-2)) / (1 - e^-1) < 0.86, nothing recalled
    later = agent.recall(AgentQuestion("q2", "q", "c", time="1002"))
    assert later.items == ()
    lenient = make_agent(monkeypatch, time_scale=1.0, threshold=0.1)
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


def _every_memory_recall(agent: DecayAgent, question: AgentQuestion) -> list:
    """Recall as first written: p for every memory (no relevance floor)."""
    agent._sync()
    relevance = agent.retriever.scores(question.text)
    now = float(question.time)
    last = np.where(np.isnan(agent.last), now, agent.last)
    elapsed = np.maximum(now - last, 0.0) / agent.time_scale
    p = recall_probability(np.maximum(relevance, 0.0), elapsed, agent.g)
    above = np.flatnonzero(p > agent.threshold)
    chosen = above[np.argsort(-p[above], kind="stable")][: agent.top_k]
    agent.g[chosen] += consolidation_gain(elapsed[chosen])
    agent.last[chosen] = now
    return [(agent.log.entries[i].message_id, float(p[i])) for i in chosen]


@pytest.mark.parametrize("threshold", [0.86, 0.5, 0.0, -0.5, 1.0, 1.7])
def test_relevance_floor_recalls_what_scoring_every_memory_recalls(monkeypatch, threshold):
    monkeypatch.setattr("memplug.adapters.retrieval.retriever.get_embedder", lambda name, llm=None: RandomEmbedder())
    agents = [DecayAgent(AgentConfig(options={"threshold": threshold, "time_scale": 50.0}, top_k=5), Path("."))
              for _ in range(2)]
    for agent in agents:
        agent.ingest(Chunk(0, [Message(str(i), f"m {i}", time=str(i)) for i in range(400)]))
        if threshold == 0.86:
            assert agent._min_relevance() is not None
    for j in range(30):
        q = AgentQuestion(f"q{j}", f"q {1000 + j}", "c", time=str(400 + 10 * j))
        fast = [(i.message_ids[0], i.score) for i in agents[0].recall(q).items]
        assert fast == _every_memory_recall(agents[1], q)
    assert np.array_equal(agents[0].g, agents[1].g) and np.array_equal(agents[0].last, agents[1].last)
