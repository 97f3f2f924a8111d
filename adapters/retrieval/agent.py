"""The retrieval agents' common body: store messages, score them, return the top k.

`bm25` and `embedding` differ only in the weights they give the :class:`Retriever`;
both accept PerLTQA re-ranking (``-o rerank=perltqa``) and pseudo-relevance feedback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memplug.adapters.retrieval.embedders import is_remote
from memplug.adapters.retrieval.memory_types import classify
from memplug.adapters.retrieval.message_log import MessageLog
from memplug.adapters.retrieval.rerank import PerLTQAReranker
from memplug.adapters.retrieval.retriever import Retriever
from memplug.models import AgentQuestion, Chunk, Recall, StoredItem
from memplug.options import Option, resolve
from memplug.protocols import AgentConfig

RERANK_OPTION = Option(
    "rerank",
    str,
    "none",
    "perltqa: classify semantic/episodic, retrieve k per type, re-score (PerLTQA Eq. 3)",
    choices=("none", "perltqa"),
)
#: dense agents: from this many memories on, dense search scores exactly only the rows
#: whose sign bits are nearest the query's (DenseIndex; recall of the exact top 5 and
#: latency measured in docs/performance.md)
ANN_OPTION = Option(
    "ann_from",
    int,
    0,
    "approximate dense search (sign-bit first pass, exact cosine re-rank) from this many memories on; 0: always exact",
)


class RetrievalAgent:
    """Subclasses set the retriever weights from their options in :meth:`weights`."""

    options: tuple[Option, ...] = ()
    #: CPU-only and quick: the runner calls it in its event loop, not a worker thread
    blocking = False

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.blocking = is_remote(config.embedder)
        self.config = config
        self.opts = resolve(type(self).options, config.options, type(self).__name__)
        lexical, dense, feedback = self.weights(self.opts)
        self.log = MessageLog()
        self.retriever = Retriever(
            lexical, dense, feedback, embedder=config.embedder, llm=config.llm, ann_from=self.opts.get("ann_from", 0)
        )
        self.reranker = PerLTQAReranker() if self.opts["rerank"] == "perltqa" else None

    def weights(self, opts: dict[str, Any]) -> tuple[float, float, float]:
        """(lexical, dense, feedback) weights from the parsed options."""
        raise NotImplementedError

    def ingest(self, chunk: Chunk) -> None:
        entries = self.log.add(chunk)
        texts = [e.text for e in entries]
        self.retriever.add(texts)
        if self.reranker is not None:
            self.reranker.add(texts, [e.meta for e in entries])

    def recall(self, question: AgentQuestion) -> Recall:
        k = self.config.top_k
        if self.reranker is not None:
            # the question's memory type (PerLTQA Eq. 1) goes into the reply, where the
            # memory_type metric scores the classification against the dataset's label
            pi = classify(question.text)[0]
            ranked = self.reranker.rerank(question.text, self.retriever.scores(question.text), k, pi)
            return Recall(self.log.items(ranked), meta={"memory_type": pi})
        return Recall(self.log.items(self.retriever.search(question.text, k)))

    def stored(self) -> list[StoredItem]:
        """Every ingested message (bm25, embedding: the index holds them all)."""
        return self.log.stored()

    def close(self) -> None:
        """Everything lives in memory; nothing to release."""
