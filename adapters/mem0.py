"""Mem0 (the ``mem0ai`` package) as a memory, the way MemoryAgentBench ran it (seed 002, D.2).

Ingestion calls ``Memory.add`` per chunk; with ``infer`` (Mem0's default) Mem0's LLM
rewrites the chunk into facts, otherwise each message is stored verbatim. Recall calls
``Memory.search(query, filters={"user_id": ...}, top_k=K)`` and the run's reader
answers from the memories found, as the paper did with GPT-4o-mini.

What Mem0 is given is :func:`memplug.adapters.external.chunk_text`: each message as its
dataset renders it, with ``[time] speaker:`` before it for what the text does not show. On
LoCoMo that is LoCoMo's own RAG line (``1:56 pm on 8 May, 2023: Caroline said, "..."``).
Mem0's own LoCoMo evaluation (github mem0ai/mem0 @ aae5989, ``evaluation/src/memzero/add.py``
and ``search.py``, removed in 9315e30) fed its platform client
``{"role": ..., "content": f"{speaker}: {text}"}``, two turns per ``add`` and once per
speaker's user id, with the session's ``date_time`` only as ``metadata={"timestamp": ...}``
(shown beside each memory in the answer prompt) and image captions left out. memplug does
not copy that protocol, so its Mem0 LoCoMo scores are not that evaluation's.

Everything Mem0 stores lives in the sample's work directory: Qdrant in local on-disk
mode and Mem0's SQLite history. Mem0's configuration only accepts its built-in LLM and
embedder providers, and its litellm provider ignores ``api_base``; so ``from_config``
builds the stores and the LLM/embedder it builds are then replaced by thin bridges to
the run's LLM and embedder (:class:`memplug.llm.LLM`, memplug's embedder registry).
Mem0's fact extraction thus uses the run's model, endpoint, cache, retries and token
accounting, and embeds with the same model as every other agent.

Message ids: with ``infer=false`` every memory is one message and carries its id.
With fact extraction a fact is written from a whole chunk and Mem0 keeps no link from
a fact to the message it came from, so recalled facts carry no message ids (recall@K
is not applicable); ``Recall.meta["sources"]`` lists the ids of each fact's chunk.

Search: mem0ai 2.x blends embedding similarity with BM25 keywords and spaCy's entities and
lemmas, both models downloaded on first use. Where they are not installed (offline, as
memplug runs by default) Mem0 searches by embedding alone; the run says so in a line and
run.json's ``agent_note`` records it (:func:`search_gaps`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from memplug.adapters.external import RunEmbedder, chunk_text, message_text, prepare_offline, require_llm
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, Chunk, Recall, Recalled, StoredItem
from memplug.options import Option, resolve
from memplug.preflight import AgentPlan
from memplug.protocols import AgentConfig

if TYPE_CHECKING:
    from memplug.llm import LLM

#: metadata keys memplug writes on each Mem0 memory
IDS_KEY = "message_ids"
#: memories Mem0's ``get_all`` lists for stored(): a sample holding more shows this many
STORED_LIMIT = 10_000
NO_IDS = (
    "unavailable: mem0 fact extraction (infer=true) writes facts from a whole chunk and keeps no "
    "fact-to-message link; meta.sources holds each fact's chunk message ids"
)


#: what :func:`search_gaps` names (short: the note fits 80 columns after "memplug: ")
BM25_GAP = "BM25 (Qdrant/bm25)"
SPACY_GAP = "spaCy (en_core_web_sm)"


@functools.cache
def search_gaps() -> tuple[str, ...]:
    """The parts of Mem0's hybrid search that cannot run here (:data:`BM25_GAP`,
    :data:`SPACY_GAP`).

    mem0ai 2.x searches by embedding, BM25 keywords (fastembed's ``Qdrant/bm25``) and entity
    and lemma boosts (spaCy's ``en_core_web_sm``), and downloads both models on first use.
    Offline, memplug's default, the downloads fail and Mem0 logs it and searches without
    them: a deviation from Mem0 as its users run it, so the run says it and records it.
    """
    prepare_offline()  # before mem0's import: its telemetry is read then
    import importlib.util

    from mem0.vector_stores.qdrant import Qdrant

    gaps = []
    if hasattr(Qdrant, "_get_bm25_encoder") and not _bm25_loads():
        gaps.append(BM25_GAP)
    uses_spacy = importlib.util.find_spec("mem0.utils.spacy_models") is not None
    if uses_spacy and not all(importlib.util.find_spec(m) for m in ("spacy", "en_core_web_sm")):
        gaps.append(SPACY_GAP)
    return tuple(gaps)


def _bm25_loads() -> bool:
    """Whether fastembed loads ``Qdrant/bm25`` from its local cache, as Mem0 would load it."""
    try:
        from fastembed import SparseTextEmbedding
        from loguru import logger
    except ImportError:
        return False
    logger.disable("fastembed")  # its two ERROR lines of a missing model: the note says it
    try:
        SparseTextEmbedding(model_name="Qdrant/bm25", local_files_only=True)
    except Exception:
        return False
    finally:
        logger.enable("fastembed")
    return True


@functools.cache
def _bridges() -> tuple[type, type]:
    """Mem0 LLM and embedder classes that delegate to the run's LLM and embedder.

    Built on first use: subclassing needs mem0 imported, which this module must not do
    at import time.
    """
    from mem0.embeddings.base import EmbeddingBase
    from mem0.llms.base import LLMBase

    class MemplugMem0LLM(LLMBase):
        def __init__(self, llm: "LLM") -> None:
            super().__init__({"model": llm.model})
            self.llm = llm

        def generate_response(
            self,
            messages: list[dict[str, Any]],
            response_format: Any = None,
            tools: Any = None,
            tool_choice: str = "auto",
        ) -> str:
            if tools:  # only Mem0's graph memory asks for tools, and it is not enabled here
                raise MemplugError("mem0 asked for tool calls, which memplug's mem0 bridge does not offer")
            params = {"response_format": response_format} if response_format else {}
            return self.llm.complete(messages, **params).text

    class MemplugMem0Embedding(EmbeddingBase):
        def __init__(self, embedder: RunEmbedder) -> None:
            super().__init__()
            self.embedder = embedder
            self.config.embedding_dims = embedder.dim

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            return self.embedder.embed_one(text)

        def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
            return self.embedder.embed(texts)

    return MemplugMem0LLM, MemplugMem0Embedding


class Mem0Agent:
    """Mem0 with Qdrant on disk in the sample's work directory; the run's reader answers."""

    #: MemoryAgentBench ran Mem0 with 4096-token chunks on every dataset (seed 002, D.3)
    default_chunk_size = 4096
    options = (
        Option(
            "infer",
            bool,
            True,
            "Mem0's LLM extracts facts from each chunk (false: store messages verbatim; the default without --llm)",
        ),
        Option("threshold", float, 0.1, "Mem0 search: minimum score of a memory to be returned (Mem0's default)"),
    )

    @classmethod
    def preflight(cls, values: Mapping[str, Any], given: Mapping[str, str], llm: "LLM | None") -> AgentPlan:
        """Without an LLM, Mem0 runs offline (``infer=false``: each message embedded by the
        run's embedder into the local Qdrant) and says so; ``-o infer=true`` then fails here.
        What of Mem0's hybrid search cannot run here (:func:`search_gaps`) is said too: a line
        each, recorded in run.json as ``agent_note``."""
        notes = []
        if llm is None and values["infer"]:
            if "infer" in given:
                raise MemplugError(
                    "agent 'mem0' with -o infer=true needs an LLM for fact extraction: "
                    "set --llm MODEL (and --api-base URL for a local server), or drop -o infer=true"
                )
            values = {**values, "infer": False}
            notes.append("mem0 keeps messages verbatim (infer=false); give --llm to extract facts")
        gaps = search_gaps()
        if gaps:
            notes.append(f"mem0 search has no {' or '.join(gaps)} here")
        return AgentPlan(values, "\n".join(notes) or None)

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.config = config
        self.workdir = Path(workdir)
        opts = resolve(self.options, config.options, "mem0")
        self.infer: bool = opts["infer"]
        self.threshold: float = opts["threshold"]
        llm = require_llm(config, "mem0", "fact extraction (or pass -o infer=false)") if self.infer else config.llm
        prepare_offline()
        embedder = RunEmbedder(config)
        # mem0 writes a config file into MEM0_DIR when first imported; keep it in the run folder
        os.environ.setdefault("MEM0_DIR", str(self.workdir.parent / ".mem0"))
        from mem0 import Memory
        from mem0.memory import telemetry

        if telemetry.MEM0_TELEMETRY:  # read once, when mem0 was first imported
            raise MemplugError(
                "mem0 was imported with telemetry on before memplug could turn it off: "
                "set MEM0_TELEMETRY=False in the environment"
            )

        llm_bridge, embedding_bridge = _bridges()
        self.memory = Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": "memplug",
                        "path": str(self.workdir / "qdrant"),
                        "on_disk": True,
                        "embedding_model_dims": embedder.dim,
                    },
                },
                # valid placeholders for from_config; replaced by the bridges right below
                "llm": {"provider": "litellm", "config": {"model": llm.model if llm else "none"}},
                "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": embedder.dim}},
                "history_db_path": str(self.workdir / "mem0_history.db"),
            }
        )
        self.memory.embedding_model = embedding_bridge(embedder)
        if BM25_GAP in search_gaps() and hasattr(self.memory.vector_store, "_bm25_encoder"):
            # Mem0's own "tried and failed" mark: it would try again, and log three lines of
            # failure, for every sample; the run's note says it once
            self.memory.vector_store._bm25_encoder = False
        if llm is not None:
            self.memory.llm = llm_bridge(llm)
        self.user_id = config.sample_id or self.workdir.name

    def ingest(self, chunk: Chunk) -> None:
        if self.infer:
            self.memory.add(
                chunk_text(chunk), user_id=self.user_id, infer=True, metadata={IDS_KEY: list(chunk.message_ids)}
            )
            return
        for message in chunk.messages:
            self.memory.add(message_text(message), user_id=self.user_id, infer=False, metadata={IDS_KEY: [message.id]})

    def recall(self, question: AgentQuestion) -> Recall:
        found = self.memory.search(
            question.text, filters={"user_id": self.user_id}, top_k=self.config.top_k, threshold=self.threshold
        )["results"]
        ids = [tuple((hit.get("metadata") or {}).get(IDS_KEY, ())) for hit in found]
        if self.infer:
            items = tuple(Recalled(text=hit["memory"], score=hit.get("score")) for hit in found)
            return Recall(items=items, meta={"message_ids": NO_IDS, "sources": [list(i) for i in ids]})
        items = tuple(Recalled(text=hit["memory"], score=hit.get("score"), message_ids=i) for hit, i in zip(found, ids))
        return Recall(items=items)

    def stored(self) -> list[StoredItem]:
        """Every memory Mem0 holds for the sample (``get_all`` by its user id), with Mem0's id.

        Verbatim memories (infer=false) carry their message's id; an extracted fact carries
        none (see the module's note) and its chunk's message ids go in ``meta["sources"]``.
        """
        found = self.memory.get_all(filters={"user_id": self.user_id}, top_k=STORED_LIMIT)["results"]
        items = []
        for hit in found:
            ids = tuple((hit.get("metadata") or {}).get(IDS_KEY, ()))
            meta = {k: hit[k] for k in ("created_at", "updated_at") if hit.get(k)}
            if self.infer:
                meta["sources"] = list(ids)
            items.append(StoredItem(hit["memory"], hit.get("id"), () if self.infer else ids, meta))
        return items

    def close(self) -> None:
        """Close Mem0's SQLite history and Qdrant's local client (which holds a file lock)."""
        self.memory.close()
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None:
            client.close()
