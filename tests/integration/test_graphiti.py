"""Graphiti end to end: real graphiti-core on a real embedded Kùzu database per sample, the
loopback stub answering graphiti's structured-output requests (tests/graphiti_stub.py)."""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from external_run import assert_isolated, cli_evaluate, evaluate, system_reply
from memplug.record import QuestionRecord

if TYPE_CHECKING:
    from openai_stub import OpenAIStub

if importlib.util.find_spec("graphiti_core") is None or importlib.util.find_spec("kuzu") is None:
    pytest.skip("memplug[graphiti] not installed", allow_module_level=True)
pytestmark = [pytest.mark.integration, pytest.mark.slow]

ITEM = re.compile(r"Item (\d+)-(\d+) is \w+\.")


@pytest.fixture
def graphiti_stub(monkeypatch):
    """The OpenAI stub answering graphiti's schemas, and the counting dataset's reader otherwise."""
    from graphiti_stub import graphiti_reply
    from openai_stub import OpenAIStub

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIStub(reply=functools.partial(graphiti_reply, fallback=system_reply), embed_dim=64) as stub:
        yield stub


def schema_names(stub: OpenAIStub) -> list[str]:
    names = []
    for body in stub.chat_requests:
        fmt = body.get("response_format") or {}
        names.append((fmt.get("json_schema") or {}).get("name") or fmt.get("type") or "text")
    return names


def assert_facts_carry_their_message_ids(records: list[QuestionRecord]) -> None:
    """Every recalled fact names the item of exactly the message id it carries."""
    for record in records:
        assert record.recalled, record
        for item in record.recalled:
            ((sample, index),) = ITEM.findall(item.text)
            assert f"s{sample}" == record.sample_id and item.message_ids == (f"m{index}",), item


def test_graphiti_extracts_facts_and_recalls_them_with_their_message_ids(testkit, graphiti_stub, tmp_path):
    # 12 tokens a chunk: each counting message ("Item 0-1 is lamp.", 7 or 8 tokens) is an episode of its own
    rd = evaluate(tmp_path, "graphiti", graphiti_stub, chunk_size=12)
    records = rd.records()
    assert len(records) == 4 and not any(r.error for r in records), [r.error for r in records]
    overall = rd.summary().metrics.overall
    assert overall["recall@2"] == 1.0 and overall["em"] == 1.0
    assert_facts_carry_their_message_ids(records)
    assert_isolated(records)
    names = schema_names(graphiti_stub)
    # one entity and one fact extraction per episode: 2 samples x 4 messages
    assert names.count("ExtractedEntities") == 8 and names.count("ExtractedEdges") == 8
    assert all(b["model"] == "stub" for b in graphiti_stub.chat_requests)
    # graphiti's calls went through the run's LLM: counted in the run's usage
    assert rd.summary().llm.calls >= len(graphiti_stub.chat_requests)
    for record in records:  # the episode's reference time is unknown: facts say so, as graphiti's context does
        assert all(item.text.endswith("(date range: date unknown - present)") for item in record.recalled)
    for sample in ("s0", "s1"):  # one Kùzu database per sample, in its work directory
        assert (rd.path / "work" / sample / "kuzu").exists()


def test_graphiti_lists_what_it_stored(testkit, graphiti_stub, tmp_path):
    """stored.jsonl holds each sample's facts (EntityEdge.get_by_group_ids for its group id), with
    Graphiti's edge uuids and the message ids of the episodes that stated them."""
    from memplug import stored

    rd = evaluate(tmp_path, "graphiti", graphiti_stub, chunk_size=12)
    assert not any(r.error for r in rd.records())
    lines = stored.read(rd.path)
    assert set(lines) == {"s0", "s1"}
    for sample, line in lines.items():
        assert line["total"] == len(line["items"]) >= 4  # a fact per message, at least
        seen = set()
        for item in line["items"]:
            ((owner, index),) = ITEM.findall(item["text"])
            assert f"s{owner}" == sample and item["message_ids"] == [f"m{index}"], item  # no other sample's facts
            assert item["id"] and item["meta"]["name"] and item["meta"]["created_at"]
            seen.add(item["message_ids"][0])
        assert seen == {"m0", "m1", "m2", "m3"}


def test_graphiti_chunk_episodes_credit_every_message_of_the_chunk(testkit, graphiti_stub, tmp_path):
    # 64 tokens a chunk hold all four messages: one episode, whose facts carry all four ids
    rd = evaluate(tmp_path, "graphiti", graphiti_stub, chunk_size=64, agent_options={"dates": "false"})
    records = rd.records()
    assert not any(r.error for r in records), [r.error for r in records]
    assert schema_names(graphiti_stub).count("ExtractedEntities") == 2
    for record in records:
        for item in record.recalled:
            assert item.message_ids == ("m0", "m1", "m2", "m3") and ITEM.fullmatch(item.text)
    assert rd.summary().metrics.overall["em"] == 1.0


def test_graphiti_json_object_mode_puts_the_schema_in_the_prompt(testkit, graphiti_stub, tmp_path):
    rd = evaluate(
        tmp_path,
        "graphiti",
        graphiti_stub,
        chunk_size=12,
        agent_options={"structured": "json_object", "reranker": "mmr"},
    )
    records = rd.records()
    assert not any(r.error for r in records), [r.error for r in records]
    assert_facts_carry_their_message_ids(records)
    extraction = [
        b
        for b in graphiti_stub.chat_requests
        if "Respond with a JSON object in the following format" in b["messages"][-1]["content"]
    ]
    assert extraction and all(b["response_format"] == {"type": "json_object"} for b in extraction)
    assert not any("max_tokens" in b for b in extraction)  # graphiti's 16384 is not forwarded


def test_graphiti_replies_can_be_capped(testkit, graphiti_stub, tmp_path):
    rd = evaluate(tmp_path, "graphiti", graphiti_stub, chunk_size=12, agent_options={"max_tokens": "900"})
    assert not any(r.error for r in rd.records())
    extraction = [b for b in graphiti_stub.chat_requests if (b.get("response_format") or {}).get("json_schema")]
    assert extraction and all(b["max_tokens"] == 900 for b in extraction)


def test_graphiti_reference_times_are_the_messages_times(graphiti_stub, tmp_path):
    """An episode's reference time is its first message's; graphiti dates its facts with it."""
    import asyncio

    from memplug.adapters.graphiti import GraphitiAgent
    from memplug.llm import LLM
    from memplug.models import AgentQuestion, Chunk, Message
    from memplug.protocols import AgentConfig

    llm = LLM("openai/stub", api_base=graphiti_stub.base_url, api_key="sk-test", use_cache=False)
    agent = GraphitiAgent(AgentConfig(llm=llm, top_k=3, sample_id="one/two"), tmp_path / "w")
    try:

        async def go():
            await agent.aingest(Chunk(0, [Message("a", "I moved to Lisbon.", time="2024-04-01T08:30", speaker="Ana")]))
            await agent.aingest(Chunk(1, [Message("b", "I adopted Biscuit.", time="2024-05-02T09:00", speaker="Ana")]))
            return await agent.arecall(AgentQuestion("q", "Where did Ana move?", "simple"))

        recall = asyncio.run(go())
    finally:
        agent.close()
        llm.close()
    assert agent.group_id == "one_two"
    episodes = [
        b
        for b in graphiti_stub.chat_requests
        if (b.get("response_format") or {}).get("json_schema", {}).get("name") == "ExtractedEdges"
    ]
    assert re.search(r"<REFERENCE_TIME>\n2024-04-01[ T]08:30:00\+00:00", episodes[0]["messages"][-1]["content"])
    assert "Ana: I moved to Lisbon." in episodes[0]["messages"][-1]["content"]
    by_id = {item.message_ids: item.text for item in recall.items}
    assert "Lisbon" in by_id[("a",)] and "Biscuit" in by_id[("b",)]


def test_graphiti_without_llm_stops_at_preflight_with_exit_2(testkit_env, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplug.cli",
            "eval",
            "--agent",
            "graphiti",
            "--dataset",
            "counting",
            "--output",
            str(tmp_path / "runs"),
        ],
        env=testkit_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "agent 'graphiti' needs an LLM for entity and fact extraction" in lines[0]
    assert "--llm MODEL" in lines[0]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_graphiti_through_the_cli(testkit_env, graphiti_stub, tmp_path):
    """`memplug eval --agent graphiti` in its own process: telemetry off, facts recalled, exit 0."""
    rd = cli_evaluate(tmp_path, testkit_env, "graphiti", graphiti_stub, "--chunk-size", "12")
    records = rd.records()
    assert not any(r.error for r in records), [r.error for r in records]
    assert rd.summary().metrics.overall["recall@2"] == 1.0
    assert_facts_carry_their_message_ids(records)
    run = json.loads((rd.path / "run.json").read_text())
    assert run["status"] == "finished"


def test_many_samples_open_their_databases_at_once(graphiti_stub, tmp_path):
    """Kùzu's default address space per database (8 TiB) let only 15 open in one process;
    the agent bounds it, so a run with --concurrency 32 sets up every sample."""
    from memplug.adapters.graphiti import KUZU_MAX_DB_SIZE, GraphitiAgent
    from memplug.llm import LLM
    from memplug.protocols import AgentConfig

    llm = LLM("openai/stub", api_base=graphiti_stub.base_url, api_key="sk-test", use_cache=False)
    agents = [
        GraphitiAgent(AgentConfig(llm=llm, sample_id=f"s{i}", options={"buffer_pool_mb": "32"}), tmp_path / f"s{i}")
        for i in range(24)
    ]
    try:
        assert all(
            a.driver.db.max_db_size == KUZU_MAX_DB_SIZE and a.driver.db.buffer_pool_size == 32 << 20 for a in agents
        )
    finally:
        for agent in agents:
            agent.close()
        llm.close()


def test_graphiti_is_imported_without_reading_a_dotenv_file():
    """graphiti calls load_dotenv() on import (a .env in any folder above graphiti_core);
    the agent imports it with python-dotenv's PYTHON_DOTENV_DISABLED, and restores the variable."""
    code = (
        "import os, dotenv.main as m\n"
        "seen = []\n"
        "m.find_dotenv = lambda *a, **k: seen.append(a) or ''\n"
        "from memplug.adapters.graphiti import import_graphiti\n"
        "import_graphiti()\n"
        "import sys\n"
        "assert 'graphiti_core.graphiti' in sys.modules and not seen, seen\n"
        "assert 'PYTHON_DOTENV_DISABLED' not in os.environ\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHON_DOTENV_DISABLED"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_database_left_by_an_interrupted_run_is_not_reused(graphiti_stub, tmp_path):
    import asyncio

    from memplug.adapters.graphiti import GraphitiAgent
    from memplug.llm import LLM
    from memplug.models import AgentQuestion, Chunk, Message
    from memplug.protocols import AgentConfig

    llm = LLM("openai/stub", api_base=graphiti_stub.base_url, api_key="sk-test", use_cache=False)
    question = AgentQuestion("q", "Where did Ana move?", "simple")
    try:
        first = GraphitiAgent(AgentConfig(llm=llm, sample_id="s"), tmp_path)
        asyncio.run(first.aingest(Chunk(0, [Message("a", "I moved to Lisbon.", speaker="Ana")])))
        first.close()
        again = GraphitiAgent(AgentConfig(llm=llm, sample_id="s"), tmp_path)  # --resume redoes the sample
        episodes = "MATCH (e:Episodic) RETURN count(e) AS n"
        assert asyncio.run(again.driver.execute_query(episodes))[0] == [{"n": 0}]
        asyncio.run(again.aingest(Chunk(0, [Message("a", "I moved to Lisbon.", speaker="Ana")])))
        assert asyncio.run(again.driver.execute_query(episodes))[0] == [{"n": 1}]
        (item,) = asyncio.run(again.arecall(question)).items
        assert item.message_ids == ("a",)
        again.close()
    finally:
        llm.close()


def test_graphiti_on_memsim_recalls_facts_from_the_messages_they_name(graphiti_stub, tmp_path):
    """The issue's check: `memplug eval --agent graphiti --dataset memsim -o n=2 --llm openai/stub
    --api-base <stub>` ends with no error, and each recalled fact carries the id of the message
    it was written from (MemSim feeds one message per chunk, so one per episode)."""
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    evaluation = Evaluation(
        RunSpec(
            agent="graphiti",
            dataset="memsim",
            llm="openai/stub",
            api_base=graphiti_stub.base_url,
            dataset_options={"n": "2"},
        )
    )
    messages = {(s.id, m.id): m.text for s in evaluation.samples() for m in s.messages}
    rd = RunDir(evaluation.run(output=tmp_path / "runs"))
    records = rd.records()
    assert len(records) == 2 and not any(r.error for r in records), [r.error for r in records]
    assert rd.summary().metrics.overall["recall@5"] > 0
    recalled = [(r.sample_id, item) for r in records for item in r.recalled]
    assert recalled
    for sample, item in recalled:
        (message_id,) = item.message_ids
        sentence = item.text.removeprefix("user: ").split(" (date range:")[0]
        assert sentence in messages[(sample, message_id)], (item, messages[(sample, message_id)])
