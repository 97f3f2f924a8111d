"""The child process of ``--llm local``: llama.cpp's OpenAI-compatible server (llama_cpp.server)
on a socket its parent opened, living no longer than the parent.

Run by :mod:`memplug.llm.local` as ``python -m memplug.llm.llama_server``, its settings as the
first line of its stdin (not its arguments, which any user of the machine can read: they hold
the server's key) and the listening socket as file descriptor ``fd``; never by hand. Why a
module of memplug's instead of ``python -m llama_cpp.server``:

- the parent binds a free loopback port and passes the socket, so no other process can take
  the port between its choice and the server's start;
- the server reads its stdin until end of file and then exits: when the parent dies in any
  way (Ctrl-C, an error, ``os._exit``, SIGKILL) its end of the pipe closes, so no server
  outlives the run that started it;
- it serves the same GGUF a second time for ``/embeddings`` (alias ``embedding_alias``,
  mean-pooled, loaded on the first such request) and keeps both loaded: llama_cpp.server's
  own proxy holds one model at a time, reloading on every switch, which would drop the chat
  model's prompt cache each time an embedding request came between two chats (Cognee
  alternates them);
- it gives every chat request the local model's defaults (a reply cap, schemas in the
  server's dialect and bounded: :func:`memplug.llm.local.with_defaults`), whichever client
  sent it: Cognee and Letta call the server themselves, not through memplug's LLM;
- once the model is loaded it writes one JSON line on stdout with what run.json records
  (llama.cpp's version, the window and the model's trained window), then sends stdout to
  stderr, so that the server's own prints can never fill a pipe nobody reads.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import threading
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import llama_cpp
    from llama_cpp.server.model import LlamaProxy


def _exit_with_parent() -> None:
    """Block on stdin; its end of file means the parent is gone: end at once."""
    try:
        while sys.stdin.buffer.read(1 << 12):
            pass
    finally:
        os._exit(0)


def _keep_both(proxy: "LlamaProxy", alias: str, load: "Any") -> "LlamaProxy":
    """``proxy`` (the chat model, loaded) answering ``alias`` with the embedding model that
    ``load()`` makes on first use, neither ever unloaded for the other."""
    from llama_cpp.server.model import LlamaProxy
    from llama_cpp.server.settings import ModelSettings

    class KeepBoth(LlamaProxy):
        # no super().__init__(): the chat model is already loaded in ``proxy``
        def __init__(self) -> None:
            self.__dict__.update(proxy.__dict__)
            chat = self._default_model_settings
            self._model_settings_dict = {
                **proxy._model_settings_dict,
                alias: ModelSettings(model=chat.model, model_alias=alias, embedding=True),
            }
            self._embedder: llama_cpp.Llama | None = None

        def __call__(self, model: str | None = None) -> "llama_cpp.Llama":
            if model != alias:
                return super().__call__(None)  # the chat model, whatever else was named
            if self._embedder is None:
                self._embedder = load()
            return self._embedder

        def free(self) -> None:
            if self._embedder is not None:
                self._embedder.close()
            super().free()

    return KeepBoth()


def _with_defaults(app: Any, embedding_alias: str) -> Any:
    """``app`` with :func:`memplug.llm.local.with_defaults` applied to the JSON body of every
    chat completion request, whoever sends it (memplug's LLM, litellm inside Cognee, Letta's
    server), and every ``/embeddings`` request sent to the embedding model whatever model it
    names (Letta's server asks for its own handle's, ``text-embedding-3-small``): a plain
    ASGI wrapper that reads the body, rewrites it and hands it on."""
    from memplug.llm.local import with_defaults

    def rewrite(path: str, body: dict[str, Any]) -> dict[str, Any]:
        return with_defaults(body) if path.endswith("/chat/completions") else {**body, "model": embedding_alias}

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or not path.endswith(("/chat/completions", "/embeddings"))
        ):
            await app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left: nothing to answer
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        try:
            body = json.loads(raw)
            if isinstance(body, dict):
                raw = json.dumps(rewrite(path, body)).encode()
        except ValueError:
            pass  # not JSON: the server answers it as it would
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()  # type: ignore[no-any-return]
            replayed = True
            return {"type": "http.request", "body": raw, "more_body": False}

        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        await app({**scope, "headers": [*headers, (b"content-length", str(len(raw)).encode())]}, replay, send)

    return wrapped


def main() -> None:
    """Load the model, report it on stdout, then serve on the inherited socket until stopped.

    A model that cannot be loaded is reported on stdout too, as ``{"error": ...}``, and the
    process ends at once: an exception left to Python's exit aborted it (SIGABRT, its stdin
    held by the parent-watch thread) and the parent could quote only "<no Python frame>"."""
    settings: dict[str, Any] = json.loads(sys.stdin.buffer.readline())
    try:
        _serve(settings)
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(3)


def _serve(settings: dict[str, Any]) -> None:
    threading.Thread(target=_exit_with_parent, name="memplug-parent-watch", daemon=True).start()
    from importlib.metadata import version

    import llama_cpp
    import uvicorn
    from llama_cpp.server import app as server_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    # llama-cpp-python 0.3.36's JSON-schema grammar lets a string hold raw control characters
    # (its `char` rule is [^"\\]); llama.cpp's own converter (common/json-schema-to-grammar.cpp)
    # excludes them, as JSON does. Cognee's pydantic parser refused a summary with a raw line
    # break ("Invalid JSON: control character"), so the rule is llama.cpp's here.
    from llama_cpp import llama_grammar

    llama_grammar.PRIMITIVE_RULES["char"] = llama_grammar.BuiltinRule(
        r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])', []
    )

    window = int(settings["window"])
    if window == 0:  # the model's trained window, at most the cap: read from its metadata alone
        probe = llama_cpp.Llama(settings["model"], vocab_only=True, n_ctx=256, verbose=False)
        meta = probe.metadata
        probe.close()
        trained = int(meta.get(f"{meta.get('general.architecture')}.context_length") or 0)
        window = min(trained, int(settings["window_cap"])) if trained > 0 else int(settings["window_cap"])
    model = ModelSettings(
        model=settings["model"],
        model_alias=settings["alias"],
        n_ctx=window,
        n_threads=settings["generation_threads"],
        n_threads_batch=settings["threads"],
        seed=0,
        verbose=False,
        # logits of every prompt token are needed for logprobs only, and cost a window x
        # vocabulary array (1.6 GB for SmolLM2's 8,192 x 49,152) and an output layer per token
        logits_all=False,
        # the states of earlier prompts, so that the reader's and the judge's calls (and Mem0's
        # long extraction prompt) reuse their shared prefixes even when they alternate
        cache=True,
        cache_type="ram",
        cache_size=int(settings["cache_bytes"]),
    )
    app = server_app.create_app(server_settings=ServerSettings(api_key=settings["key"]), model_settings=[model])
    loaded = server_app._llama_proxy  # create_app loaded the model into it
    assert loaded is not None
    embedding_window = int(settings["embedding_window"])
    server_app._llama_proxy = _keep_both(
        loaded,
        settings["embedding_alias"],
        lambda: llama_cpp.Llama(
            settings["model"],
            embedding=True,
            pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
            n_ctx=embedding_window,
            n_batch=embedding_window,
            n_ubatch=embedding_window,
            n_threads=settings["threads"],
            n_threads_batch=settings["threads"],
            seed=0,
            verbose=False,
        ),
    )
    live = loaded()
    print(
        json.dumps(
            {
                "llama_cpp_python": version("llama-cpp-python"),
                "llama_cpp": llama_cpp.llama_version().decode(),
                "window": live.n_ctx(),
                "window_trained": live._model.n_ctx_train(),
                "cpu_features": llama_cpp.llama_print_system_info().decode().strip(" |"),
                "name": live.metadata.get("general.name"),
                "embedding_alias": settings["embedding_alias"],
                "embedding_window": embedding_window,
                "embedding_pooling": "mean",
            }
        ),
        flush=True,
    )
    os.dup2(2, 1)  # from here on the server's prints go to its log
    sock = socket.socket(fileno=int(settings["fd"]))
    served = _with_defaults(app, settings["embedding_alias"])
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning", timeout_graceful_shutdown=1))
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
