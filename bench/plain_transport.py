"""A bench-only transport without the ``openai`` SDK, for the figure "without it" (issue 31).

``bench/eval_throughput.py --transport plain`` runs ``memplug eval`` with memplug's
OpenAI-compatible transport replaced by this one: a plain aiohttp session posting the
same JSON body (orjson) and reading the reply, nothing else: no SDK import, no request
options, no httpx objects. What a run then loses against the ideal is memplug's own
work (the runner, the cache, the limits, the retry policy, the accounting) and the
client's floor (bench/llm_overhead.py's ``aiohttp`` mode), so the gap between this and
the SDK's figure is the SDK's. Never used by memplug itself: no proxy, TLS settings,
error kinds or embeddings, which the real transport has.
"""

from __future__ import annotations

import os
from typing import Any

from memplug.llm.retry import Transient, reply_text, status_failure
from memplug.llm.usage import Completion, Embedded


class PlainTransport:
    """``chat`` through one aiohttp session (made on the loop of the first call)."""

    def __init__(
        self, model: str, api_base: str, api_key: str | None, timeout: float, connections: int, proxy: bool = True
    ) -> None:
        self.name = model.split("/", 1)[1]
        self.url = api_base.rstrip("/") + "/chat/completions"
        key = api_key or os.environ.get("OPENAI_API_KEY", "")
        self.headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
        self.connections = connections
        self.session: Any = None

    async def chat(self, body: dict[str, Any]) -> Completion:
        import aiohttp
        import orjson

        if self.session is None:
            self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self.connections))
        payload = {k: v for k, v in body.items() if k not in ("num_retries", "max_retries")}
        payload["model"] = self.name
        async with self.session.post(self.url, data=orjson.dumps(payload), headers=self.headers) as response:
            data = await response.read()
            if response.status != 200:
                raise status_failure(response.status, data.decode(errors="replace"), response.headers)
        try:
            reply = orjson.loads(data)
            choice = reply["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            raise Transient("malformed response") from None
        usage = reply.get("usage") or {}
        text = reply_text(choice["message"].get("content"), choice.get("finish_reason"))
        return Completion(text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), 0.0)

    async def embed(self, texts: list[str]) -> Embedded:
        raise NotImplementedError("the bench's plain transport makes chat completions only")

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()


def install() -> None:
    """Make this the transport of every OpenAI-compatible LLM of this process."""
    from memplug.llm import client

    client.OpenAITransport = PlainTransport  # type: ignore[misc, assignment]
