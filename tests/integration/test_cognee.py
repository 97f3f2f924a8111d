"""Cognee end to end: real cognee (SQLite, LanceDB, its graph store) in the run folder, the stub LLM."""

from __future__ import annotations

import importlib.util

import pytest

from memplug.errors import RunStopped

from external_run import assert_isolated, cli_evaluate, evaluate

if importlib.util.find_spec("cognee") is None:  # importing cognee is slow; skip without it
    pytest.skip("memplug[cognee] not installed", allow_module_level=True)
pytestmark = [pytest.mark.integration, pytest.mark.slow]

EMBEDDER = "litellm:openai/stub-embed"


def test_cognee_cognifies_each_chunk_and_recalls_its_chunks(testkit_env, llm_stub, tmp_path):
    rd = cli_evaluate(tmp_path, testkit_env, "cognee", llm_stub, "--embedder", EMBEDDER, "--concurrency", "2")
    records = rd.records()
    assert len(records) == 4 and not any(r.error for r in records), [r.error for r in records]
    overall = rd.summary().metrics.overall
    assert overall["recall@2"] == 1.0 and overall["em"] == 1.0
    graph_calls = [b for b in llm_stub.chat_requests if "knowledge graph" in str(b["messages"][0])]
    assert graph_calls and all(b["model"] == "stub" for b in graph_calls)  # cognify used the run's model
    assert_isolated(records)
    root = rd.path / "work" / "cognee"
    assert (root / "system" / "databases").is_dir() and (root / "data").is_dir()


def test_cognee_lists_what_it_stored(testkit_env, llm_stub, tmp_path):
    """stored.jsonl holds the nodes of each sample's Cognee graph: its chunks with the message ids
    whose text they hold, then what cognify drew from them, their chunks' ids under meta.sources.
    With cognify=end the graph is built in settle(), before the runner asks: listed the same way,
    and the time cognify took is on each record as settle_s."""
    from memplug import stored

    rd = cli_evaluate(tmp_path / "each", testkit_env, "cognee", llm_stub, "--embedder", EMBEDDER, "--concurrency", "2")
    assert not any(r.error for r in rd.records())
    lines = stored.read(rd.path)
    assert set(lines) == {"s0", "s1"}
    for sample, line in lines.items():
        assert line["total"] == len(line["items"])
        assert all(item["id"] for item in line["items"])  # Cognee's node ids
        # Cognee's 4096-token chunks: the sample's four messages are one chunk, listed first
        (chunk,) = [item for item in line["items"] if item["meta"]["type"] == "DocumentChunk"]
        assert line["items"][0] == chunk and chunk["message_ids"] == ["m0", "m1", "m2", "m3"]
        assert chunk["text"].startswith(f"Item {sample.removeprefix('s')}-0 is ")
        drawn = line["items"][1:]  # its summary and entities: no ids of their own, their chunk's as sources
        assert {item["meta"]["type"] for item in drawn} == {"TextSummary", "Entity"}
        assert all(not item["message_ids"] and item["meta"]["sources"] == ["m0", "m1", "m2", "m3"] for item in drawn)
        other = "Item 1-" if sample == "s0" else "Item 0-"
        assert not any(other.lower() in item["text"].lower() for item in line["items"])  # no other sample's nodes

    rd = cli_evaluate(tmp_path / "end", testkit_env, "cognee", llm_stub, "--embedder", EMBEDDER, "-o", "cognify=end")
    assert not any(r.error for r in rd.records())
    assert all(r.timings.settle_s is not None and r.timings.settle_s > 0 for r in rd.records())
    assert set(stored.read(rd.path)) == {"s0", "s1"}


def test_cognee_completion_search_writes_the_answer(testkit_env, llm_stub, tmp_path):
    rd = cli_evaluate(
        tmp_path,
        testkit_env,
        "cognee",
        llm_stub,
        "--embedder",
        EMBEDDER,
        "-o",
        "cognify=end",
        "-o",
        "search=GRAPH_COMPLETION",
    )
    records = rd.records()
    assert not any(r.error for r in records), [r.error for r in records]
    assert all(r.agent_answered and r.prediction for r in records)
    assert_isolated(records)


def test_cognee_names_the_option_to_set_for_an_embedder(testkit, llm_stub, tmp_path):
    # the default wordllama embedder cannot be handed to cognee: the run stops at set-up, one line
    # (in-process is safe here: the error comes before Cognee runs anything asynchronous)
    with pytest.raises(RunStopped, match=r"agent 'cognee' could not be set up: .*--embedder litellm:<model>"):
        evaluate(tmp_path, "cognee", llm_stub)


def test_importing_cognee_keeps_memplugs_log_handlers(tmp_path):
    """cognee's setup_logging() at import drops every root handler; memplug.log must survive it."""
    import logging
    import sys

    from memplug.adapters.cognee import configure_cognee
    from memplug.logs import logs_to
    from memplug.protocols import AgentConfig

    sys.modules.pop("cognee", None)
    with logs_to(tmp_path) as log:
        before = logging.getLogger().handlers[:]
        try:
            configure_cognee(AgentConfig(), tmp_path / "cognee")  # fails after the import: no --llm
        except Exception:  # noqa: BLE001 - only the import's side effect matters here
            pass
        assert logging.getLogger().handlers == before
        logging.getLogger("memplug.test").warning("still logged")
    assert "still logged" in log.read_text()
