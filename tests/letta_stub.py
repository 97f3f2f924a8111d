"""A loopback Letta server with exactly the endpoints memplug's letta agent calls.

The real server (the PyPI package ``letta``, last server release 0.16.8) connects only
to PostgreSQL; it runs on SQLite only through a launcher that patches its internals
(docs/agents/letta.md), too heavy and fragile for every CI run. This stub serves the same paths with payloads shaped by
letta-client's own types (``AgentState``, ``Passage``, ``PassageSearchResponse``,
``LettaResponse``):

    POST   /v1/agents/                               create an agent
    POST   /v1/agents/{id}/archival-memory           insert a passage -> [Passage]
    GET    /v1/agents/{id}/archival-memory           ?limit=&after=&ascending= -> [Passage], oldest first
    GET    /v1/agents/{id}/archival-memory/search    ?query=&top_k= -> {count, results}
    POST   /v1/agents/{id}/messages                  the agent searches its archive and asks the LLM
    DELETE /v1/agents/{id}                           delete the agent and its archive

Archival search ranks passages by shared words (the real server embeds); a message
is answered like Letta's agent loop in one step: archival search for the question (only
when the agent has the ``archival_memory_search`` tool, which the real server's default
agent type lacks), then one chat completion at ``llm_base_url`` (the OpenAI stub) with
what it found.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

_WORD = re.compile(r"\w+")
_AGENT = re.compile(r"^/v1/agents/(?P<id>agent-[0-9a-f-]+)(?P<rest>/.*)?$")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class LettaStub:
    """The server and its state: agents by id, each with its archive."""

    def __init__(self, llm_base_url: str, host: str = "127.0.0.1", port: int = 0) -> None:
        self.llm_base_url = llm_base_url.rstrip("/")
        self.agents: dict[str, dict[str, Any]] = {}
        self.archives: dict[str, list[dict[str, Any]]] = {}
        #: every agent ever created (deleted ones too), for tests that check cleanup
        self.created: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._server.stub = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "LettaStub":
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- endpoints -------------------------------------------------------------------
    def create_agent(self, body: dict[str, Any]) -> tuple[int, Any]:
        for key in ("name", "model", "embedding"):
            if not body.get(key):
                return 422, {"detail": f"{key} is required by this stub"}
        agent_id = f"agent-{uuid.uuid4()}"
        # as the real server: letta_v1_agent has no archival_memory_search unless asked for
        tools = [
            {"id": f"tool-{uuid.uuid4()}", "name": name}
            for name in ["conversation_search", "memory_insert", "memory_replace", *(body.get("tools") or [])]
        ]
        state = {
            "id": agent_id,
            "name": body["name"],
            "agent_type": "letta_v1_agent",
            "system": "",
            "tags": body.get("tags") or [],
            "tools": tools,
            "sources": [],
            "blocks": [{"label": b["label"], "value": b["value"]} for b in body.get("memory_blocks") or []],
            "memory": {"blocks": []},
            "llm_config": {
                "model": body["model"],
                "model_endpoint_type": "openai",
                "context_window": 128000,
                "handle": body["model"],
            },
            "embedding_config": {
                "embedding_model": body["embedding"],
                "embedding_endpoint_type": "openai",
                "embedding_dim": 1536,
                "handle": body["embedding"],
            },
        }
        with self._lock:
            self.agents[agent_id] = state
            self.archives[agent_id] = []
            self.created.append(state)
        return 200, state

    def insert_passage(self, agent_id: str, body: dict[str, Any]) -> tuple[int, Any]:
        passage = {
            "id": f"passage-{uuid.uuid4()}",
            "text": body["text"],
            "tags": body.get("tags") or [],
            "created_at": _now(),
            "archive_id": f"archive-{agent_id}",
        }
        with self._lock:
            self.archives[agent_id].append(passage)
        return 200, [passage]

    def search(self, agent_id: str, query: str, top_k: int) -> list[dict[str, Any]]:
        wanted = _words(query)
        ranked = sorted(self.archives[agent_id], key=lambda p: -len(wanted & _words(p["text"])))
        return [
            {"id": p["id"], "content": p["text"], "timestamp": p["created_at"], "tags": p["tags"]}
            for p in ranked[:top_k]
        ]

    def message(self, agent_id: str, body: dict[str, Any]) -> tuple[int, Any]:
        question = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
        searches = any(t["name"] == "archival_memory_search" for t in self.agents[agent_id]["tools"])
        found = "\n".join(r["content"] for r in self.search(agent_id, question, 3)) if searches else ""
        model = self.agents[agent_id]["llm_config"]["model"].partition("/")[2] or "stub"
        request = urllib.request.Request(
            f"{self.llm_base_url}/chat/completions",
            method="POST",
            headers={"Content-Type": "application/json"},
            data=json.dumps(
                {
                    "model": model,
                    "messages": [
                        {
                            "role": "system",
                            "content": "You are a Letta agent. Archival memory search results:\n" + found,
                        },
                        {"role": "user", "content": f"{found}\n\n{question}"},
                    ],
                }
            ).encode(),
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            completion = json.loads(response.read())
        text = completion["choices"][0]["message"]["content"]
        usage = completion.get("usage") or {}
        return 200, {
            "messages": [
                {"id": f"message-{uuid.uuid4()}", "date": _now(), "message_type": "assistant_message", "content": text}
            ],
            "stop_reason": {"stop_reason": "end_turn", "message_type": "stop_reason"},
            "usage": {
                "message_type": "usage_statistics",
                "step_count": 1,
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens"),
                "total_tokens": usage.get("total_tokens"),
            },
        }

    def delete(self, agent_id: str) -> tuple[int, Any]:
        with self._lock:
            self.agents.pop(agent_id)
            self.archives.pop(agent_id)
        return 200, {}

    def route(self, method: str, url: str, body: dict[str, Any]) -> tuple[int, Any]:
        parsed = urlparse(url)
        if method == "POST" and parsed.path == "/v1/agents/":
            return self.create_agent(body)
        match = _AGENT.match(parsed.path)
        if not match or match["id"] not in self.agents:
            return 404, {"detail": f"not found: {method} {parsed.path}"}
        agent_id, rest = match["id"], match["rest"] or ""
        if method == "POST" and rest == "/archival-memory":
            return self.insert_passage(agent_id, body)
        if method == "GET" and rest == "/archival-memory":  # the list, a page after an id
            query = parse_qs(parsed.query)
            passages = list(self.archives[agent_id])
            if query.get("ascending", ["true"])[0] == "false":
                passages.reverse()
            after = query.get("after", [None])[0]
            if after is not None:
                passages = passages[[p["id"] for p in passages].index(after) + 1 :]
            return 200, passages[: int(query.get("limit", ["100"])[0])]
        if method == "GET" and rest == "/archival-memory/search":
            query = parse_qs(parsed.query)
            results = self.search(agent_id, query["query"][0], int(query.get("top_k", ["10"])[0]))
            return 200, {"count": len(results), "results": results}
        if method == "POST" and rest == "/messages":
            return self.message(agent_id, body)
        if method == "DELETE" and rest == "":
            return self.delete(agent_id)
        return 404, {"detail": f"not served by this stub: {method} {parsed.path}"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        status, payload = self.server.stub.route(method, self.path, body)  # type: ignore[attr-defined]
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_DELETE(self) -> None:
        self._answer("DELETE")
