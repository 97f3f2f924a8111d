"""Graphiti (Zep's open-source temporal knowledge graph, ``graphiti-core``) on embedded Kùzu.

Ingestion calls ``Graphiti.add_episode`` once per chunk: the chunk is the episode, its
messages written ``speaker: text`` one per line, and its first message's time is the
episode's reference time. Graphiti's LLM extracts entities and facts (edges) from each
episode, resolves them against the graph and dates them. Recall is Graphiti's hybrid
edge search (BM25 and cosine similarity over facts, fused by reciprocal rank: the
``EDGE_HYBRID_SEARCH_RRF`` recipe that ``Graphiti.search`` uses) and returns the top-K
facts; the run's reader answers from them.

Storage: each sample has its own Kùzu database in its work directory (``kuzu``), so no
server is needed and samples share nothing; the sample's id is also its Graphiti
``group_id``. Kùzu creates no full-text indexes on its own (``KuzuDriver``'s
``build_indices_and_constraints`` is a no-op), so the agent creates Graphiti's four FTS
indexes when it opens the database.

One model for the run: Graphiti's LLM client is a bridge to the run's LLM
(:class:`memplug.llm.LLM`: cache, retries, token accounting) that asks for structured
output as Graphiti's ``OpenAIGenericClient`` does (``response_format`` ``json_schema``
named after the pydantic model; ``-o structured=json_object`` for servers without it).
Its embedder is the run's embedder (``--embedder``, wordllama by default). No cross
encoder is configured: the search recipes offered need none.

Message ids: Graphiti keeps, on every fact, the uuids of the episodes it came from
(``EntityEdge.episodes``); the agent maps each episode uuid to its chunk's message ids,
so a recalled fact carries the ids of the messages of every episode that stated it.
With one message per chunk (MemSim's protocol) that is the message itself.

What it stored (``stored()``, the run's stored.jsonl): the sample's facts (Graphiti's
``EntityEdge.get_by_group_ids`` for its group id), oldest first, with Graphiti's edge
uuids, the message ids of their episodes, and the relation name and dates in ``meta``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import shutil
import sys
import threading
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from memplug.adapters.external import RunEmbedder, prepare_offline, require_llm
from memplug.adapters.retrieval.timestamps import parse_time
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, Chunk, Message, Recall, Recalled, StoredItem
from memplug.options import Option, resolve
from memplug.preflight import requires_llm
from memplug.protocols import AgentConfig

if TYPE_CHECKING:
    from memplug.llm import LLM

#: reference time of an episode whose messages carry no time readable by parse_time:
#: this date plus the chunk's index in seconds, so that episodes keep their order
NO_TIME = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: graphiti's search recipes that need no cross encoder, by the reranker they use
RERANKERS = ("rrf", "mmr", "episode_mentions")
#: facts stored() lists at most (the stored.jsonl line keeps the first 200 and counts these)
STORED_LIMIT = 10_000


def group_id(sample_id: str) -> str:
    """A Graphiti group id for a sample (letters, digits, ``-`` and ``_`` only)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", sample_id) or "sample"


def episode_body(messages: tuple[Message, ...]) -> str:
    """The chunk as Graphiti reads a conversation: ``speaker: text`` per line.

    A chunk spanning several times keeps each message's time in brackets, since the
    episode has one reference time. What the text already shows (``Message.shows``:
    LoCoMo's 'Caroline said, "..."') is not written again.
    """
    times = {m.time for m in messages if m.time}
    lines = []
    for m in messages:
        line = f"{m.speaker}: {m.text}" if m.speaker and "speaker" not in m.shows else m.text
        lines.append(f"[{m.time}] {line}" if len(times) > 1 and m.time and "time" not in m.shows else line)
    return "\n".join(lines)


def reference_time(chunk: Chunk, previous: datetime | None) -> datetime:
    """The chunk's first readable message time; else the previous episode's; else :data:`NO_TIME`."""
    for message in chunk.messages:
        seconds = parse_time(message.time)
        if seconds is not None:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
    if previous is not None:
        return previous
    return NO_TIME + timedelta(seconds=chunk.index)


def _json_reply(text: str, schema: str | None) -> dict[str, Any]:
    stripped = text.strip()
    if stripped.startswith("```"):  # models served by Ollama and the like fence their JSON
        stripped = re.sub(r"^```[\w-]*[ \t]*\r?\n?", "", stripped)
        stripped = re.sub(r"\r?\n?```[ \t]*$", "", stripped).strip()
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        shown = " ".join(text.split())[:160]
        raise MemplugError(
            f"graphiti asked the LLM for {schema or 'JSON'} and the reply is not JSON: {shown!r} "
            "(a model that cannot follow a JSON schema cannot build Graphiti's graph)"
        ) from None
    if not isinstance(value, dict):
        raise MemplugError(f"graphiti asked the LLM for {schema or 'a JSON object'} and got {type(value).__name__}")
    return value


@functools.cache
def _bridges() -> tuple[type, type, type]:
    """Graphiti LLM, embedder and cross-encoder classes over the run's LLM and embedder.

    Built on first use: subclassing needs graphiti imported, which this module must not
    do at import time.
    """
    from graphiti_core.cross_encoder.client import CrossEncoderClient
    from graphiti_core.embedder.client import EmbedderClient
    from graphiti_core.llm_client import LLMClient
    from graphiti_core.llm_client.client import get_extraction_language_instruction
    from graphiti_core.llm_client.config import LLMConfig, ModelSize

    class MemplugGraphitiLLM(LLMClient):
        """Graphiti's ``LLMClient`` over the run's LLM, one attempt per call (the run's LLM retries)."""

        def __init__(self, llm: "LLM", structured: str, max_tokens: int = 0) -> None:
            super().__init__(LLMConfig(model=llm.model, small_model=llm.model, temperature=0.0), cache=False)
            self.llm = llm
            self.structured = structured
            #: cap on each reply's tokens; 0: none sent (Graphiti's own caps, up to 16384, are
            #: not forwarded: a local server with a shorter context rejects them)
            self.reply_cap = max_tokens

        def _response_format(self, response_model: Any) -> dict[str, Any]:
            if response_model is None or self.structured == "json_object":
                return {"type": "json_object"}
            return {
                "type": "json_schema",
                "json_schema": {"name": response_model.__name__, "schema": response_model.model_json_schema()},
            }

        async def generate_response(
            self,
            messages: list[Any],
            response_model: Any = None,
            max_tokens: int | None = None,
            model_size: Any = ModelSize.medium,
            group_id: str | None = None,
            prompt_name: str | None = None,
            *,
            attribute_extraction: bool = False,
            model: str | None = None,
        ) -> dict[str, Any]:
            # what OpenAIGenericClient.generate_response does to the prompt, without its
            # tenacity retries (5 to 120 s waits): the run's LLM retries transient failures
            self._apply_attribute_extraction_preamble(messages, attribute_extraction)
            if response_model is not None and self.structured == "json_object":
                schema = json.dumps(response_model.model_json_schema())
                messages[-1].content += f"\n\nRespond with a JSON object in the following format:\n\n{schema}"
            messages[0].content += get_extraction_language_instruction(group_id)
            return await self._generate_response(messages, response_model, max_tokens, model_size)

        async def _generate_response(
            self,
            messages: list[Any],
            response_model: Any = None,
            max_tokens: int | None = None,
            model_size: Any = ModelSize.medium,
            *,
            model: str | None = None,
        ) -> dict[str, Any]:
            params: dict[str, Any] = {"response_format": self._response_format(response_model)}
            if self.reply_cap:
                params["max_tokens"] = min(self.reply_cap, max_tokens or self.reply_cap)
            chat = [
                {"role": m.role, "content": self._clean_input(m.content)}
                for m in messages
                if m.role in ("system", "user")
            ]
            completion = await self.llm.acomplete(chat, **params)
            return _json_reply(completion.text, getattr(response_model, "__name__", None))

    class MemplugGraphitiEmbedder(EmbedderClient):
        """The run's embedder; ``create`` embeds the first text, as Graphiti's OpenAIEmbedder does."""

        def __init__(self, embedder: RunEmbedder) -> None:
            self.embedder = embedder

        async def create(self, input_data: Any) -> list[float]:
            text = input_data if isinstance(input_data, str) else next(iter(input_data))
            if not isinstance(text, str):
                raise MemplugError("graphiti asked to embed token ids; memplug's embedders take text")
            return (await asyncio.to_thread(self.embedder.embed, [text]))[0]

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            return await asyncio.to_thread(self.embedder.embed, list(input_data_list))

    class NoCrossEncoder(CrossEncoderClient):
        """Graphiti builds an OpenAI reranker when given none; the recipes used here never rank."""

        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            raise MemplugError(
                "graphiti asked for a cross-encoder reranker, which the memplug agent does not "
                f"configure: use -o reranker= one of {', '.join(RERANKERS)}"
            )

    return MemplugGraphitiLLM, MemplugGraphitiEmbedder, NoCrossEncoder


#: held while graphiti is imported and while a Kùzu database is opened
_setup_lock = threading.Lock()


def import_graphiti() -> None:
    """Import graphiti-core without its ``load_dotenv()``, which reads the first ``.env`` in
    graphiti_core's folder or any above it (the project's, when the venv is inside it):
    a run is configured by its command line, not by a file it did not name."""
    if "graphiti_core.graphiti" in sys.modules:
        return
    with _setup_lock:
        previous = os.environ.get("PYTHON_DOTENV_DISABLED")
        os.environ["PYTHON_DOTENV_DISABLED"] = "1"
        try:
            import graphiti_core.graphiti  # noqa: F401
        finally:
            if previous is None:
                os.environ.pop("PYTHON_DOTENV_DISABLED", None)
            else:
                os.environ["PYTHON_DOTENV_DISABLED"] = previous


#: Kùzu reserves this much address space per database (its default, 8 TiB, lets only 15
#: databases open in one process: "Mmap for size 8796093022208 failed"); a power of two
KUZU_MAX_DB_SIZE = 1 << 36
#: Kùzu's worker threads per database (its default: one per core, per sample)
KUZU_THREADS = 2


def open_kuzu(driver_class: Any, path: Path, buffer_pool_mb: int) -> Any:
    """graphiti's ``KuzuDriver`` on a Kùzu database sized for one sample among many.

    ``KuzuDriver`` opens ``kuzu.Database(path)`` with Kùzu's defaults (a buffer pool of 80%
    of the machine's memory and 8 TiB of address space, per database) and takes no
    settings, so the database class it sees is bounded while it is built (under a lock:
    samples are set up in worker threads).
    """
    import kuzu
    from graphiti_core.driver import kuzu_driver

    if "Ladybug" in (kuzu.__doc__ or ""):  # cognee 1.6 writes this shim over kuzu/ when installed after it
        raise MemplugError(
            "the installed `kuzu` is cognee's shim over its Ladybug fork, without the full-text "
            "search graphiti needs: pip install --force-reinstall --no-deps kuzu==0.11.3"
        )
    bounded = functools.partial(
        kuzu.Database, buffer_pool_size=buffer_pool_mb << 20, max_db_size=KUZU_MAX_DB_SIZE, max_num_threads=KUZU_THREADS
    )
    shim = SimpleNamespace(Database=bounded, Connection=kuzu.Connection, AsyncConnection=kuzu.AsyncConnection)
    with _setup_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "The Kuzu backend is deprecated": said in the docs
        kuzu_driver.kuzu = shim  # type: ignore[assignment]
        try:
            driver = driver_class(db=str(path))
        finally:
            kuzu_driver.kuzu = kuzu
    if getattr(driver.db, "max_db_size", None) != KUZU_MAX_DB_SIZE:  # graphiti stopped reading kuzu.Database
        raise MemplugError(
            "graphiti's KuzuDriver no longer opens its database through kuzu.Database: "
            "memplug's graphiti agent cannot bound its memory (update memplug)"
        )
    return driver


def _search_config(reranker: str, limit: int) -> Any:
    from graphiti_core.search import search_config_recipes as recipes

    recipe = {
        "rrf": recipes.EDGE_HYBRID_SEARCH_RRF,
        "mmr": recipes.EDGE_HYBRID_SEARCH_MMR,
        "episode_mentions": recipes.EDGE_HYBRID_SEARCH_EPISODE_MENTIONS,
    }[reranker]
    return recipe.model_copy(update={"limit": limit})  # Graphiti.search sets limit on the shared recipe


class GraphitiAgent:
    """Graphiti's temporal knowledge graph in an embedded Kùzu database per sample."""

    options = (
        Option(
            "reranker",
            str,
            "rrf",
            "how Graphiti fuses BM25 and cosine hits on facts: rrf (Graphiti.search's "
            "default), mmr, or episode_mentions",
            choices=RERANKERS,
        ),
        Option(
            "structured",
            str,
            "json_schema",
            "how structured output is asked of the LLM: json_schema "
            "(response_format with the schema) or json_object (schema in the prompt)",
            choices=("json_schema", "json_object"),
        ),
        Option("dates", bool, True, "show each fact's validity dates after it, as Graphiti's context string does"),
        Option(
            "max_tokens",
            int,
            0,
            "cap on the tokens of each of Graphiti's LLM replies (0: none sent, the "
            "server's limit applies; Graphiti's own caps, up to 16384, are not forwarded)",
            low=0,
            high=1_000_000,
        ),
        Option(
            "buffer_pool_mb",
            int,
            256,
            "Kùzu's buffer pool per sample, in MiB (Kùzu's default: 80% of the machine's memory for each database)",
            low=16,
            high=1 << 20,
        ),
    )
    #: Graphiti has no mode without an LLM: every episode is read by one
    preflight = requires_llm("graphiti", "entity and fact extraction")

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.config = config
        self.workdir = Path(workdir)
        opts = resolve(self.options, config.options, "graphiti")
        self.reranker: str = opts["reranker"]
        self.dates: bool = opts["dates"]
        llm = require_llm(config, "graphiti", "entity and fact extraction")
        prepare_offline()  # GRAPHITI_TELEMETRY_ENABLED=false among them, before graphiti is imported
        embedder = RunEmbedder(config)
        import_graphiti()
        from graphiti_core import Graphiti
        from graphiti_core.driver.kuzu_driver import KuzuDriver

        self.group_id = group_id(config.sample_id or self.workdir.name)
        self.workdir.mkdir(parents=True, exist_ok=True)
        # a sample is ingested from scratch: a database left by an interrupted run (which
        # --resume redoes whole) holds episodes this agent has no message ids for
        for stale in self.workdir.glob("kuzu*"):
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
        self.driver = open_kuzu(KuzuDriver, self.workdir / "kuzu", opts["buffer_pool_mb"])
        # KuzuDriver never sets the database name that add_episode compares group ids with
        # (graphiti-core 0.31: AttributeError); one database per sample, named after its group
        self.driver._database = self.group_id
        llm_bridge, embedder_bridge, no_cross_encoder = _bridges()
        self.graphiti = Graphiti(
            graph_driver=self.driver,
            llm_client=llm_bridge(llm, opts["structured"], opts["max_tokens"]),
            embedder=embedder_bridge(embedder),
            cross_encoder=no_cross_encoder(),
        )
        self._indexed = False
        #: episode uuid -> the message ids of its chunk
        self.episode_ids: dict[str, tuple[str, ...]] = {}
        self._last_time: datetime | None = None

    async def _ensure_indexes(self) -> None:
        if not self._indexed:
            await self.driver.graph_ops.build_indices_and_constraints(self.driver)
            self._indexed = True

    async def aingest(self, chunk: Chunk) -> None:
        from graphiti_core.nodes import EpisodeType

        if not chunk.messages:
            return
        await self._ensure_indexes()
        when = reference_time(chunk, self._last_time)
        self._last_time = when
        source = EpisodeType.message if all(m.speaker for m in chunk.messages) else EpisodeType.text
        result = await self.graphiti.add_episode(
            name=f"chunk-{chunk.index}",
            episode_body=episode_body(chunk.messages),
            source_description="conversation" if source is EpisodeType.message else "text",
            reference_time=when,
            source=source,
            group_id=self.group_id,
        )
        self.episode_ids[result.episode.uuid] = tuple(dict.fromkeys(chunk.message_ids))

    async def arecall(self, question: AgentQuestion) -> Recall:
        from graphiti_core.search.search_filters import SearchFilters
        from graphiti_core.search.search_helpers import format_edge_date_range

        if not self.episode_ids:
            return Recall()
        await self._ensure_indexes()
        found = await self.graphiti.search_(
            question.text,
            config=_search_config(self.reranker, self.config.top_k),
            group_ids=[self.group_id],
            search_filter=SearchFilters(),
        )
        scores = list(found.edge_reranker_scores or [])
        items = []
        for rank, edge in enumerate(found.edges[: self.config.top_k]):
            ids = [i for episode in edge.episodes for i in self.episode_ids.get(episode, ())]
            text = f"{edge.fact} (date range: {format_edge_date_range(edge)})" if self.dates else edge.fact
            items.append(
                Recalled(
                    text=text, score=scores[rank] if rank < len(scores) else None, message_ids=tuple(dict.fromkeys(ids))
                )
            )
        return Recall(items=tuple(items))

    async def astored(self) -> list[StoredItem]:
        """The sample's facts (Graphiti's entity edges for its group id), oldest first, at most
        :data:`STORED_LIMIT`, each with its edge uuid, the message ids of the episodes that
        stated it, and its relation name and dates (those Graphiti set) in ``meta``."""
        from graphiti_core.edges import EntityEdge
        from graphiti_core.errors import GroupsEdgesNotFoundError

        if not self.episode_ids:
            return []
        try:
            edges = await EntityEdge.get_by_group_ids(self.driver, [self.group_id], limit=STORED_LIMIT)
        except GroupsEdgesNotFoundError:  # episodes from which no fact was extracted
            return []
        edges.sort(key=lambda e: (e.created_at, e.uuid))
        items = []
        for edge in edges:
            ids = [i for episode in edge.episodes for i in self.episode_ids.get(episode, ())]
            meta: dict[str, Any] = {"name": edge.name}
            for key in ("created_at", "valid_at", "invalid_at", "expired_at"):
                when = getattr(edge, key, None)
                if when is not None:
                    meta[key] = when.isoformat()
            items.append(StoredItem(edge.fact, edge.uuid, tuple(dict.fromkeys(ids)), meta))
        return items

    def ingest(self, chunk: Chunk) -> None:
        asyncio.run(self.aingest(chunk))

    def stored(self) -> list[StoredItem]:
        return asyncio.run(self.astored())

    def recall(self, question: AgentQuestion) -> Recall:
        return asyncio.run(self.arecall(question))

    def close(self) -> None:
        """Release Kùzu's connections, thread pool and the database's file lock."""
        self.driver.client.close()
        self.driver.db.close()
