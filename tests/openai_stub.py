"""A loopback OpenAI-compatible server for tests and benchmarks; never the network.

    with OpenAIStub(reply="yes", latency=0.2) as stub:
        llm = LLM("openai/stub", api_base=stub.base_url, api_key="sk-test")

It serves ``/v1/chat/completions``, ``/v1/embeddings`` and ``/v1/models`` on 127.0.0.1
from a ThreadingHTTPServer (one thread per request, so ``latency`` sleeps overlap and 64
concurrent calls take one latency, not 64). HTTP/1.1 keep-alive is on, so a client that
reuses its connection pool is measured as such. ``fail_next(n, kind)`` injects faults:
``"429"`` (with a ``Retry-After`` header), ``"500"``, ``"malformed"`` (200 with a body
that is not JSON), ``"hang"`` (no answer until the client times out), ``"400"`` (a bad
request) and ``"401"`` (which, like OpenAI's, quotes the key it was given: tests use it
to prove keys are scrubbed from errors). ``capacity=N`` answers 429 at once to a request
that arrives while N are being served (an overloaded server; ``--concurrency auto``).

Run as a script for benches and manual use:
    python tests/openai_stub.py --port 8000 --latency 0.2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Reply = Callable[[dict[str, Any]], str] | str | None

FAULT_KINDS = ("429", "500", "malformed", "hang", "400", "401", "403", "404", "context", "null", "filtered")
_WORD = re.compile(r"\w+", re.UNICODE)


def echo_reply(body: dict[str, Any]) -> str:
    """The default answer: the last line of the last user message, cut to 200 characters."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content") or ""
            if isinstance(content, list):  # content parts: keep the text ones
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            lines = [line for line in str(content).splitlines() if line.strip()]
            return lines[-1].strip()[:200] if lines else ""
    return ""


def hashed_embedding(text: str, dim: int) -> list[float]:
    """A unit vector from hashed lower-cased words (feature hashing with signs).

    Deterministic across processes (sha256, not Python's salted hash) and, unlike a
    random vector per text, texts that share words point the same way, so retrieval
    tests against the stub behave like retrieval.
    """
    vec = [0.0] * dim
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vec[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:  # no words: a fixed unit vector rather than a zero one
        return [1.0] + [0.0] * (dim - 1)
    return [v / norm for v in vec]


def _count_words(value: Any) -> int:
    """Usage tokens are word counts: cheap, deterministic, and enough to test accounting."""
    if isinstance(value, str):
        return len(_WORD.findall(value))
    if isinstance(value, list):
        return sum(_count_words(v) for v in value)
    if isinstance(value, dict):
        return _count_words(value.get("content") or value.get("text") or "")
    return 0


class OpenAIStub:
    """The server, its request log, and its fault queue. Use it as a context manager."""

    def __init__(
        self,
        reply: Reply = None,
        latency: float = 0.0,
        embed_dim: int = 64,
        retry_after: float = 0.2,
        hang_s: float = 30.0,
        host: str = "127.0.0.1",
        port: int = 0,
        capacity: int | None = None,
    ) -> None:
        self.reply = reply
        self.capacity = capacity
        #: requests answered 429 for want of capacity
        self.refused = 0
        self.latency = latency
        self.embed_dim = embed_dim
        self.retry_after = retry_after
        self.hang_s = hang_s
        #: JSON bodies of every POST, in arrival order (chat and embeddings alike)
        self.requests: list[dict[str, Any]] = []
        #: (path, body, authorization header) per POST, for tests that check routing and keys
        self.log: list[tuple[str, dict[str, Any], str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        #: TCP connections accepted: a client that pools connections opens few
        self.connections = 0
        self._faults: deque[str] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = _Server((host, port), _Handler)
        self._server.stub = self
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server
        return f"http://{host}:{port}/v1"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [body for path, body, _ in self.log if path.endswith("/chat/completions")]

    def fail_next(self, n: int, kind: str) -> None:
        """Answer the next ``n`` POSTs with fault ``kind`` instead of a result."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; one of {FAULT_KINDS}")
        with self._lock:
            self._faults.extend([kind] * n)

    def start(self) -> "OpenAIStub":
        # a short poll so close() (which waits for the serve loop to notice) takes ms, not 0.5 s
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="openai-stub", daemon=True
        )
        self._thread.start()
        return self

    def serve(self) -> None:
        """Serve in this thread until Ctrl-C (the scripts' way: ``python tests/openai_stub.py``)."""
        try:
            self._server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self._server.server_close()

    def close(self) -> None:
        self._closing.set()  # wakes hanging and sleeping handlers
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "OpenAIStub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- called from handler threads -------------------------------------------------

    def _admit(self, path: str, body: dict[str, Any], auth: str) -> str | None:
        with self._lock:
            self.requests.append(body)
            self.log.append((path, body, auth))
            if self._faults:
                fault: str | None = self._faults.popleft()
            elif self.capacity is not None and self.in_flight >= self.capacity:
                fault, self.refused = "429", self.refused + 1
            else:
                fault = None
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return fault

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._closing.wait(seconds)

    def _reply_text(self, body: dict[str, Any]) -> str:
        if callable(self.reply):
            return self.reply(body)
        if self.reply is not None:
            return self.reply
        text = echo_reply(body)
        fmt = body.get("response_format") or {}
        if fmt.get("type") in ("json_object", "json_schema"):
            return json.dumps({"text": text})
        return text

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        self._sleep(self.latency)
        text = self._reply_text(body)
        prompt_tokens = _count_words(body.get("messages") or [])
        completion_tokens = _count_words(text)
        n = int(body.get("n") or 1)
        return {
            "id": f"chatcmpl-stub{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                for i in range(n)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        dim = int(body.get("dimensions") or self.embed_dim)
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(str(t), dim)} for i, t in enumerate(texts)
        ]
        tokens = _count_words([str(t) for t in texts])
        return {
            "object": "list",
            "model": body.get("model", "stub"),
            "data": data,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # 64+ clients connect at once in the benches
    stub: OpenAIStub

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that hung up (memplug stopping at a fatal error closes its pool while a
        # kept-alive connection waits for its next request) is not the stub's error; printed,
        # it lands in the stderr that in-process tests read as memplug's
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so pooled clients reuse connections
    # headers and body go out in two writes; with Nagle on, the client's delayed ACK
    # would add ~40 ms to every response and the benches would measure the stub
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read stub.log
        pass

    def setup(self) -> None:
        super().setup()
        with self.server.stub._lock:
            self.server.stub.connections += 1

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), headers)

    def do_GET(self) -> None:
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._send_json(
                200, {"object": "list", "data": [{"id": "stub", "object": "model", "owned_by": "memplug-tests"}]}
            )
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        stub = self.server.stub
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        path = self.path.split("?")[0].rstrip("/")  # a query string may carry a key (Azure's api-key)
        if not (path.endswith("/chat/completions") or path.endswith("/embeddings")):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        fault = stub._admit(path, body, self.headers.get("Authorization", ""))
        try:
            if fault == "429":
                self._send_json(
                    429,
                    {
                        "error": {
                            "message": "Rate limit reached (stub)",
                            "type": "rate_limit_error",
                            "code": "rate_limit_exceeded",
                        }
                    },
                    {"Retry-After": f"{stub.retry_after:g}"},
                )
            elif fault == "500":
                self._send_json(500, {"error": {"message": "internal error (stub)", "type": "server_error"}})
            elif fault == "400":
                self._send_json(400, {"error": {"message": "invalid request (stub)", "type": "invalid_request_error"}})
            elif fault == "401":
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                self._send_json(
                    401, {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error"}}
                )
            elif fault == "403":
                self._send_json(
                    403, {"error": {"message": "not allowed to use this model (stub)", "type": "permission_error"}}
                )
            elif fault == "404":
                model = body.get("model")
                self._send_json(
                    404,
                    {
                        "error": {
                            "message": f"The model `{model}` does not exist (stub)",
                            "type": "invalid_request_error",
                            "code": "model_not_found",
                        }
                    },
                )
            elif fault == "context":
                self._send_json(
                    400,
                    {
                        "error": {
                            "message": "This model's maximum context length is 8 tokens (stub)",
                            "type": "invalid_request_error",
                            "code": "context_length_exceeded",
                        }
                    },
                )
            elif fault in ("null", "filtered"):
                reply = stub.chat(body)
                reply["choices"][0]["message"]["content"] = None if fault == "null" else ""
                reply["choices"][0]["finish_reason"] = "stop" if fault == "null" else "content_filter"
                self._send_json(200, reply)
            elif fault == "malformed":
                self._send(200, b"<html>this is not json")
            elif fault == "hang":
                stub._sleep(stub.hang_s)
                self.close_connection = True
            elif path.endswith("/embeddings"):
                self._send_json(200, stub.embeddings(body))
            else:
                self._send_json(200, stub.chat(body))
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): fine
            self.close_connection = True
        finally:
            stub._leave()


def main() -> None:
    parser = argparse.ArgumentParser(description="loopback OpenAI-compatible server for memplug tests and benches")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds slept per chat call")
    parser.add_argument("--embed-dim", type=int, default=64)
    parser.add_argument("--reply", default=None, help="fixed reply (default: echo the last user line)")
    parser.add_argument("--capacity", type=int, default=None, help="requests served at once; more are answered 429")
    parser.add_argument("--retry-after", type=float, default=0.2, help="seconds a 429 asks the client to wait")
    args = parser.parse_args()
    stub = OpenAIStub(
        reply=args.reply,
        latency=args.latency,
        embed_dim=args.embed_dim,
        host=args.host,
        port=args.port,
        capacity=args.capacity,
        retry_after=args.retry_after,
    )
    print(f"serving {stub.base_url} (latency {args.latency}s)", flush=True)
    stub.serve()


if __name__ == "__main__":
    main()
