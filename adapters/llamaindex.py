"""LlamaIndex (llama-index-core) as a memory: a VectorStoreIndex over the history.

Each message (or, with ``-o node=chunk``, each ingested chunk) becomes a ``TextNode``
whose metadata carries the message ids, so recall@K can be scored. Nodes are embedded
with the run's embedder (memplug's, wrapped as a LlamaIndex ``BaseEmbedding``), so
the comparison with the native ``embedding`` baseline isolates LlamaIndex's own
retrieval. With ``-o answer=true`` LlamaIndex's query engine writes the answer with
the run's LLM (wrapped as a LlamaIndex ``CustomLLM``, so calls are cached and counted
like every other call of the run); otherwise the run's reader answers from the nodes.

llama_index is imported only when an agent is built (``memplug list`` stays fast); its
index lives in memory and is written to the sample's work directory on close.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memplug.adapters.external import RunEmbedder, chunk_text, message_text, prepare_offline, require_llm
from memplug.models import AgentQuestion, Chunk, Recall, Recalled, StoredItem
from memplug.options import Option, resolve
from memplug.preflight import requires_llm
from memplug.protocols import AgentConfig

if TYPE_CHECKING:
    from memplug.llm import LLM

#: node metadata key holding the message ids; kept out of embeddings and LLM prompts
IDS_KEY = "message_ids"


@functools.cache
def _bridges() -> tuple[type, type]:
    """LlamaIndex subclasses that delegate to memplug's embedder and LLM.

    Built on first use because subclassing needs llama_index imported, which this
    module must not do at import time.
    """
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
    from llama_index.core.llms import CustomLLM
    from llama_index.core.llms.callbacks import llm_completion_callback
    from pydantic import PrivateAttr

    class MemplugEmbedding(BaseEmbedding):
        """The run's embedder as a LlamaIndex embedding model."""

        _embedder: Any = PrivateAttr()

        def __init__(self, embedder: RunEmbedder, **kwargs: Any) -> None:
            super().__init__(model_name=embedder.name, **kwargs)
            self._embedder = embedder

        def _get_query_embedding(self, query: str) -> list[float]:
            return cast("list[float]", self._embedder.embed_one(query))

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return cast("list[float]", self._embedder.embed_one(query))

        def _get_text_embedding(self, text: str) -> list[float]:
            return cast("list[float]", self._embedder.embed_one(text))

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return cast("list[list[float]]", self._embedder.embed(texts))

    class MemplugLLM(CustomLLM):
        """The run's LLM as a LlamaIndex completion model (cache, retries and usage stay memplug's)."""

        model_name: str = "memplug"
        _llm: Any = PrivateAttr()

        def __init__(self, llm: "LLM", **kwargs: Any) -> None:
            super().__init__(model_name=llm.model, **kwargs)
            self._llm = llm

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name=self.model_name, is_chat_model=False)

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text=self._llm.complete([{"role": "user", "content": prompt}]).text)

        @llm_completion_callback()
        async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            done = await self._llm.acomplete([{"role": "user", "content": prompt}])
            return CompletionResponse(text=done.text)

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
            text = self._llm.complete([{"role": "user", "content": prompt}]).text
            yield CompletionResponse(text=text, delta=text)

    return MemplugEmbedding, MemplugLLM


class LlamaIndexAgent:
    """LlamaIndex VectorStoreIndex RAG over the history, nodes tagged with message ids."""

    #: MemoryAgentBench's chunk size for the external memory systems (seed 002, D.3)
    default_chunk_size = 4096
    options = (
        Option("node", str, "message", "what one LlamaIndex node holds", choices=("message", "chunk")),
        Option("answer", bool, False, "LlamaIndex's query engine writes the answer with the run's LLM"),
        Option("persist", bool, True, "write the index to the sample's work directory on close"),
    )
    #: retrieval runs offline (the run's embedder); only -o answer=true asks an LLM
    preflight = requires_llm("llamaindex", "-o answer=true", when=lambda values: values["answer"])

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        prepare_offline()
        from llama_index.core import VectorStoreIndex

        embedding_cls, llm_cls = _bridges()
        self.config = config
        self.workdir = Path(workdir)
        opts = resolve(self.options, config.options, "llamaindex")
        self.node_kind: str = opts["node"]
        self.agent_answers: bool = opts["answer"]
        self.persist: bool = opts["persist"]
        self._llm = llm_cls(require_llm(config, "llamaindex", "-o answer=true")) if self.agent_answers else None
        self._index = VectorStoreIndex(nodes=[], embed_model=embedding_cls(RunEmbedder(config)))

    def _node(self, text: str, message_ids: tuple[str, ...], chunk: int) -> Any:
        from llama_index.core.schema import TextNode

        return TextNode(
            text=text,
            metadata={IDS_KEY: list(message_ids), "chunk": chunk},
            excluded_embed_metadata_keys=[IDS_KEY, "chunk"],
            excluded_llm_metadata_keys=[IDS_KEY, "chunk"],
        )

    def ingest(self, chunk: Chunk) -> None:
        if self.node_kind == "chunk":
            nodes = [self._node(chunk_text(chunk), chunk.message_ids, chunk.index)]
        else:
            nodes = [self._node(message_text(m), (m.id,), chunk.index) for m in chunk.messages]
        self._index.insert_nodes(nodes)

    def recall(self, question: AgentQuestion) -> Recall:
        k = self.config.top_k
        if self._llm is not None:
            from llama_index.core.base.response.schema import Response

            response = self._index.as_query_engine(llm=self._llm, similarity_top_k=k).query(question.text)
            # a query engine without streaming or an output class answers with a plain Response
            if not isinstance(response, Response):
                raise TypeError(f"llama_index answered with a {type(response).__name__}, expected a Response")
            return Recall(items=self._items(response.source_nodes), answer=str(response.response or "").strip())
        return Recall(items=self._items(self._index.as_retriever(similarity_top_k=k).retrieve(question.text)))

    def stored(self) -> list[StoredItem]:
        """Every node of the sample's index (its docstore), in insertion order, with its node id."""
        return [
            StoredItem(
                node.get_content(), node_id, node.metadata.get(IDS_KEY, ()), {"chunk": node.metadata.get("chunk")}
            )
            for node_id, node in self._index.docstore.docs.items()
        ]

    @staticmethod
    def _items(scored: list[Any]) -> tuple[Recalled, ...]:
        return tuple(
            Recalled(text=hit.node.get_content(), score=hit.score, message_ids=hit.node.metadata.get(IDS_KEY, ()))
            for hit in scored
        )

    def close(self) -> None:
        if self.persist:
            self._index.storage_context.persist(persist_dir=str(self.workdir / "llamaindex"))
