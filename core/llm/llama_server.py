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
from typing import Any


def _exit_with_parent() -> None:
    """Block on stdin; its end of file means the parent is gone: end at once."""
    try:
        while sys.stdin.buffer.read(1 << 12):
            pass
    finally:
        os._exit(0)


def main() -> None:
    """Load the model, report it on stdout, then serve on the inherited socket until stopped."""
    settings: dict[str, Any] = json.loads(sys.stdin.buffer.readline())
    threading.Thread(target=_exit_with_parent, name="memplug-parent-watch", daemon=True).start()
    from importlib.metadata import version

    import llama_cpp
    import uvicorn
    from llama_cpp.server import app as server_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    window = int(settings["window"])
    if window == 0:  # the model's trained window, at most the cap: read from its metadata alone
        probe = llama_cpp.Llama(settings["model"], vocab_only=True, n_ctx=256, verbose=False)
        meta = probe.metadata
        probe.close()
        trained = int(meta.get(f"{meta.get('general.architecture')}.context_length") or 0)
        window = min(trained, int(settings["window_cap"])) if trained > 0 else int(settings["window_cap"])
    model = ModelSettings(
        model=settings["model"], model_alias=settings["alias"], n_ctx=window,
        n_threads=settings["generation_threads"], n_threads_batch=settings["threads"], seed=0, verbose=False,
        # logits of every prompt token are needed for logprobs only, and cost a window x
        # vocabulary array (1.6 GB for SmolLM2's 8,192 x 49,152) and an output layer per token
        logits_all=False,
        # the states of earlier prompts, so that the reader's and the judge's calls (and Mem0's
        # long extraction prompt) reuse their shared prefixes even when they alternate
        cache=True, cache_type="ram", cache_size=int(settings["cache_bytes"]))
    app = server_app.create_app(server_settings=ServerSettings(api_key=settings["key"]), model_settings=[model])
    loaded = server_app._llama_proxy  # create_app loaded the model into it
    assert loaded is not None
    live = loaded()
    print(json.dumps({
        "llama_cpp_python": version("llama-cpp-python"),
        "llama_cpp": llama_cpp.llama_version().decode(),
        "window": live.n_ctx(),
        "window_trained": live._model.n_ctx_train(),
        "cpu_features": llama_cpp.llama_print_system_info().decode().strip(" |"),
        "name": live.metadata.get("general.name"),
    }), flush=True)
    os.dup2(2, 1)  # from here on the server's prints go to its log
    sock = socket.socket(fileno=int(settings["fd"]))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
