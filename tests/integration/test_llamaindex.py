"""LlamaIndex end to end: real llama-index-core VectorStoreIndex, memplug's embedder, the stub LLM."""

from __future__ import annotations

import pytest

from external_run import assert_isolated, evaluate

pytest.importorskip("llama_index.core", reason="memplug[llamaindex] not installed")
pytestmark = pytest.mark.integration


def test_llamaindex_retrieves_messages_with_their_ids(testkit, llm_stub, tmp_path):
    rd = evaluate(tmp_path, "llamaindex", llm_stub)
    records = rd.records()
    assert len(records) == 4 and not any(r.error for r in records)
    summary = rd.summary()
    assert summary.metrics.overall["recall@2"] == 1.0 and summary.metrics.overall["em"] == 1.0
    assert not any(r.agent_answered for r in records)  # the run's reader answered
    assert_isolated(records)
    assert (rd.path / "work" / "s0" / "llamaindex" / "docstore.json").is_file()


def test_llamaindex_query_engine_answers_with_the_runs_llm(testkit, llm_stub, tmp_path):
    rd = evaluate(tmp_path, "llamaindex", llm_stub, agent_options={"answer": "true", "node": "chunk"})
    records = rd.records()
    assert not any(r.error for r in records) and all(r.agent_answered for r in records)
    assert rd.summary().metrics.overall["em"] == 1.0
    # a chunk node carries the ids of all its messages, so the target is always among them
    assert rd.summary().metrics.overall["recall@2"] == 1.0
    assert rd.summary().llm.calls >= 4  # the query engine's calls went through memplug's LLM
    assert_isolated(records)


def test_llamaindex_lists_its_nodes(testkit, llm_stub, tmp_path):
    """stored.jsonl holds each sample's nodes (the index's docstore) with their message ids."""
    from memplug import stored

    rd = evaluate(tmp_path, "llamaindex", llm_stub)
    lines = stored.read(rd.path)
    assert set(lines) == {"s0", "s1"}
    for sample, line in lines.items():
        assert line["total"] == 4
        assert [i["message_ids"] for i in line["items"]] == [["m0"], ["m1"], ["m2"], ["m3"]]
        assert all(
            i["id"] and f"Item {sample.removeprefix('s')}-{n} is " in i["text"] for n, i in enumerate(line["items"])
        )
