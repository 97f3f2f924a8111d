"""Cognee as a memory, the way MemoryAgentBench ran it (seed 002, D.2).

Ingestion calls ``cognee.add`` and ``cognee.cognify`` per chunk (``-o cognify=end``:
add per chunk, then cognify once in ``asettle``, which the runner awaits after the last
chunk, before the first question, and times as ``settle_s``). Recall calls
``cognee.search`` with ``SearchType.CHUNKS`` for the items; with ``-o search=`` set to
one of Cognee's completion types, Cognee also writes the answer from its graph.

Cognee is configured through its config API with the run's LLM (its ``custom``
provider: the litellm model string and ``--api-base``) and the run's embedder, which
must be an API model (``--embedder litellm:<model>``; Cognee cannot take an in-process
embedder). Cognee calls litellm itself, so its calls do not pass through memplug's
cache and are not in memplug's token counts; ``Recall.meta`` says so.

With ``--llm local`` Cognee is given the local model's server (started here, its URL and
key) as an OpenAI-compatible endpoint, and with ``--embedder litellm:local`` that server's
embedding model (the same GGUF, mean-pooled). The model is registered with litellm as
taking a response schema, so that Cognee sends its pydantic schemas as ``response_format``,
which the server turns into a grammar (:func:`memplug.llm.local.with_defaults`).

Storage: Cognee's configuration and engines are process-wide, and memplug runs
samples concurrently, so one Cognee system root serves the whole run (the run's
``work/cognee`` folder) and each sample is a Cognee dataset of its own. Cognee keeps
one graph and one vector database per dataset there (its access-control mode), and
every search names the sample's dataset, so nothing is shared between samples but
Cognee's relational catalogue of users and datasets.

Message ids: Cognee re-chunks what it is given and its chunks keep no caller
metadata, so a recalled chunk is credited with the ids of the ingested messages whose
text it contains (or that contain it, for a message Cognee split).

What it stored (``stored()``, the run's stored.jsonl): the nodes of the sample's graph
(chunks, summaries, entities), read with Cognee's graph engine; see :meth:`CogneeAgent.astored`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import weakref
from pathlib import Path
from typing import Any, Callable

from memplug.adapters.external import (
    RunEmbedder,
    api_base,
    chunk_text,
    message_text,
    prepare_offline,
    provider_and_name,
    require_llm,
)
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, Chunk, Recall, Recalled, StoredItem
from memplug.options import Option, resolve
from memplug.preflight import requires_llm
from memplug.protocols import AgentConfig

#: Cognee's search types that write an answer (the rest return context)
COMPLETION_TYPES = (
    "RAG_COMPLETION",
    "GRAPH_COMPLETION",
    "GRAPH_COMPLETION_COT",
    "GRAPH_SUMMARY_COMPLETION",
    "HYBRID_COMPLETION",
)
USAGE_NOTE = "cognee calls litellm itself: its LLM calls are not in memplug's cache or usage counts"
#: graph node types stored() lists, in this order: what was kept of the text, then what was drawn from it
STORED_TYPES = ("DocumentChunk", "TextSummary", "Entity")
#: items stored() lists at most (the stored.jsonl line keeps the first 200 and counts these)
STORED_LIMIT = 10_000


def dataset_name(sample_id: str) -> str:
    """A Cognee dataset name for a sample: readable, safe, and unique per sample id."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", sample_id)[:40]
    return f"memplug_{safe}_{hashlib.sha1(sample_id.encode()).hexdigest()[:8]}"


def configure_cognee(config: AgentConfig, root: Path) -> None:
    """Hand the run's LLM, embedder and storage roots to Cognee (process-wide settings)."""
    from memplug.llm import local  # not at import: `memplug list` reads this module's options
    from memplug.logs import keeping_handlers

    with keeping_handlers():  # the first import of cognee replaces the root logger's handlers
        import cognee

    llm = require_llm(config, "cognee", "cognify and completion search")
    kind, _, embed_model = config.embedder.partition(":")
    if kind != "litellm" or not embed_model:
        raise MemplugError(
            f"agent 'cognee' embeds through an API, not --embedder {config.embedder!r}: "
            "set --embedder litellm:<model> (e.g. litellm:openai/text-embedding-3-small)"
        )
    endpoint = api_base(config)
    model, key = llm.model, llm.api_key or os.environ.get("OPENAI_API_KEY") or "unused"
    server = llm.local_server() if llm.local is not None else None
    if local.is_local(embed_model) and (server is None or local.LocalModel.parse(embed_model) != server.model):
        raise MemplugError(
            f"agent 'cognee' embeds with a local model only with the same --llm: "
            f"set --llm {embed_model}, or --embedder litellm:<model> of an API"
        )
    dim = RunEmbedder(config).dim  # the real dimension, so Cognee's vector tables match
    cognee.config.set_llm_provider("custom")
    if server is None:
        cognee.config.set_llm_model(model)
        cognee.config.set_llm_endpoint(endpoint or "")
        cognee.config.set_llm_api_key(key)
    else:  # litellm's openai/ route to the server, which gives each call its reply cap
        import litellm

        cognee.config.set_llm_model(f"openai/{server.alias}")
        cognee.config.set_llm_endpoint(server.url)
        cognee.config.set_llm_api_key(server.key)
        # Cognee sends the schema as response_format only to models litellm lists as taking
        # one, else a bare json_object with the schema in the prompt, which the 135M model
        # echoed back instead of filling (3 retries, then cognify failed); the server turns
        # it into a grammar (memplug.llm.local.with_defaults)
        litellm.register_model(
            {
                f"openai/{server.alias}": {
                    "litellm_provider": "openai",
                    "mode": "chat",
                    "supports_response_schema": True,
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "cache_creation_input_token_cost": 0.0,
                    "cache_read_input_token_cost": 0.0,
                }
            }
        )
    provider, name = provider_and_name(embed_model)
    if server is not None and local.is_local(embed_model):
        name, endpoint, key = server.embedding_alias, server.url, server.key
        # what the embedding model takes (Cognee, finding no tokenizer for it, assumes 4,096)
        cognee.config.set_embedding_config({"embedding_max_completion_tokens": local.EMBEDDING_WINDOW})
    if endpoint:  # Cognee's own client for OpenAI-compatible servers; it sends no `dimensions`
        cognee.config.set_embedding_provider("openai_compatible")
        cognee.config.set_embedding_model(name)
        cognee.config.set_embedding_endpoint(endpoint)
    else:
        cognee.config.set_embedding_provider(provider)
        cognee.config.set_embedding_model(embed_model)
    cognee.config.set_embedding_api_key(key)
    cognee.config.set_embedding_dimensions(dim)
    cognee.config.system_root_directory(str(root / "system"))
    cognee.config.data_root_directory(str(root / "data"))


#: per event loop: system root -> lock held while Cognee's databases and default user are made
_setup_locks: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]]" = (
    weakref.WeakKeyDictionary()
)
#: system roots whose Cognee databases and default user exist
_ready: set[str] = set()


async def ensure_ready(root: Path) -> None:
    """Create Cognee's databases and default user once per root, before samples race to.

    Cognee creates both on first use, and concurrent first uses collide
    (``UserAlreadyExists``); memplug runs samples concurrently, so the first one does it
    alone while the others wait.
    """
    from cognee.low_level import setup
    from cognee.modules.users.methods import get_default_user

    key = str(root)
    if key in _ready:
        return
    locks = _setup_locks.setdefault(asyncio.get_running_loop(), {})
    async with locks.setdefault(key, asyncio.Lock()):
        if key not in _ready:
            await setup()
            await get_default_user()
            _ready.add(key)


class CogneeAgent:
    """Cognee knowledge-graph memory: add + cognify per chunk, CHUNKS search (or a completion type)."""

    #: MemoryAgentBench ran Cognee with 4096-token chunks on every dataset (seed 002, D.3)
    default_chunk_size = 4096
    options = (
        Option("cognify", str, "chunk", "run cognify after every chunk, or once at the end", choices=("chunk", "end")),
        Option(
            "search",
            str,
            "CHUNKS",
            "CHUNKS: the run's reader answers; a completion type: Cognee answers",
            choices=("CHUNKS",) + COMPLETION_TYPES,
        ),
    )
    #: Cognee has no mode without an LLM: cognify writes its graph with one
    preflight = requires_llm("cognee", "cognify and completion search")

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.config = config
        self.workdir = Path(workdir)
        opts = resolve(self.options, config.options, "cognee")
        self.cognify_each: bool = opts["cognify"] == "chunk"
        self.search_type: str = opts["search"]
        root = self.workdir.parent / "cognee"
        prepare_offline()
        os.environ.setdefault("COGNEE_SKIP_CONNECTION_TEST", "true")  # a probe call per run, not per question
        os.environ.setdefault("COGNEE_LOGS_DIR", str(root / "logs"))
        os.environ.setdefault("LOG_LEVEL", "ERROR")
        configure_cognee(config, root)
        self.root = root
        self.dataset = dataset_name(config.sample_id or self.workdir.name)
        self._pending = False
        #: rendered message text -> ids, to credit Cognee's chunks with the messages they hold
        self._texts: dict[str, list[str]] = {}

    async def aingest(self, chunk: Chunk) -> None:
        import cognee
        from cognee.tasks.ingestion.data_item import DataItem

        await ensure_ready(self.root)
        for message in chunk.messages:
            self._texts.setdefault(message_text(message), []).append(message.id)
        # literal_text: a message that happens to be a URL or a path is stored, never fetched or read
        await cognee.add(DataItem(data=chunk_text(chunk), literal_text=True), dataset_name=self.dataset)
        self._pending = True
        if self.cognify_each:
            await self._cognify()

    async def _cognify(self) -> None:
        import cognee

        if self._pending:
            await cognee.cognify(datasets=[self.dataset])
            self._pending = False

    async def asettle(self) -> None:
        """With ``-o cognify=end``: build the sample's graph from every chunk added (the
        runner awaits this before the first question, within --settle-timeout, and records
        its time apart from ingestion). With cognify per chunk, nothing is pending."""
        await self._cognify()

    async def arecall(self, question: AgentQuestion) -> Recall:
        import cognee
        from cognee import SearchType

        await self._cognify()  # a caller that never settled (memplug.testing's checks, a script)
        if not self._texts:
            return Recall(meta={"usage": USAGE_NOTE})
        found = await cognee.search(
            question.text, query_type=SearchType.CHUNKS, datasets=[self.dataset], top_k=self.config.top_k
        )
        items = tuple(self._item(hit) for hit in _results(found))
        answer = None
        if self.search_type != "CHUNKS":
            written = await cognee.search(
                question.text, query_type=SearchType[self.search_type], datasets=[self.dataset], top_k=self.config.top_k
            )
            answer = "\n".join(str(r) for r in _results(written)).strip()
        return Recall(items=items, answer=answer, meta={"usage": USAGE_NOTE})

    def _ids(self, text: str) -> tuple[str, ...]:
        """The ingested messages whose text ``text`` contains (or that contain it)."""
        ids = [
            i
            for rendered, group in self._texts.items()
            if rendered in text or (text and text in rendered)
            for i in group
        ]
        return tuple(dict.fromkeys(ids))

    def _item(self, hit: Any) -> Recalled:
        text = hit.get("text", "") if isinstance(hit, dict) else str(hit)
        score = hit.get("score") if isinstance(hit, dict) else None
        return Recalled(text=text, score=score, message_ids=self._ids(text))

    async def astored(self) -> list[StoredItem]:
        """The nodes of the sample's Cognee graph (its dataset's graph database, read whole
        with the graph engine's ``get_graph_data``; no LLM call): its chunks, in order, with
        the message ids whose text they hold; their summaries; then the entities cognify
        drew from them, as ``name: description``. A summary or an entity carries no message
        ids of its own (an LLM wrote it): the message ids of the chunks it is linked to are
        in ``meta["sources"]``, as Mem0's extracted facts have theirs. Each item has Cognee's
        node id and its node type in ``meta``; at most :data:`STORED_LIMIT` of them.

        With ``-o cognify=end`` the graph is built in ``asettle``, before the runner asks;
        called before that, this raises (a graph listed before cognify would say that
        Cognee stored nothing) and the run records nothing for the sample.
        """
        from cognee.context_global_variables import set_database_global_context_variables
        from cognee.infrastructure.databases.graph import get_graph_engine
        from cognee.modules.data.methods import get_authorized_dataset_by_name
        from cognee.modules.users.methods import get_default_user

        if not self._texts:
            return []
        if self._pending:
            raise MemplugError("cognee builds its graph in settle() with -o cognify=end: nothing to list before it")
        user = await get_default_user()
        dataset = await get_authorized_dataset_by_name(self.dataset, user, "read")
        if dataset is None:
            raise MemplugError(f"cognee has no dataset {self.dataset!r} for the default user")
        async with set_database_global_context_variables(dataset.id, dataset.owner_id):
            nodes, edges = await (await get_graph_engine()).get_graph_data()
        return stored_items(nodes, edges, self._ids)

    def close(self) -> None:
        """Nothing to release per sample: Cognee pools its engines and closes those its LRU evicts."""


def stored_items(nodes: list[Any], edges: list[Any], message_ids: Callable[[str], tuple[str, ...]]) -> list[StoredItem]:
    """:meth:`CogneeAgent.astored`'s items from a graph's ``(id, properties)`` nodes and
    ``(source, target, relation, properties)`` edges (the first :data:`STORED_LIMIT`);
    ``message_ids(text)`` credits a chunk."""
    by_type: dict[str, list[tuple[str, dict[str, Any]]]] = {kind: [] for kind in STORED_TYPES}
    for node_id, props in nodes:
        if isinstance(props, dict) and props.get("type") in by_type:
            by_type[props["type"]].append((str(node_id), props))
    by_type["DocumentChunk"].sort(
        key=lambda node: (str(node[1].get("document_id") or ""), int(node[1].get("chunk_index") or 0))
    )
    chunk_ids = {node_id: message_ids(str(props.get("text") or "")) for node_id, props in by_type["DocumentChunk"]}
    sources: dict[str, list[str]] = {}
    for edge in edges:
        source, target = str(edge[0]), str(edge[1])
        for chunk, other in ((source, target), (target, source)):
            if chunk in chunk_ids:
                sources.setdefault(other, []).extend(chunk_ids[chunk])
    items = []
    for kind in STORED_TYPES:
        for node_id, props in by_type[kind]:
            meta: dict[str, Any] = {"type": kind}
            if kind == "DocumentChunk":
                items.append(StoredItem(str(props.get("text") or ""), node_id, chunk_ids[node_id], meta))
                continue
            if kind == "Entity":
                name, description = str(props.get("name") or ""), str(props.get("description") or "")
                text = f"{name}: {description}" if name and description and description != name else name or description
            else:
                text = str(props.get("text") or "")
            meta["sources"] = list(dict.fromkeys(sources.get(node_id, ())))
            items.append(StoredItem(text, node_id, (), meta))
    return items[:STORED_LIMIT]


def _results(found: Any) -> list[Any]:
    """The hits of a ``cognee.search`` answer: one entry per dataset, each with its results."""
    out: list[Any] = []
    for entry in found or []:
        result = entry.get("search_result") if isinstance(entry, dict) else getattr(entry, "search_result", entry)
        out.extend(result if isinstance(result, list) else [result])
    return out
