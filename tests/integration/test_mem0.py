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
    assert len(records) == 4 and not any(r.error for r in records)
    assert rd.summary().metrics.overall["em"] == 1.0
    extraction = [b for b in llm_stub.chat_requests if "Memory Extractor" in str(b["messages"][0])]
    assert len(extraction) == 2  # one add() per chunk per sample (4 short messages fit one chunk)
    assert all(b["model"] == "stub" for b in extraction)
    # fact extraction keeps no fact-to-message link: recall@K is not applicable, and the record says why
    assert all(r.meta["message_ids"].startswith("unavailable") for r in records)
    assert all(r.meta["sources"] for r in records)
    assert_isolated(records)
    for sample in ("s0", "s1"):  # the stores live in the sample's work directory
        work = rd.path / "work" / sample
        assert (work / "qdrant").is_dir() and (work / "mem0_history.db").is_file()


def test_mem0_without_inference_keeps_message_ids(testkit, llm_stub, tmp_path):
    rd = evaluate(tmp_path, "mem0", llm_stub, agent_options={"infer": "false", "threshold": "0"})
    records = rd.records()
    assert not any(r.error for r in records)
    assert rd.summary().metrics.overall["recall@2"] == 1.0
    assert not any("Memory Extractor" in str(b["messages"][0]) for b in llm_stub.chat_requests)
    assert_isolated(records)


def test_mem0_lists_what_it_stored(testkit, llm_stub, tmp_path):
    """stored.jsonl holds each sample's Mem0 memories (get_all by the sample's user id): offline
    (infer=false) the four messages verbatim with their ids; with fact extraction the facts,
    their chunk's message ids under meta.sources."""
    from memplug import stored

    rd = evaluate(tmp_path / "verbatim", "mem0", llm_stub, agent_options={"infer": "false", "threshold": "0"})
    lines = stored.read(rd.path)
    assert set(lines) == {"s0", "s1"}
    for sample, line in lines.items():
        assert line["total"] == 4 and len(line["items"]) == 4
        assert all(item["id"] for item in line["items"])  # Mem0's own memory ids
        assert sorted(i for item in line["items"] for i in item["message_ids"]) == ["m0", "m1", "m2", "m3"]
        assert all(item["text"].startswith(f"Item {sample.removeprefix('s')}-") for item in line["items"])

    rd = evaluate(tmp_path / "facts", "mem0", llm_stub)
    for sample, line in stored.read(rd.path).items():
        assert line["total"] >= 1
        assert all(not item["message_ids"] and item["meta"]["sources"] for item in line["items"])
        assert all(item["text"].startswith(f"Item {sample.removeprefix('s')}-") for item in line["items"])
