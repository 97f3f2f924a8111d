"""`none`: no memory at all (MemSim's NonMem), the floor every memory should beat."""

from __future__ import annotations

from pathlib import Path

from memplug.models import AgentQuestion, Chunk, Recall
from memplug.protocols import AgentConfig


class NoneAgent:
    """No memory: every recall is empty (MemSim NonMem)."""

    options = ()

    blocking = False  # in memory and quick: the runner calls it inline

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        """Keeps nothing."""

    def ingest(self, chunk: Chunk) -> None:
        """Forgets the chunk."""

    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(())

    def close(self) -> None:
        """Nothing to release."""
