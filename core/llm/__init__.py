"""memplug's one way to call an LLM: a transport behind a cache, limits, retries and accounting.

    llm = LLM("openai/gpt-4o-mini")
    with usage_scope() as usage:
        reply = await llm.acomplete([{"role": "user", "content": "hi"}])
    usage.as_dict()  # {"calls": 1, "cache_hits": 0, "prompt_tokens": ..., ...}

The parts:

- :mod:`memplug.llm.client`: :class:`LLM`, the object callers hold; the event loop its
  requests run on (a private thread's, or the runner's samples loop, lent with ``hosted()``).
- :mod:`memplug.llm.transport`: how a request reaches the model (the ``openai`` SDK for
  OpenAI-compatible endpoints, litellm for other providers); no retries of its own.
- :mod:`memplug.llm.caching`: what is cached (deterministic calls, each embedded text)
  and under which key; a cache that cannot be written is given up, not the call.
- :mod:`memplug.llm.retry`: errors by kind (:class:`LLMError`, :class:`FatalLLMError`),
  backoff, Retry-After, the deadline, :func:`on_wait`.
- :mod:`memplug.llm.limits`: the process-wide limits per model: calls in flight
  (:func:`set_call_limiter`) and tokens per minute (:func:`set_token_limiter`).
- :mod:`memplug.llm.usage`: :class:`Usage`, :class:`usage_scope`, :class:`Completion` (a call's
  price: :func:`memplug.llm.transport.token_cost`).
- :mod:`memplug.llm.adaptive`: the calls in flight of ``--concurrency auto`` (``LLM(adaptive=True)``).
- :mod:`memplug.llm.local`: ``local`` and ``local:PATH`` models, a GGUF served by llama.cpp on
  loopback for the run (started, timed and stopped with the LLMs that use it).

Secrets: the API key is never part of a cache key, a repr, a log line or an error message
(any text that reaches the user goes through :func:`memplug.secrets.scrub`).
"""

from memplug.llm.caching import CACHE_VERSION, NOT_IN_KEY
from memplug.llm.client import EMBED_BATCH, FORBIDDEN_PARAMS, LLM, default_model
from memplug.llm.limits import TokenBucket, TokenLimiter, set_call_limiter, set_token_limiter
from memplug.llm.retry import (
    DEFAULT_DEADLINE_S,
    FATAL_STATUSES,
    MAX_RETRY_AFTER_S,
    RETRY_STATUSES,
    FatalLLMError,
    LLMError,
    RetryPolicy,
    on_wait,
)
from memplug.llm.transport import KEY_VARIABLES, OPENAI_COMPATIBLE, endpoint
from memplug.llm.usage import Completion, Usage, usage_scope

__all__ = [
    "CACHE_VERSION",
    "DEFAULT_DEADLINE_S",
    "EMBED_BATCH",
    "FATAL_STATUSES",
    "FORBIDDEN_PARAMS",
    "KEY_VARIABLES",
    "LLM",
    "MAX_RETRY_AFTER_S",
    "NOT_IN_KEY",
    "OPENAI_COMPATIBLE",
    "RETRY_STATUSES",
    "Completion",
    "FatalLLMError",
    "LLMError",
    "RetryPolicy",
    "TokenBucket",
    "TokenLimiter",
    "Usage",
    "default_model",
    "endpoint",
    "on_wait",
    "set_call_limiter",
    "set_token_limiter",
    "usage_scope",
]
