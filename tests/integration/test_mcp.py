"""The mcp agent through the official `mcp` SDK against tests/mcp_memory_server.py, a real MCP
server built with the SDK, over stdio and over streamable HTTP on a loopback port."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from external_run import assert_isolated

if TYPE_CHECKING:
    from memplug.results import RunDir
    from memplug.runner import Evaluation

pytest.importorskip("mcp", reason="memplug[mcp] not installed")
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "mcp_memory_server.py"
STDIO = f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVER))}"


def run(tmp_path: Path, **agent_options: str) -> tuple[RunDir, Evaluation]:
    """One in-process run on the counting dataset (2 samples of 4 items, 2 questions each), extractive reader."""
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    spec = RunSpec(
        agent="mcp",
        dataset="counting",
        reader="extractive",
        top_k=2,
        agent_options=agent_options,
        dataset_options={"samples": "2", "questions": "2", "messages": "4"},
    )
    evaluation = Evaluation(spec)
    return RunDir(evaluation.run(output=tmp_path / "runs")), evaluation


def ok(rd: RunDir) -> dict[str, float]:
    records = rd.records()
    assert len(records) == 4 and not any(r.error for r in records), [r.error for r in records]
    assert_isolated(records)
    return rd.summary().metrics.overall


@pytest.fixture
def no_linger(monkeypatch):
    """Shared servers stop as soon as no sample holds them (the run-end hook stops them anyway)."""
    from memplug.adapters import mcp

    monkeypatch.setattr(mcp, "LINGER_S", 0.0)
    yield
    mcp.close_shared()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def http_server():
    """tests/mcp_memory_server.py over streamable HTTP on a free loopback port; yields a starter."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> str:
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--transport", "streamable-http", "--port", str(port), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, "the MCP test server exited"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return f"http://127.0.0.1:{port}/mcp"
            time.sleep(0.1)
        raise AssertionError("the MCP test server did not listen within 30 s")

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=10)


def test_memsim_end_to_end_through_the_cli(tmp_path):
    """The issue's command: memsim, two samples, a stdio server, 0 errors and recall@5 above 0."""
    out = tmp_path / "runs"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplug.cli",
            "eval",
            "--agent",
            "mcp",
            "--dataset",
            "memsim",
            "-o",
            "n=2",
            "-o",
            f"command={STDIO}",
            "--output",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = [p for p in out.iterdir() if p.is_dir()]
    summary = json.loads((path / "summary.json").read_text())
    records = [json.loads(line) for line in (path / "samples.jsonl").read_text().splitlines()]
    assert records and not any(r["error"] for r in records)
    assert summary["metrics"]["overall"]["recall@5"] > 0
    note = json.loads((path / "run.json").read_text())["resolved"]["agent_note"]
    assert "add_memory(text, user_id)" in note and "search_memory(query, user_id, limit)" in note
    assert "a user id per sample" in note
    assert all(i["message_ids"] for r in records for i in r["recalled"])  # stored texts come back with their ids


def test_stdio_one_shared_server_with_a_user_id_per_sample(testkit, tmp_path, no_linger):
    rd, evaluation = run(tmp_path, command=STDIO)
    overall = ok(rd)
    assert overall["recall@2"] == 1.0
    assert evaluation.agent_values["isolation"] == "user"
    assert evaluation.agent_values["add"] == "add_memory" and evaluation.agent_values["search"] == "search_memory"
    assert (rd.path / "work" / "mcp-server.log").exists()


def test_stdio_one_server_per_sample_without_a_user_argument(testkit, tmp_path):
    rd, evaluation = run(tmp_path, command=f"{STDIO} --no-user")
    assert ok(rd)["recall@2"] == 1.0
    assert evaluation.agent_values["isolation"] == "server"
    assert "one server per sample" in str(evaluation.agent_note)
    assert sorted(p.name for p in (rd.path / "work").glob("*/mcp-server.log")) == ["mcp-server.log"] * 2


def test_streamable_http_keeps_samples_apart_by_user_id(testkit, tmp_path, http_server):
    url = http_server()
    rd, evaluation = run(tmp_path, url=url)
    assert ok(rd)["recall@2"] == 1.0
    assert evaluation.agent_values["isolation"] == "user" and url in str(evaluation.agent_note)


def test_streamable_http_without_user_ids_is_refused_unless_shared_on_purpose(testkit, tmp_path, http_server):
    from memplug.errors import MemplugError

    url = http_server("--no-user")
    with pytest.raises(MemplugError, match="every sample would write into one memory.*-o isolation=none"):
        run(tmp_path, url=url)
    rd, evaluation = run(tmp_path, url=url, isolation="none")
    records = rd.records()
    assert not any(r.error for r in records)
    # one memory: the second sample's questions can find the first sample's items
    assert "samples share one memory" in str(evaluation.agent_note)


def test_auto_discovery_of_other_common_names_and_plain_text_results(testkit, tmp_path, no_linger):
    rd, evaluation = run(tmp_path, command=f"{STDIO} --names remember,recall --plain")
    assert ok(rd)["recall@2"] == 1.0
    assert (evaluation.agent_values["add"], evaluation.agent_values["search"]) == ("remember", "recall")


def test_explicit_tools_and_argument_templates(testkit, tmp_path, no_linger):
    from memplug.errors import MemplugError

    command = f"{STDIO} --names put_note,find_notes"
    with pytest.raises(
        MemplugError,
        match=r"no tool to write memories with .*its tools: put_note, find_notes; "
        r"name one with -o add=TOOL",
    ):
        run(tmp_path, command=command)
    rd, _ = run(tmp_path, command=command, add="put_note", search="find_notes")
    assert ok(rd)["recall@2"] == 1.0
    rd, evaluation = run(
        tmp_path,
        command=command,
        add="put_note",
        search="find_notes",
        add_args='{"text": "{text}", "user_id": "{user}"}',
        search_args='{"query": "{query}", "user_id": "{user}", "limit": "{k}"}',
    )
    assert ok(rd)["recall@2"] == 1.0
    assert "put_note(add_args template)" in str(evaluation.agent_note)
    with pytest.raises(MemplugError, match="has no tool 'nope' .*its tools: put_note, find_notes"):
        run(tmp_path, command=command, add="nope", search="find_notes")


def test_the_agent_contract(tmp_path):
    from memplug.adapters.mcp import McpAgent
    from memplug.testing import check_agent

    assert check_agent(McpAgent, options={"command": f"{STDIO} --no-user"}) == []


@pytest.mark.parametrize(
    "options, line",
    [
        ([], r"agent 'mcp' needs one MCP server: -o command=\"...\" starts a stdio server, -o url="),
        (["-o", "command=no-such-mcp-server --flag"], r"the server command 'no-such-mcp-server' was not found"),
        (
            ["-o", "command=" + shlex.join([sys.executable, "-c", "import sys; sys.exit('no database here')"])],
            r"did not start \(.*\); it said: no database here",
        ),
        (
            ["-o", f"command={STDIO} --only ping"],
            r"has no tool to write memories with \(looked for add_memory, .*\); its tools: ping; name one with -o add=TOOL",
        ),
        (["-o", "url=http://127.0.0.1:9/mcp"], r"the MCP server http://127.0.0.1:9/mcp could not be reached"),
        (
            ["-o", f"command={STDIO} --no-user", "-o", "isolation=user"],
            r"-o isolation=user needs a user or namespace argument on both add_memory and search_memory",
        ),
    ],
)
def test_what_cannot_run_is_one_line_exit_2(tmp_path, options, line):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplug.cli",
            "eval",
            "--agent",
            "mcp",
            "--dataset",
            "memsim",
            "-o",
            "n=1",
            *options,
            "--output",
            str(tmp_path / "runs"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    import re

    assert re.search(line, lines[0]), lines[0]


def test_search_results_of_common_shapes_become_items():
    from memplug.adapters.mcp import result_items

    def text(value: object) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": value if isinstance(value, str) else json.dumps(value)}]}

    assert result_items(text([{"memory": "a cat", "score": 0.9}, {"text": "a dog"}])) == [
        ("a cat", 0.9, ()),
        ("a dog", None, ()),
    ]
    assert result_items(text({"results": [{"content": "x", "similarity": 1, "metadata": {"message_ids": [3]}}]})) == [
        ("x", 1.0, ("3",))
    ]
    assert result_items(text("Found:\n1. first memory\n2. second memory\n")) == [  # one item per line
        ("Found:", None, ()),
        ("first memory", None, ()),
        ("second memory", None, ()),
    ]
    # the official knowledge-graph server's entities: their observations are the text
    graph = {
        "entities": [{"name": "m1", "entityType": "message", "observations": ["Item 0-1 is lamp."]}],
        "relations": [],
    }
    assert result_items(text(graph)) == [("Item 0-1 is lamp.", None, ())]
    # no text content: the structured content, unwrapped from the SDK's {"result": ...}
    assert result_items({"content": [], "structuredContent": {"result": ["one", "two"]}}) == [
        ("one", None, ()),
        ("two", None, ()),
    ]
    assert result_items(text([])) == [] and result_items({"content": []}) == []


def test_arguments_are_read_from_the_input_schema():
    from memplug.adapters.mcp import McpAgent, make_plan
    from memplug.errors import MemplugError
    from memplug.options import resolve

    values = resolve(McpAgent.options, {"url": "http://127.0.0.1:1/mcp"}, "mcp")
    tools: list[dict[str, Any]] = [
        {
            "name": "store_memory",
            "inputSchema": {
                "type": "object",
                "required": ["content"],
                "properties": {
                    "content": {"type": "string"},
                    "namespace": {"type": "string"},
                    "metadata": {"type": "object"},
                    "tags": {"type": "array"},
                },
            },
        },
        {
            "name": "query",
            "inputSchema": {
                "type": "object",
                "required": ["q"],
                "properties": {
                    "q": {"type": "string"},
                    "namespace": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "max_results": {"type": "integer"},
                },
            },
        },
        {"name": "unrelated", "inputSchema": {"type": "object"}},
    ]
    plan = make_plan(tools, values)
    assert plan.isolation == "user"
    assert plan.add.arguments("hello", "u1", 5, ["m1"]) == {
        "content": "hello",
        "namespace": "u1",
        "metadata": {"message_ids": ["m1"]},
    }
    assert plan.search.arguments("hi?", "u1", 5) == {"q": "hi?", "namespace": "u1", "max_results": 5}
    tools[0]["inputSchema"]["required"].append("tags")
    with pytest.raises(MemplugError, match="tool 'store_memory' requires tags, which memplug cannot fill"):
        make_plan(tools, values)


# -- the official knowledge-graph memory server (@modelcontextprotocol/server-memory, npm) ----------

#: where .ci/run installs it (npm install --prefix .npm-mcp); MEMPLUG_MCP_SERVER_MEMORY overrides
KG_SERVER = ROOT / ".npm-mcp" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
KG_OPTIONS = {
    "env": "MEMORY_FILE_PATH={workdir}/memory.jsonl",  # its graph file: one per sample
    "add": "create_entities",
    "add_args": '{"entities": [{"name": "message {id}", "entityType": "message", "observations": ["{text}"]}]}',
    "search": "search_nodes",
}


@pytest.fixture
def kg_command() -> str:
    import os
    import shutil

    script = Path(os.environ.get("MEMPLUG_MCP_SERVER_MEMORY") or KG_SERVER)
    if not script.is_file() or shutil.which("node") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{script} (or node) is missing: .ci/run installs @modelcontextprotocol/server-memory")
        pytest.skip(
            "@modelcontextprotocol/server-memory not installed (npm install --prefix .npm-mcp "
            "@modelcontextprotocol/server-memory)"
        )
    return f"node {shlex.quote(str(script))}"


def test_official_knowledge_graph_server_from_npm(testkit, tmp_path, kg_command):
    """The reference MCP memory server runs offline: one server and one graph file per sample; its
    search_nodes matches the whole query as a substring, so questions find nothing, words do."""
    rd, evaluation = run(tmp_path, command=kg_command, **KG_OPTIONS)
    records = rd.records()
    assert len(records) == 4 and not any(r.error for r in records), [r.error for r in records]
    assert evaluation.agent_values["isolation"] == "server"
    for sample in ("s0", "s1"):
        graph = [json.loads(line) for line in (rd.path / "work" / sample / "memory.jsonl").read_text().splitlines()]
        assert [e["name"] for e in graph] == [f"message m{i}" for i in range(4)]
        assert all(o.startswith(f"Item {sample[1]}-") for e in graph for o in e["observations"])
    assert_isolated(records)

    from memplug.adapters.mcp import McpAgent
    from memplug.models import AgentQuestion, Chunk, Message
    from memplug.options import resolve
    from memplug.protocols import AgentConfig

    values = resolve(McpAgent.options, {"command": kg_command, **KG_OPTIONS}, "mcp")
    agent = McpAgent(AgentConfig(options=values, sample_id="k", top_k=3), tmp_path / "kg" / "work" / "k")
    try:
        agent.ingest(Chunk(0, (Message("a", "The violin is in the attic."), Message("b", "Lunch was soup."))))
        found = agent.recall(AgentQuestion("q", "violin", "default"))
        assert [(i.text, i.message_ids) for i in found.items] == [("The violin is in the attic.", ("a",))]
        assert agent.recall(AgentQuestion("q", "Where is the violin?", "default")).items == ()
    finally:
        agent.close()


def test_plain_text_listings_keep_their_memory_lines_only(tmp_path):
    """mcp-memory-service answers a text listing: a header, then each memory with hash and date lines."""
    from memplug.adapters.mcp import McpAgent

    agent = McpAgent.__new__(McpAgent)
    agent.config = type("C", (), {"top_k": 2})()
    agent.ids = {"[t] user: the lamp is red.": ["m1"], "[t] user: the cat sleeps.": ["m2"]}
    listing = (
        "Found 2 memories for query: 'lamp'\n1. [t] user: the lamp is red.\n   Hash: 9f2c\n"
        "   Created: 2026-01-01 [untagged]\n2. [t] user: the cat sleeps.\n   Hash: 77ab\n"
    )
    recall = agent._recall({"content": [{"type": "text", "text": listing}]})
    assert [(i.text, i.message_ids) for i in recall.items] == [
        ("[t] user: the lamp is red.", ("m1",)),
        ("[t] user: the cat sleeps.", ("m2",)),
    ]


# -- mcp-memory-service (PyPI), a semantic memory server on sqlite-vec ---------------------------------

#: where .ci/run installs it: a venv of its own (it pins mcp<2), on a Python whose sqlite3 loads extensions
MMS_SERVER = ROOT / ".mcp-memory-service" / "bin" / "memory"


def test_mcp_memory_service_from_pypi(testkit, tmp_path):
    """mcp-memory-service 12.4.0 over stdio, offline: without its ML extra it embeds with hashes
    (it says so in its log), one sqlite-vec database per sample through MCP_MEMORY_BASE_DIR."""
    import os

    script = Path(os.environ.get("MEMPLUG_MCP_MEMORY_SERVICE") or MMS_SERVER)
    if not script.is_file():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{script} is missing: .ci/run installs mcp-memory-service into .mcp-memory-service")
        pytest.skip("mcp-memory-service not installed (see docs/agents/mcp.md)")
    rd, evaluation = run(
        tmp_path, command=f"{shlex.quote(str(script))} server", env="MCP_MEMORY_BASE_DIR={workdir}/mms", timeout="120"
    )
    records = rd.records()
    assert len(records) == 4 and not any(r.error for r in records), [r.error for r in records]
    assert (evaluation.agent_values["add"], evaluation.agent_values["search"]) == ("memory_store", "memory_search")
    assert evaluation.agent_values["isolation"] == "server"  # {workdir} names its store: a server per sample
    assert "memory_store(content, agent_id, metadata)" in str(evaluation.agent_note)
    assert all((rd.path / "work" / s / "mms").is_dir() for s in ("s0", "s1"))
    assert_isolated(records)
    recalled = [i for r in records for i in r.recalled]
    assert recalled and all(i.message_ids for i in recalled)  # its listing's memory lines, with their ids
