"""Registers memplug's own agents through the `memplug` entry point, like any plugin.

Targets are lazy: nothing here imports an agent module, and the external systems'
libraries are imported only when their agent is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memplug.hookspecs import Register, hookimpl

if TYPE_CHECKING:
    from memplug.llm import LLM


@hookimpl
def register_agents(register: Register) -> None:
    # MemSim baselines (seed 000, section 5.1)
    register("full", "memplug.adapters.full:FullAgent")
    register("recent", "memplug.adapters.recent:RecentAgent")
    register("embedding", "memplug.adapters.embedding:EmbeddingAgent")
    register("bm25", "memplug.adapters.bm25:BM25Agent")
    register("none", "memplug.adapters.none:NoneAgent")
    register("noisy", "memplug.adapters.noisy:NoisyAgent", reference=True)
    register("oracle", "memplug.adapters.oracle:OracleAgent", reference=True)
    # native memories from the seeds
    register("decay", "memplug.adapters.decay:DecayAgent")
    register(
        "hybrid",
        "memplug.adapters.hybrid:HybridAgent",
        description="Offline conversational retrieval: stemmed BM25 with turn context, wordllama fusion, speaker and date priors, session-aware top K",
    )
    register(
        "emg",
        "memplug.adapters.emg:EMGAgent",
        description="Editable memory graph (seed 004); its offline rules extract facts from MQuAKE's "
        "relation templates (FactConsolidation's); other text falls back to BM25 retrieval",
    )
    # external systems, optional extras
    register(
        "mem0",
        "memplug.adapters.mem0:Mem0Agent",
        requires=("mem0",),
        extra="mem0",
        description="Mem0 (mem0ai) with Qdrant on disk in the sample's work directory",
    )
    register(
        "cognee",
        "memplug.adapters.cognee:CogneeAgent",
        requires=("cognee",),
        extra="cognee",
        description="Cognee knowledge graph memory, stores in the sample's work directory",
    )
    register(
        "llamaindex",
        "memplug.adapters.llamaindex:LlamaIndexAgent",
        requires=("llama_index.core",),
        extra="llamaindex",
        description="LlamaIndex VectorStoreIndex RAG over the chunks",
    )
    register(
        "letta",
        "memplug.adapters.letta:LettaAgent",
        requires=("letta_client",),
        extra="letta",
        description="Letta (MemGPT) agent on a Letta server (--api-base or LETTA_BASE_URL)",
    )
    register(
        "mcp",
        "memplug.adapters.mcp:McpAgent",
        requires=("mcp",),
        extra="mcp",
        description="Any memory behind an MCP server (-o command=... for stdio, -o url=... for "
        "streamable HTTP); its write and search tools found by name or given",
    )
    register(
        "graphiti",
        "memplug.adapters.graphiti:GraphitiAgent",
        requires=("graphiti_core", "kuzu"),
        extra="graphiti",
        description="Graphiti (Zep) temporal knowledge graph on embedded Kùzu in the "
        "sample's work directory; needs --llm",
    )


@hookimpl
def memplug_run_end(run: object, summary: dict[str, Any]) -> None:
    """Stops the MCP servers the run's samples shared (only if the mcp agent was loaded)."""
    import sys

    mcp = sys.modules.get("memplug.adapters.mcp")
    if mcp is not None:
        mcp.close_shared()


@hookimpl
def memplug_check_embedder(name: str, llm: LLM | None) -> bool | None:
    """``st:<model>``: a sentence-transformers model, built now (a model missing locally fails in one line)."""
    kind, _, model = name.partition(":")
    if kind != "st" or not model:
        return None
    from memplug.adapters.retrieval.embedders import get_embedder

    get_embedder(name, llm)
    return True
