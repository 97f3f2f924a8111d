"""Letta through the real letta-client against tests/letta_stub.py (the real server runs only on Postgres).

The stub serves the endpoints the agent calls with letta-client's payload shapes; see
docs/agents/letta.md for running the same tests' commands against a real Letta server.
"""

from __future__ import annotations

import pytest

from memplug.errors import RunStopped

from external_run import assert_isolated, evaluate

pytest.importorskip("letta_client", reason="memplug[letta] not installed")
pytestmark = pytest.mark.integration

EMBEDDER = "litellm:openai/text-embedding-3-small"


@pytest.fixture
def letta(llm_stub):
    from letta_stub import LettaStub

    with LettaStub(llm_base_url=llm_stub.base_url) as server:
        yield server


def test_letta_archival_search_with_message_ids(testkit, llm_stub, letta, tmp_path):
    rd = evaluate(
        tmp_path, "letta", llm_stub, embedder=EMBEDDER, agent_options={"server": letta.base_url, "passage": "message"}
    )
    records = rd.records()
    assert len(records) == 4 and not any(r.error for r in records), [r.error for r in records]
    overall = rd.summary().metrics.overall
    assert overall["recall@2"] == 1.0 and overall["em"] == 1.0
    assert len(letta.created) == 2 and not letta.agents  # one agent per sample, each deleted on close
    assert {a["llm_config"]["handle"] for a in letta.created} == {"openai/stub"}
    assert {a["embedding_config"]["handle"] for a in letta.created} == {"openai/text-embedding-3-small"}
    assert not any("archival_memory_search" in {t["name"] for t in a["tools"]} for a in letta.created)  # never messaged
    assert_isolated(records)


def test_letta_agent_answers_from_chunk_passages(testkit, llm_stub, letta, tmp_path):
    rd = evaluate(
        tmp_path, "letta", llm_stub, embedder=EMBEDDER, agent_options={"server": letta.base_url, "mode": "message"}
    )
    records = rd.records()
    assert not any(r.error for r in records), [r.error for r in records]
    assert all(r.agent_answered for r in records) and rd.summary().metrics.overall["em"] == 1.0
    assert rd.summary().metrics.overall["recall@2"] == 1.0  # a chunk passage carries all its ids
    # the agent was given the tool to search the archive it answers from
    assert all("archival_memory_search" in {t["name"] for t in a["tools"]} for a in letta.created)
    assert not letta.agents
    assert_isolated(records)


def test_letta_names_the_option_for_an_embedding_handle(testkit, llm_stub, tmp_path, monkeypatch):
    monkeypatch.delenv("LETTA_BASE_URL", raising=False)
    with pytest.raises(RunStopped, match=r"agent 'letta' could not be set up: .*--embedder litellm:<handle>"):
        evaluate(tmp_path, "letta", llm_stub, embedder="wordllama")


def test_letta_lists_its_archival_passages(testkit, llm_stub, letta, tmp_path, monkeypatch):
    """stored.jsonl holds each sample's archival passages (paged by 100: the page size is
    lowered to 3 here so that four passages take two pages), with Letta's ids and the
    message ids from their tags."""
    from memplug import stored
    from memplug.adapters import letta as letta_adapter

    monkeypatch.setattr(letta_adapter, "STORED_PAGE", 3)
    rd = evaluate(
        tmp_path, "letta", llm_stub, embedder=EMBEDDER, agent_options={"server": letta.base_url, "passage": "message"}
    )
    lines = stored.read(rd.path)
    assert set(lines) == {"s0", "s1"}
    for sample, line in lines.items():
        assert line["total"] == 4
        assert [i["message_ids"] for i in line["items"]] == [["m0"], ["m1"], ["m2"], ["m3"]]
        assert all(i["id"].startswith("passage-") for i in line["items"])
        assert all(f"Item {sample.removeprefix('s')}-" in i["text"] for i in line["items"])
