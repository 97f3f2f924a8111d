"""Building blocks the native agents share: tokenizer, BM25 and dense indexes,
embedders, the blended retriever and PerLTQA re-ranking."""

from memplug.adapters.retrieval.bm25_index import BM25Index, top_k
from memplug.adapters.retrieval.dense_index import DenseIndex
from memplug.adapters.retrieval.embedders import Embedder, get_embedder
from memplug.adapters.retrieval.message_log import MessageLog
from memplug.adapters.retrieval.rerank import PerLTQAReranker
from memplug.adapters.retrieval.retriever import Retriever
from memplug.adapters.retrieval.tokenizer import tokenize

__all__ = [
    "BM25Index",
    "DenseIndex",
    "Embedder",
    "MessageLog",
    "PerLTQAReranker",
    "Retriever",
    "get_embedder",
    "tokenize",
    "top_k",
]
