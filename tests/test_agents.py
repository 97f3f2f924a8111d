"""The MemSim baselines: full, recent, none, bm25, embedding, noisy, oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, TypeVar

import pytest

from memplug.adapters.bm25 import BM25Agent
from memplug.adapters.embedding import EmbeddingAgent
from memplug.adapters.full import FullAgent
from memplug.adapters.noisy import NoisyAgent
from memplug.adapters.none import NoneAgent
from memplug.adapters.oracle import OracleAgent
from memplug.adapters.recent import RecentAgent
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, Chunk, Message, Question, Recall, Sample
from memplug.protocols import AgentConfig, MemoryAgent, ReferenceChannel

MESSAGES = [
    Message("0", "My boss only finished high school."),
    Message("1", "My boss's email is zhao@example.com."),
    Message("2", "My boss is called Zhao Yalin."),
    Message("3", "My cousin has a doctorate."),
    Message("4", "My colleague finished high school too."),
    Message("5", "My uncle lives in Qingdao."),
]
QUESTION = Question("q0", "What is my boss called?", ("Zhao Yalin",), targets=("2",))
SAMPLE = Sample("s0", MESSAGES, [QUESTION])


A = TypeVar("A", bound=MemoryAgent)


def fed(cls: Callable[[AgentConfig, Path], A], **config: Any) -> A:
    agent = cls(AgentConfig(**config), Path("."))
    agent.ingest(Chunk(0, MESSAGES[:4]))  # several messages per chunk
    agent.ingest(Chunk(1, MESSAGES[4:]))
    return agent


def ids(recall: Recall) -> list[str]:
    return [i for item in recall.items for i in item.message_ids]


def test_every_agent_satisfies_the_protocol_and_returns_per_message_items():
    for cls in (FullAgent, RecentAgent, NoneAgent, BM25Agent, EmbeddingAgent):
        agent = fed(cls)
        assert isinstance(agent, MemoryAgent)
        recall = agent.recall(AgentQuestion.of(QUESTION))
        assert all(len(item.message_ids) == 1 for item in recall.items)
        assert recall.answer is None
        agent.close()


def test_full_keeps_everything_within_budget_and_drops_oldest_first():
    assert ids(fed(FullAgent).recall(AgentQuestion.of(QUESTION))) == ["0", "1", "2", "3", "4", "5"]
    small = fed(FullAgent, options={"max_tokens": 20})
    kept = ids(small.recall(AgentQuestion.of(QUESTION)))
    assert kept and kept == [m.id for m in MESSAGES][-len(kept) :] and len(kept) < 6


def test_recent_keeps_the_last_k():
    assert ids(fed(RecentAgent, top_k=2).recall(AgentQuestion.of(QUESTION))) == ["4", "5"]
    assert ids(fed(RecentAgent, options={"k": 3}).recall(AgentQuestion.of(QUESTION))) == ["3", "4", "5"]


def test_none_recalls_nothing():
    assert fed(NoneAgent).recall(AgentQuestion.of(QUESTION)).items == ()


@pytest.mark.parametrize("cls", [BM25Agent, EmbeddingAgent])
def test_retrievers_find_the_target_and_return_k(cls):
    recall = fed(cls, top_k=3).recall(AgentQuestion.of(QUESTION))
    assert "2" in ids(recall) and len(recall.items) == 3
    scores = [item.score for item in recall.items if item.score is not None]
    assert len(scores) == len(recall.items) and scores == sorted(scores, reverse=True)


def test_bm25_ranks_the_target_first():
    recall = fed(BM25Agent, top_k=3).recall(AgentQuestion.of(QUESTION))
    assert ids(recall)[0] == "2" and recall.items[0].text == MESSAGES[2].text


def test_bm25_options_are_parsed_and_checked():
    agent = fed(BM25Agent, options={"feedback": "0", "dense": "0.5", "rerank": "perltqa"})
    assert agent.retriever.feedback == 0.0 and agent.retriever.dense == 0.5 and agent.reranker is not None
    recall = agent.recall(AgentQuestion.of(QUESTION))
    assert ids(recall)[0] == "2"
    assert recall.meta["memory_type"] in ("semantic", "episodic")  # its call, scored by memory_type
    assert "memory_type" not in fed(BM25Agent).recall(AgentQuestion.of(QUESTION)).meta  # no reranker, no call
    with pytest.raises(MemplugError, match="must be one of"):
        BM25Agent(AgentConfig(options={"rerank": "bert"}), Path("."))


def test_oracle_and_noisy_use_only_the_reference_channel():
    reference = ReferenceChannel.of(SAMPLE)
    question = AgentQuestion.of(QUESTION)  # carries no targets
    assert not hasattr(question, "targets")
    assert ids(fed(OracleAgent, reference=reference).recall(question)) == ["2"]
    assert ids(fed(NoisyAgent, reference=reference).recall(question)) == ["0", "1", "3", "4", "5"]


@pytest.mark.parametrize("cls", [OracleAgent, NoisyAgent])
def test_reference_agents_refuse_to_run_without_the_channel(cls):
    with pytest.raises(MemplugError, match="reference channel"):
        cls(AgentConfig(), Path("."))


@pytest.mark.parametrize("agent", ["oracle", "noisy"])
def test_reference_agents_refuse_a_dataset_that_names_no_targets(tmp_path, agent):
    """FactConsolidation's questions name no target message: oracle recalled nothing and its
    ceiling read 0.000 (exit 0) before; now the run is refused before its first question."""
    from memplug.models import Message, Question, Sample
    from memplug.runner import Evaluation, RunSpec
    from memplug.serialize import dumps_sample

    data = tmp_path / "blind.jsonl"
    sample = Sample("s", [Message("m0", "Paris is in France.")], [Question("q", "Where is Paris?", ("France",))])
    data.write_text(dumps_sample(sample) + "\n")
    with pytest.raises(MemplugError, match=f"agent '{agent}' recalls by each question's target messages"):
        Evaluation(RunSpec(agent=agent, dataset="memsim", data=str(data))).run(output=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()
