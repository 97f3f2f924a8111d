"""Letta (formerly MemGPT) as a memory, through ``letta-client`` against a Letta server.

MemoryAgentBench (seed 002, D.2) inserted each context chunk into the agent's
archival memory (``insert_passage``) and asked with ``send_message``, letting the
agent search its archive and answer. Here each sample gets its own Letta agent;
each chunk becomes one archival passage (``agents.passages.create``) tagged with its
message ids (``-o passage=message``: one passage per message). Recall searches the
archive (``agents.passages.search``) for the items; with ``-o mode=message`` the
question is also sent to the agent (``agents.messages.create``) and its reply is
the answer, as in the paper; otherwise the run's reader answers. The agent is
deleted on close.

The server is ``-o server=URL``, else ``$LETTA_BASE_URL``, else ``--api-base``.
Letta runs the LLM and the embedder itself, configured on the server; the agent is
created with the run's model as its handle (``--llm openai/gpt-4o-mini`` is Letta's
``provider/model`` handle format) and the run's embedder handle
(``--embedder litellm:openai/text-embedding-3-small``), or ``-o model=`` /
``-o embedding=`` for handles the server names differently. Letta's LLM calls are
therefore not in memplug's cache or usage counts. See docs/agents/letta.md for how to
start a server.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from memplug.adapters.external import chunk_text, message_text, prepare_offline
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, Chunk, Recall, Recalled, StoredItem
from memplug.options import Option, resolve
from memplug.preflight import AgentPlan
from memplug.protocols import AgentConfig

if TYPE_CHECKING:
    from memplug.llm import LLM

#: passages stored() lists at most, and asks for per page
STORED_LIMIT = 10_000
STORED_PAGE = 100
#: prefix of the tags that carry message ids on archival passages
TAG = "mid:"
#: MemoryAgentBench added "Search Archival Memory" to the question for MemGPT (seed 002, B.3)
ASK = "Search Archival Memory to answer the question. Reply with the answer only.\n\nQuestion: {question}"
USAGE_NOTE = "letta runs the LLM on its server: its calls are not in memplug's cache or usage counts"


def server_url(config: AgentConfig) -> str:
    """The Letta server: -o server, $LETTA_BASE_URL, --api-base; one line naming them if none is set."""
    url = config.options.get("server") or os.environ.get("LETTA_BASE_URL") or config.api_base
    if not url:
        raise MemplugError(
            "agent 'letta' needs a Letta server: set -o server=URL, LETTA_BASE_URL or --api-base "
            "(docs/agents/letta.md says how to start one)"
        )
    return url


def handles(config: AgentConfig) -> tuple[str, str]:
    """The Letta model and embedding handles for the run's LLM and embedder."""
    model = config.options.get("model") or (config.llm.model if config.llm else "")
    embedding = config.options.get("embedding") or ""
    if not embedding:
        kind, _, name = config.embedder.partition(":")
        embedding = name if kind == "litellm" else ""
    if not model:
        raise MemplugError(
            "agent 'letta' needs a model: set --llm MODEL (a Letta handle, e.g. openai/gpt-4o-mini) or -o model=HANDLE"
        )
    if not embedding:
        raise MemplugError(
            "agent 'letta' embeds on its server: set --embedder litellm:<handle> "
            "(e.g. litellm:openai/text-embedding-3-small) or -o embedding=HANDLE"
        )
    return model, embedding


class LettaAgent:
    """A Letta agent per sample: archival passages in, archival search or the agent's reply out."""

    #: MemoryAgentBench ran the external memory agents with 4096-token chunks (seed 002, D.3)
    default_chunk_size = 4096
    options = (
        Option("server", str, "", "Letta server URL (default: $LETTA_BASE_URL, then --api-base)"),
        Option(
            "mode",
            str,
            "search",
            "search: archival search, the run's reader answers; "
            "message: the question is sent to the agent, which answers",
            choices=("search", "message"),
        ),
        Option("passage", str, "chunk", "what one archival passage holds", choices=("chunk", "message")),
        Option("model", str, "", "Letta model handle (default: --llm)"),
        Option("embedding", str, "", "Letta embedding handle (default: the model of --embedder litellm:<model>)"),
        Option("timeout", float, 300.0, "seconds per request to the Letta server"),
    )

    @classmethod
    def preflight(cls, values: Mapping[str, Any], given: Mapping[str, str], llm: "LLM | None") -> AgentPlan:
        """A model handle (``--llm`` or ``-o model``) is needed: without one, the run
        directory was made and the progress bar shown before every sample failed on it."""
        if not values.get("model") and llm is None:
            raise MemplugError(
                "agent 'letta' needs a model: set --llm MODEL (a Letta handle, e.g. "
                "openai/gpt-4o-mini) or -o model=HANDLE"
            )
        return AgentPlan(dict(values))

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        prepare_offline()
        from letta_client import Letta

        self.config = config
        opts = resolve(self.options, config.options, "letta")
        self.mode: str = opts["mode"]
        self.per_message: bool = opts["passage"] == "message"
        model, embedding = handles(config)
        self.client = Letta(
            base_url=server_url(config), api_key=os.environ.get("LETTA_API_KEY"), timeout=opts["timeout"]
        )
        name = f"memplug-{Path(workdir).parent.parent.name}-{config.sample_id or Path(workdir).name}"
        self.agent_id: str | None = None
        # Letta's default agent type (letta_v1_agent) is not given archival_memory_search:
        # asked a question, it could not look at the passages ingested. The paper's agent
        # searches its archive, so mode=message asks for the tool (checked against the real
        # server 0.16.8; search mode never messages the agent).
        # left out, not None, in search mode: older letta-client releases have no `omit`
        tools: dict[str, Any] = {"tools": ["archival_memory_search"]} if self.mode == "message" else {}
        self.agent_id = self.client.agents.create(
            name=name[:100],
            model=model,
            embedding=embedding,
            tags=["memplug"],
            memory_blocks=[
                {"label": "human", "value": "The user shares the history stored in archival memory."},
                {"label": "persona", "value": "I answer questions from my archival memory."},
            ],
            **tools,
        ).id

    def ingest(self, chunk: Chunk) -> None:
        assert self.agent_id is not None
        if self.per_message:
            for message in chunk.messages:
                self.client.agents.passages.create(self.agent_id, text=message_text(message), tags=[TAG + message.id])
            return
        self.client.agents.passages.create(
            self.agent_id, text=chunk_text(chunk), tags=[TAG + i for i in chunk.message_ids]
        )

    def recall(self, question: AgentQuestion) -> Recall:
        assert self.agent_id is not None
        found = self.client.agents.passages.search(self.agent_id, query=question.text, top_k=self.config.top_k)
        items = tuple(
            Recalled(text=hit.content, message_ids=[t[len(TAG) :] for t in hit.tags or () if t.startswith(TAG)])
            for hit in found.results
        )
        if self.mode == "search":
            return Recall(items=items)
        reply = self.client.agents.messages.create(
            self.agent_id, messages=[{"role": "user", "content": ASK.format(question=question.text)}]
        )
        return Recall(
            items=items,
            answer=_assistant_text(reply.messages),
            meta={"usage": USAGE_NOTE, "letta_usage": reply.usage.model_dump(exclude_none=True)},
        )

    def stored(self) -> list[StoredItem]:
        """The agent's archival passages, oldest first (``agents.passages.list``, page by
        page, at most 10,000), with Letta's passage ids and the message ids from their tags."""
        assert self.agent_id is not None
        items: list[StoredItem] = []
        after = None
        while len(items) < STORED_LIMIT:
            listing = self.client.agents.passages
            page = (
                listing.list(self.agent_id, limit=STORED_PAGE, ascending=True, after=after)
                if after
                else listing.list(self.agent_id, limit=STORED_PAGE, ascending=True)
            )
            if not page:
                break
            items += [
                StoredItem(
                    p.text,
                    p.id,
                    [t[len(TAG) :] for t in p.tags or () if t.startswith(TAG)],
                    {"created_at": str(p.created_at)} if getattr(p, "created_at", None) else {},
                )
                for p in page
            ]
            after = page[-1].id
            if len(page) < STORED_PAGE:
                break
        return items[:STORED_LIMIT]

    def close(self) -> None:
        """Delete the sample's agent (its archive goes with it) and close the HTTP client."""
        try:
            if self.agent_id is not None:
                self.client.agents.delete(self.agent_id)
                self.agent_id = None
        finally:
            self.client.close()


def _assistant_text(messages: list[Any]) -> str:
    """The text of the agent's assistant messages in a Letta response."""
    parts: list[str] = []
    for message in messages:
        if getattr(message, "message_type", None) != "assistant_message":
            continue
        content = message.content
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(getattr(part, "text", "") for part in content)
    return "\n".join(p for p in parts if p).strip()
