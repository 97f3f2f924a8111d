"""The letta adapter against the real Letta server (letta==0.16.8) on PostgreSQL with pgvector.

tests/letta_server.py starts the server as its users do (a PostgreSQL cluster with the
vector extension, the release's alembic migrations, ``letta server``) on loopback, its LLM
and embeddings the loopback OpenAI stub; tests/letta_server_setup.sh installs what that
needs (.ci/run runs it). Then ``memplug eval --agent letta --dataset memsim -o n=2`` runs
in both modes, as a user would. Without the server's venv, PostgreSQL or pgvector these
tests skip, naming the setup command; under CI=true they fail instead.
tests/integration/test_letta.py keeps the fast ones against tests/letta_stub.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from letta_server import LettaServer
    from openai_stub import OpenAIStub

    from memplug.record import QuestionRecord
    from memplug.results import RunDir

pytest.importorskip("letta_client", reason="memplug[letta] not installed")
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

#: memplug's own key for the stub; the server's calls carry LettaServer's key instead
RUN_KEY = "sk-memplug-run"


@pytest.fixture(scope="module")
def letta_server():
    """The stub LLM (1536-d embeddings, as Letta's OpenAI embedding models have) and the real server on it."""
    from letta_server import LettaServer, missing
    from openai_stub import OpenAIStub

    reason = missing()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the real Letta server cannot start: {reason}")
        pytest.skip(reason)
    with OpenAIStub(embed_dim=1536) as stub:
        try:
            server = LettaServer(llm_base_url=stub.base_url).__enter__()
        except RuntimeError as exc:
            pytest.fail(f"the real Letta server did not start:\n{exc}")
        try:
            print(f"letta server up: {server.timings}")
            yield server, stub
        finally:
            server.__exit__(None, None, None)


def _eval(
    tmp_path: Path, server: LettaServer, stub: OpenAIStub, mode: str, *extra: str
) -> tuple[RunDir, list[QuestionRecord]]:
    """`memplug eval --agent letta --dataset memsim -o n=2` against the server; its RunDir."""
    from letta_server import tail

    from memplug.results import RunDir

    output = tmp_path / "runs"
    loopback = "127.0.0.1,localhost"
    env = {
        **os.environ,
        "LETTA_BASE_URL": server.base_url,
        "OPENAI_API_KEY": RUN_KEY,
        "no_proxy": loopback,
        "NO_PROXY": loopback,
        "COLUMNS": "200",
    }
    cmd = [
        sys.executable,
        "-m",
        "memplug.cli",
        "eval",
        "--agent",
        "letta",
        "--dataset",
        "memsim",
        "-o",
        "n=2",
        "--llm",
        "openai/stub",
        "--api-base",
        stub.base_url,
        # Letta names the models of an OpenAI provider at a custom base URL openai-proxy/<id>
        "-o",
        "model=openai-proxy/stub",
        "--embedder",
        "litellm:openai/text-embedding-3-small",
        "-o",
        f"mode={mode}",
        *extra,
        "--output",
        str(output),
        "--quiet",
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, f"{done.stderr[-3000:]}\n--- letta server log ---\n{tail(server.log)}"
    (run,) = [p for p in output.iterdir() if p.is_dir()]
    rd = RunDir(run)
    records = rd.records()
    assert len(records) == 2 and not any(r.error for r in records), ([r.error for r in records], tail(server.log))
    return rd, records


def test_real_server_archival_search(letta_server, tmp_path):
    server, stub = letta_server
    before = len(stub.log)
    rd, records = _eval(tmp_path, server, stub, "search", "-o", "passage=message")
    # one passage per message, embedded by the server through the stub, searched in pgvector:
    # every hit carries the message id it was tagged with
    for record in records:
        assert record.recalled and len(record.recalled) <= 5
        assert all(len(item.message_ids) == 1 for item in record.recalled), record.recalled
        assert not record.agent_answered
    new = stub.log[before:]
    embedded = [b for p, b, auth in new if p.endswith("/embeddings") and RUN_KEY not in auth]
    assert embedded, "the server embedded nothing through the stub"
    assert not [b for p, b, auth in new if p.endswith("/chat/completions") and RUN_KEY not in auth]  # never messaged
    assert rd.summary().metrics.overall["recall@5"] > 0


def test_real_server_agent_answers(letta_server, tmp_path):
    server, stub = letta_server
    before = len(stub.log)
    rd, records = _eval(tmp_path, server, stub, "message")
    assert all(r.agent_answered and r.reply for r in records), [r.reply for r in records]
    assert rd.summary().metrics.overall["recall@5"] == 1.0  # one chunk passage holds a sample's messages
    # the agent's LLM calls went through the stub, offered the archive search tool (the adapter asks for it)
    chats = [b for p, b, auth in stub.log[before:] if p.endswith("/chat/completions") and RUN_KEY not in auth]
    assert chats, "the server never called the LLM"
    tools = {t.get("function", {}).get("name") for body in chats for t in body.get("tools") or ()}
    assert "archival_memory_search" in tools, tools
    # the reply is the stub's answer to the server's prompt: Letta's last user line is the question
    assert all("Question:" in str(r.reply) for r in records), [r.reply for r in records]
