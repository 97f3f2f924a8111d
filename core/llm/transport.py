"""How a request reaches a model: the ``openai`` SDK for OpenAI-compatible endpoints,
litellm for every other provider.

A transport makes one attempt and turns every failure into a kind of
:mod:`memplug.llm.retry` (``Transient``, ``Fatal``, ``Unanswered``); it never retries
itself (the SDK's ``max_retries`` and litellm's ``num_retries`` are 0), since the retry
policy decides by kind. Each LLM owns one transport on its private I/O loop, so one
connection pool serves all its calls, whichever thread or event loop makes them.

- :class:`OpenAITransport`: ``openai/<name>`` and ``hosted_vllm/<name>`` models with an
  ``api_base`` (vLLM, llama.cpp, LM Studio, proxies: the OpenAI-compatible servers where
  throughput matters), through one ``AsyncOpenAI`` client: the request timeout, the
  proxy from ``HTTP(S)_PROXY``/``NO_PROXY``, a key as Bearer, or a user and password in
  the URL as Basic, a query string in the URL (``?api-version=...``) on every request.
- :class:`LiteLLMTransport`: every other model, through ``litellm.acompletion`` and
  ``litellm.aembedding``, which know each provider's quirks.

Both price a call with :func:`token_cost` (litellm's bundled price map), kept here beside
the litellm import it needs, so that :mod:`memplug.llm.usage` only counts.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import os
import warnings
from typing import Any, Protocol

from memplug.llm.retry import Fatal, Transient, Unanswered, error_message, reply_text, status_failure
from memplug.llm.usage import Completion, Embedded
from memplug.tokens import count_tokens, litellm_dir

#: litellm provider prefixes whose servers speak OpenAI's API verbatim (the SDK's path),
#: with the variable litellm reads the key from when none is given
OPENAI_COMPATIBLE = ("openai/", "hosted_vllm/")
KEY_VARIABLES = {"openai/": "OPENAI_API_KEY", "hosted_vllm/": "HOSTED_VLLM_API_KEY"}
#: request parameters for litellm alone: memplug retries by error kind itself
_LITELLM_ONLY = frozenset({"num_retries", "max_retries"})


class Transport(Protocol):
    """One attempt of a chat completion or an embedding request."""

    async def chat(self, body: dict[str, Any]) -> Completion: ...

    async def embed(self, texts: list[str]) -> Embedded: ...

    async def aclose(self) -> None: ...


def api_key_for(model: str, api_key: str | None) -> str | None:
    """The given key, else the provider's variable, as litellm would pick it."""
    if api_key:
        return api_key
    prefix = next((p for p in KEY_VARIABLES if model.startswith(p)), None)
    return os.environ.get(KEY_VARIABLES[prefix]) if prefix else None


def endpoint(api_base: str, route: str, key: str | None) -> tuple[str, dict[str, str]]:
    """The URL of ``route`` under ``api_base`` and its auth header (for preflight's probe).

    The route goes before the query string (``https://h/v1?api-version=x`` stays valid), and
    a user and password in the URL become a Basic header, since neither urllib nor the SDK
    accept them in the URL; a key, when there is one, is sent as Bearer.
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(api_base)
    host = parts.netloc.rpartition("@")[2]
    url = urlunsplit((parts.scheme, host, parts.path.rstrip("/") + route, parts.query, ""))
    return url, _auth(api_base, key)


def _auth(api_base: str, key: str | None) -> dict[str, str]:
    from urllib.parse import unquote, urlsplit

    if key:
        return {"Authorization": f"Bearer {key}"}
    parts = urlsplit(api_base)
    if parts.username is not None:
        token = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
        return {"Authorization": f"Basic {token}"}
    return {}


def env_proxy(url: str) -> str | None:
    """The HTTP(S)_PROXY that applies to ``url`` (NO_PROXY honoured), as httpx and litellm do.

    Resolved once per client, which is then told not to read the environment itself.
    """
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    # proxy_bypass_environment is in urllib.request but not in typeshed's stub of it
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if not proxies or bypass(parts.hostname or "", proxies):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


# --- the openai SDK ----------------------------------------------------------------


@functools.cache
def cookie_jar_class() -> type:
    """httpx's cookie jar, reading a response for cookies only when it sets one.

    httpx hands every response to the standard library's cookie jar, which wraps request
    and response in urllib objects to find that there is no Set-Cookie header: an eighth
    of the SDK's CPU per call (measured with cProfile, 64 calls in flight; docs/
    performance.md). A response without the header leaves the jar as it was either way,
    so cookies (a load balancer's sticky session) still work.
    """
    import httpx

    class SetCookieOnly(httpx.Cookies):
        def extract_cookies(self, response: httpx.Response) -> None:
            if "set-cookie" in response.headers:
                super().extract_cookies(response)

    return SetCookieOnly


def cookie_jar() -> Any:
    """An empty :func:`cookie_jar_class` jar."""
    return cookie_jar_class()()


class OpenAITransport:
    """An OpenAI-compatible endpoint through one ``AsyncOpenAI`` client (made on the loop
    that uses it: its connection pool belongs to that loop)."""

    def __init__(
        self, model: str, api_base: str, api_key: str | None, timeout: float, connections: int, proxy: bool = True
    ) -> None:
        """``proxy``: whether HTTP(S)_PROXY applies (False for a server this process started on
        loopback, which no proxy can reach)."""
        import ssl
        from urllib.parse import parse_qsl, urlsplit, urlunsplit

        import httpx
        import openai

        self.model = model
        self.name = model.split("/", 1)[1] if model.startswith(OPENAI_COMPATIBLE) else model
        parts = urlsplit(api_base)
        base_url = urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path.rstrip("/"), "", ""))
        key = api_key_for(model, api_key)
        # the SDK's aiohttp backend (openai[aiohttp]): on httpx's own pool the SDK reached
        # 0.10 efficiency at 64 calls in flight, where each finished request makes httpcore
        # poll every pooled connection (docs/performance.md). The environment's proxy is
        # resolved once; the system's certificates (SSL_CERT_FILE honoured); as many
        # connections as the LLM's concurrency limit lets calls be in flight
        settings: dict[str, Any] = dict(
            proxy=env_proxy(base_url) if proxy else None,
            trust_env=False,
            verify=ssl.create_default_context() if parts.scheme == "https" else True,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
            timeout=httpx.Timeout(timeout),
        )
        try:
            http_client: httpx.AsyncClient = openai.DefaultAioHttpClient(**settings)
        except RuntimeError:  # installed without the aiohttp extra: httpx's pool, slower at high concurrency
            http_client = openai.DefaultAsyncHttpxClient(**settings)
        # httpx keeps the client's cookie jar in ``_cookies`` (tests/test_llm.py checks it)
        http_client._cookies = cookie_jar()
        # without a key (a local server) the SDK still wants one: it gets a placeholder that
        # is never sent; the URL's user and password go as Basic, or no Authorization at all
        basic = None if key else _auth(api_base, None)
        #: headers of every request: the SDK drops a header given as ``omit`` per request
        self.headers: dict[str, Any] = {} if key or basic else {"Authorization": openai.omit}
        self.client = openai.AsyncOpenAI(
            api_key=key or "no-key",
            base_url=base_url,
            max_retries=0,
            timeout=timeout,
            http_client=http_client,
            default_query=dict(parse_qsl(parts.query)) or None,
            default_headers=basic or None,
        )
        self._openai = openai

    def _failure(self, exc: Exception) -> BaseException:
        openai = self._openai
        if isinstance(exc, openai.APIStatusError):
            return status_failure(exc.status_code, error_message(exc.response.content), exc.response.headers)
        if isinstance(exc, openai.APITimeoutError):
            return TimeoutError("no answer")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return Transient(f"connection failed: {type(cause).__name__}: {cause}")
        return Transient(f"malformed response: {type(exc).__name__}: {' '.join(str(exc).split())[:80]}")

    async def _post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` as it is through the SDK (its auth, URL, timeout and error classes),
        the reply as parsed JSON.

        ``client.post``, not ``chat.completions.create``: ``create`` walks every parameter's
        type hints per call and builds pydantic objects of the reply (together half of the
        SDK's CPU per call, measured: 1.9 -> 1.1 ms a call with 64 in flight), and it takes
        only the parameters it names, where a server may accept more (vLLM's ``top_k``).
        """
        headers = {**(body.pop("extra_headers", None) or {}), **self.headers}
        options: dict[str, Any] = {"headers": headers} if headers else {}
        try:
            reply = await self.client.post(route, body=body, cast_to=object, options=options)  # type: ignore[call-overload]
        except (self._openai.APIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise self._failure(exc) from None
        if not isinstance(reply, dict):  # a body that is not JSON, served as text
            raise Transient(f"malformed response (not a JSON object): {str(reply)[:80]!r}")
        return reply

    async def chat(self, body: dict[str, Any]) -> Completion:
        payload = {k: v for k, v in body.items() if k not in _LITELLM_ONLY}
        payload["model"] = self.name
        reply = await self._post("/chat/completions", payload)
        try:
            choice = reply["choices"][0]
            text = reply_text(choice["message"].get("content"), choice.get("finish_reason"))
        except (KeyError, IndexError, TypeError, AttributeError):
            raise Transient("malformed response: no choices[0].message") from None
        usage = reply.get("usage") or {}
        prompt_tokens = usage.get("prompt_tokens")
        completion_tokens = usage.get("completion_tokens")
        if prompt_tokens is None or completion_tokens is None:  # some servers omit usage
            prompt_tokens = sum(count_tokens(str(m.get("content") or "")) for m in body["messages"])
            completion_tokens = count_tokens(text)
        cost = token_cost(self.model, int(prompt_tokens), int(completion_tokens))
        return Completion(text, int(prompt_tokens), int(completion_tokens), cost)

    async def embed(self, texts: list[str]) -> Embedded:
        # "float": what a server sends by default (the SDK's own method asks for base64)
        reply = await self._post("/embeddings", {"input": texts, "model": self.name, "encoding_format": "float"})
        try:
            rows = sorted(reply["data"], key=lambda row: row["index"])
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise Transient("malformed embedding response") from None
        if len(vectors) != len(texts):
            raise Transient(f"malformed embedding response: {len(vectors)} vectors for {len(texts)} texts")
        tokens = int((reply.get("usage") or {}).get("prompt_tokens") or 0)
        return vectors, tokens, token_cost(self.model, tokens, 0)

    async def aclose(self) -> None:
        await self.client.close()


# --- litellm -----------------------------------------------------------------------


@functools.cache
def litellm() -> Any:
    """Import and quiet litellm on first need: the import alone takes 1-3 s."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map
    import litellm as module

    # pydantic warns about litellm's own response types on first use; nothing a user can act on
    warnings.filterwarnings("ignore", message=r"Item '.*' on TypedDict class '.*' is using the `ReadOnly` qualifier")

    module.telemetry = False
    module.suppress_debug_info = True
    module.set_verbose = False
    # memplug reports failures itself (LLMError, scrubbed of keys); litellm's own
    # error logs would repeat them with tracebacks on every retry
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return module


@functools.cache
def _priced_models() -> frozenset[str]:
    """Model names in litellm's bundled price map, read without importing litellm."""
    root = litellm_dir()
    if root is None:
        return frozenset()
    try:
        return frozenset(json.loads((root / "model_prices_and_context_window_backup.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return frozenset()


def token_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """Dollar cost from litellm's price map; 0.0 for models it does not price (local ones)."""
    names = _priced_models()
    if model not in names and model.split("/", 1)[-1] not in names:
        return 0.0  # skip importing litellm for a self-hosted model it cannot price anyway
    try:
        prompt_cost, completion_cost = litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # litellm raises for unmapped models and odd providers alike
        return 0.0
    return float(prompt_cost + completion_cost)


#: what the openai client says when no key was given (every attempt would repeat it)
_MISSING_KEY = "Missing credentials"


def classify_litellm(exc: Exception) -> Exception:
    """litellm maps every provider's errors onto OpenAI's classes with a status code."""
    status = getattr(exc, "status_code", None)
    message = " ".join(str(exc).split())[:300]
    headers = getattr(exc, "litellm_response_headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    kind = type(exc).__name__
    if kind in ("ContextWindowExceededError", "ContentPolicyViolationError"):
        return Unanswered(f"{kind}: {message}")
    if _MISSING_KEY in message:  # the openai client's refusal to start without a key, which
        return Fatal(f"{kind}: {message}")  # litellm passes on as an InternalServerError
    if kind in ("APIConnectionError", "Timeout", "ServiceUnavailableError", "InternalServerError"):
        return Transient(f"{kind}: {message}")
    if isinstance(status, int):
        return status_failure(status, message, headers)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError, json.JSONDecodeError)):
        return Transient(f"{kind}: {message}")
    return Fatal(f"{kind}: {message}")


class LiteLLMTransport:
    """Any provider litellm knows, with the LLM's endpoint and key when given."""

    def __init__(self, model: str, api_base: str | None, api_key: str | None, timeout: float) -> None:
        self.model = model
        # our own loop does the retrying; litellm's and the openai client's would multiply it.
        # drop_params: the judge pins seed=0, which some providers reject instead of ignoring.
        self.args = {
            "api_base": api_base,
            "api_key": api_key,
            "timeout": timeout,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
        }

    async def chat(self, body: dict[str, Any]) -> Completion:
        module = litellm()
        try:
            response = await module.acompletion(model=self.model, **{**self.args, **body})
            choice = response.choices[0]
            usage = response.usage
        except Exception as exc:
            raise classify_litellm(exc) from None
        text = reply_text(choice.message.content, getattr(choice, "finish_reason", None))
        try:
            cost = float(module.completion_cost(completion_response=response))
        except Exception:  # an unpriced (self-hosted) model
            cost = 0.0
        return Completion(text, int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0), cost)

    async def embed(self, texts: list[str]) -> Embedded:
        try:
            response = await litellm().aembedding(model=self.model, input=texts, **self.args)
            rows = sorted(response.data, key=lambda row: row["index"])
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except Exception as exc:
            raise classify_litellm(exc) from None
        if len(vectors) != len(texts):
            raise Transient(f"malformed embedding response: {len(vectors)} vectors for {len(texts)} texts")
        tokens = int(getattr(response.usage, "prompt_tokens", 0) or 0) if response.usage else 0
        return vectors, tokens, token_cost(self.model, tokens, 0)

    async def aclose(self) -> None:
        return None
