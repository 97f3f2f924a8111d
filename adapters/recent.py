"""`recent`: the last k messages (MemSim's ReceMem, short-term memory).

k is the run's ``--top-k`` unless ``-o k=N`` sets it. Items are returned oldest first.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from memplug.models import AgentQuestion, Chunk, Recall, Recalled, StoredItem
from memplug.options import Option, resolve
from memplug.protocols import AgentConfig


class RecentAgent:
    """The last k messages, oldest first (MemSim ReceMem)."""

    options = (Option("k", int, 0, "how many recent messages to keep (0: the run's --top-k)"),)

    blocking = False  # in memory and quick: the runner calls it inline

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        k = resolve(self.options, config.options, "recent")["k"] or config.top_k
        self._window: deque[Recalled] = deque(maxlen=max(k, 0))

    def ingest(self, chunk: Chunk) -> None:
        self._window.extend(Recalled(m.text, None, (m.id,)) for m in chunk.messages)

    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(tuple(self._window))

    def stored(self) -> list[StoredItem]:
        """The last k messages, all this agent keeps."""
        return [StoredItem(i.text, message_ids=i.message_ids) for i in self._window]

    def close(self) -> None:
        """Nothing to release."""
