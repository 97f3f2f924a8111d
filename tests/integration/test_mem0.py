"""Mem0 end to end: real mem0ai, real Qdrant on disk, the stub as the run's LLM."""

from __future__ import annotations

import importlib.util

import pytest

from external_run import assert_isolated, evaluate

if importlib.util.find_spec("mem0") is None:  # not importorskip: importing mem0 early would turn its telemetry on
    pytest.skip("memplug[mem0] not installed", allow_module_level=True)
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_mem0_extracts_facts_with_the_runs_llm(testkit, llm_stub, tmp_path):
    rd = evaluate(tmp_path, "mem0", llm_stub)
    records = rd.records()
    assert len(records) == 4 and not any(r["error"] for r in records)
    assert rd.summary()["metrics"]["overall"]["em"] == 1.0
    extraction = [b for b in llm_stub.chat_requests if "Memory Extractor" in str(b["messages"][0])]
    assert len(extraction) == 2  # one add() per chunk per sample (4 short messages fit one chunk)
    assert all(b["model"] == "stub" for b in extraction)
    # fact extraction keeps no fact-to-message link: recall@K is not applicable, and the record says why
    assert all(r["meta"]["message_ids"].startswith("unavailable") for r in records)
    assert all(r["meta"]["sources"] for r in records)
    assert_isolated(records)
    for sample in ("s0", "s1"):  # the stores live in the sample's work directory
        work = rd.path / "work" / sample
        assert (work / "qdrant").is_dir() and (work / "mem0_history.db").is_file()


def test_mem0_without_inference_keeps_message_ids(testkit, llm_stub, tmp_path):
    rd = evaluate(tmp_path, "mem0", llm_stub, agent_options={"infer": "false", "threshold": "0"})
    records = rd.records()
    assert not any(r["error"] for r in records)
    assert rd.summary()["metrics"]["overall"]["recall@2"] == 1.0
    assert not any("Memory Extractor" in str(b["messages"][0]) for b in llm_stub.chat_requests)
    assert_isolated(records)
