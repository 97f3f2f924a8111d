"""`bm25`: BM25 top-k over the user's messages (MemSim's retrieval baseline, lexical).

Options: ``feedback`` (pseudo-relevance feedback weight, 0 turns it off), ``dense``
(weight of the embedder's cosine blended in, 0 = pure BM25), ``rerank``.
"""

from __future__ import annotations

from typing import Any

from memplug.adapters.retrieval.agent import RERANK_OPTION, RetrievalAgent
from memplug.options import Option


class BM25Agent(RetrievalAgent):
    """BM25 top-k over the messages (MemSim RetrMem, lexical); the cosine can be blended in."""

    options = (
        Option("feedback", float, 0.5, "pseudo-relevance feedback: weight of the best hit used as a second query"),
        Option("dense", float, 0.0, "weight of the dense cosine blended with BM25 (0: BM25 only)"),
        RERANK_OPTION,
    )

    def weights(self, opts: dict[str, Any]) -> tuple[float, float, float]:
        return 1.0, opts["dense"], opts["feedback"]
