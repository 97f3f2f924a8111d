"""What memplug's own agents claim of :mod:`memplug.protocols`, checked by mypy.

Nothing here runs: each function only type-checks (``python .ci/typecheck``) that an
agent class (the factory) and its instances keep the protocols they claim, so that an
agent whose ``aingest`` stops being an ``async def``, whose ``blocking`` stops being a
bool or whose ``stored()`` returns something else fails the typecheck, not a run. At run
time the same declarations are checked by the runner's preflight and by
``memplug.testing.check_agent`` (:func:`memplug.protocols.capability_problems`).
A new agent with an optional capability gets its line here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memplug.adapters.bm25 import BM25Agent
    from memplug.adapters.cognee import CogneeAgent
    from memplug.adapters.decay import DecayAgent
    from memplug.adapters.embedding import EmbeddingAgent
    from memplug.adapters.emg import EMGAgent
    from memplug.adapters.full import FullAgent
    from memplug.adapters.graphiti import GraphitiAgent
    from memplug.adapters.hybrid import HybridAgent
    from memplug.adapters.letta import LettaAgent
    from memplug.adapters.llamaindex import LlamaIndexAgent
    from memplug.adapters.mcp import McpAgent
    from memplug.adapters.mem0 import Mem0Agent
    from memplug.adapters.noisy import NoisyAgent
    from memplug.adapters.none import NoneAgent
    from memplug.adapters.oracle import OracleAgent
    from memplug.adapters.recent import RecentAgent
    from memplug.protocols import (
        ClosesAsync,
        DeclaresBlocking,
        HasDefaultChunkSize,
        HasOptions,
        IngestsAsync,
        ListsStored,
        ListsStoredAsync,
        MemoryAgent,
        Preflights,
        RecallsAsync,
        SettlesAsync,
    )

    # In memory and quick (blocking = False), listing what they hold.
    def _in_memory(
        bm25: BM25Agent,
        embedding: EmbeddingAgent,
        decay: DecayAgent,
        emg: EMGAgent,
        full: FullAgent,
        hybrid: HybridAgent,
        recent: RecentAgent,
    ) -> tuple[tuple[MemoryAgent, DeclaresBlocking, ListsStored], ...]:
        return (
            (bm25, bm25, bm25),
            (embedding, embedding, embedding),
            (decay, decay, decay),
            (emg, emg, emg),
            (full, full, full),
            (hybrid, hybrid, hybrid),
            (recent, recent, recent),
        )

    def _in_memory_factories(
        bm25: type[BM25Agent],
        embedding: type[EmbeddingAgent],
        decay: type[DecayAgent],
        emg: type[EMGAgent],
        full: type[FullAgent],
        hybrid: type[HybridAgent],
        recent: type[RecentAgent],
        none: type[NoneAgent],
        noisy: type[NoisyAgent],
        oracle: type[OracleAgent],
    ) -> tuple[tuple[HasOptions, DeclaresBlocking], ...]:
        return (
            (bm25, bm25),
            (embedding, embedding),
            (decay, decay),
            (emg, emg),
            (full, full),
            (hybrid, hybrid),
            (recent, recent),
            (none, none),
            (noisy, noisy),
            (oracle, oracle),
        )

    def _baselines(none: NoneAgent, noisy: NoisyAgent, oracle: OracleAgent) -> tuple[MemoryAgent, ...]:
        return (none, noisy, oracle)

    # Systems behind an LLM: they say what they need (preflight) and chunk as they work best.
    def _emg_preflight(emg: type[EMGAgent]) -> Preflights:
        return emg

    def _mem0(
        factory: type[Mem0Agent], agent: Mem0Agent
    ) -> tuple[HasOptions, HasDefaultChunkSize, Preflights, MemoryAgent, ListsStored]:
        return (factory, factory, factory, agent, agent)

    def _letta(
        factory: type[LettaAgent], agent: LettaAgent
    ) -> tuple[HasOptions, HasDefaultChunkSize, MemoryAgent, ListsStored]:
        return (factory, factory, agent, agent)

    def _llamaindex(
        factory: type[LlamaIndexAgent], agent: LlamaIndexAgent
    ) -> tuple[HasOptions, HasDefaultChunkSize, Preflights, MemoryAgent, ListsStored]:
        return (factory, factory, factory, agent, agent)

    # Async clients: awaited on the runner's event loop; cognee's graph (cognify=end) settles after ingestion.
    def _cognee(
        factory: type[CogneeAgent], agent: CogneeAgent
    ) -> tuple[HasOptions, HasDefaultChunkSize, Preflights, IngestsAsync, RecallsAsync, ListsStoredAsync, SettlesAsync]:
        return (factory, factory, factory, agent, agent, agent, agent)

    def _graphiti(
        factory: type[GraphitiAgent], agent: GraphitiAgent
    ) -> tuple[HasOptions, Preflights, IngestsAsync, RecallsAsync, ListsStoredAsync]:
        return (factory, factory, agent, agent, agent)

    def _mcp(
        factory: type[McpAgent], agent: McpAgent
    ) -> tuple[HasOptions, Preflights, IngestsAsync, RecallsAsync, ClosesAsync]:
        return (factory, factory, agent, agent, agent)
