"""`embedding`: dense top-k by cosine similarity (MemSim's RetrMem, seed 000 section 5.1).

The embedder is the run's ``--embedder`` (wordllama offline by default). Options:
``feedback`` (pseudo-relevance feedback weight), ``lexical`` (BM25 blended in), ``rerank``.
"""

from __future__ import annotations

from typing import Any

from memplug.adapters.retrieval.agent import ANN_OPTION, RERANK_OPTION, RetrievalAgent
from memplug.options import Option


class EmbeddingAgent(RetrievalAgent):
    """Cosine top-k over message embeddings (MemSim RetrMem); BM25 can be blended in."""

    options = (
        Option("feedback", float, 0.0, "pseudo-relevance feedback: weight of the best hit used as a second query"),
        Option("lexical", float, 0.0, "weight of BM25 blended with the cosine (0: dense only)"),
        RERANK_OPTION,
        ANN_OPTION,
    )

    def weights(self, opts: dict[str, Any]) -> tuple[float, float, float]:
        return opts["lexical"], 1.0, opts["feedback"]
