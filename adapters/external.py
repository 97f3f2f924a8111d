"""What the adapters of external memory systems (mem0, cognee, llamaindex, letta) share.

Each of those libraries phones home, downloads models or reads keys from the
environment unless told otherwise, and each wants the run's one LLM and one embedder
in its own configuration format. This module holds the switches that keep them
offline and the small translations from memplug's configuration to theirs, so that
every system under test sees the same model and nothing but the configured endpoint
is reached.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping, Sequence

from memplug.errors import MemplugError
from memplug.models import Chunk, Message
from memplug.protocols import AgentConfig
from memplug.tokens import use_offline_tiktoken

if TYPE_CHECKING:
    from memplug.llm import LLM

#: Set before any external library is imported: several read them at import time
#: (mem0's MEM0_TELEMETRY, cognee's TELEMETRY_DISABLED, huggingface_hub's offline flag).
#: They are forced, not defaulted: a benchmark run must never send telemetry or fetch
#: weights, whatever the user's shell holds.
OFFLINE_ENV: Mapping[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "MEM0_TELEMETRY": "False",
    "TELEMETRY_DISABLED": "1",  # cognee
    "GRAPHITI_TELEMETRY_ENABLED": "false",  # graphiti-core (PostHog, on by default outside pytest)
    "ANONYMIZED_TELEMETRY": "False",  # chroma/posthog-based libraries
    "DO_NOT_TRACK": "1",
    "POSTHOG_DISABLED": "1",
}


def prepare_offline() -> None:
    """Turn off telemetry and downloads for every external system; call before importing one."""
    os.environ.update(OFFLINE_ENV)
    use_offline_tiktoken()


def require_llm(config: AgentConfig, agent: str, purpose: str) -> "LLM":
    """The run's LLM, or one line telling the user which option to set."""
    if config.llm is None:
        raise MemplugError(
            f"agent {agent!r} needs an LLM for {purpose}: set --llm MODEL (and --api-base URL "
            "for a self-hosted OpenAI-compatible endpoint)"
        )
    return config.llm


def api_base(config: AgentConfig) -> str | None:
    """The endpoint the run's LLM talks to (``--api-base``), if any."""
    if config.llm is not None and config.llm.api_base:
        return config.llm.api_base
    return config.api_base


def provider_and_name(model: str) -> tuple[str, str]:
    """Split a litellm model string ``provider/name`` (``gpt-4o-mini`` alone means openai)."""
    provider, sep, name = model.partition("/")
    return (provider, name) if sep else ("openai", model)


class RunEmbedder:
    """The run's embedder (``--embedder``), as plain lists for libraries that want them.

    Built from memplug's embedder registry so that every system embeds with the same
    model as the native baselines; vectors come back L2-normalised.
    """

    def __init__(self, config: AgentConfig) -> None:
        from memplug.adapters.retrieval.embedders import get_embedder

        self.name = config.embedder
        self._embedder = get_embedder(config.embedder, config.llm)
        self.dim = int(self._embedder.dim)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._embedder.embed(list(texts))]

    def embed_one(self, text: str) -> list[float]:
        return self.embed([text])[0]


def message_text(message: Message) -> str:
    """A message as a memory system stores it: time and speaker kept, since questions ask
    about them, each once. The text comes as the benchmark renders it (LoCoMo's
    ``'1:56 pm on 8 May, 2023: Caroline said, "..."'`` unchanged); ``[time] speaker:`` is
    put before it only for what it does not already show (``Message.shows``, which the
    dataset declares), e.g. ``[2024-03-15] user: ...`` for a BEAM turn."""
    head = []
    if message.time and "time" not in message.shows:
        head.append(f"[{message.time}]")
    if message.speaker and "speaker" not in message.shows:
        head.append(f"{message.speaker}:")
    return " ".join([*head, message.text])


def chunk_text(chunk: Chunk) -> str:
    """The chunk as one text, each message rendered by :func:`message_text`."""
    return "\n".join(message_text(m) for m in chunk.messages)
