"""The messages an agent has ingested, one entry per message, in dataset order.

recall@K is computed over the message ids of the recalled items, and MemDaily counts
one user message as one target, so the native agents store and return messages, not
chunks. A message that the chunker split keeps its id on every part.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Any

import attrs

from memplug.models import Chunk, Recalled, StoredItem


@attrs.frozen
class Entry:
    """One ingested message: its text, id, dataset time and metadata."""

    text: str
    message_id: str
    time: str | None = None
    meta: Mapping[str, Any] = attrs.field(factory=dict)


class MessageLog:
    """Ingested messages numbered 0, 1, 2 …, turned back into :class:`Recalled` items by number."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, chunk: Chunk) -> list[Entry]:
        """Append the chunk's messages; returns the new entries."""
        new = [Entry(m.text, m.id, m.time, m.meta) for m in chunk.messages]
        self.entries.extend(new)
        return new

    def item(self, index: int, score: float | None = None) -> Recalled:
        entry = self.entries[index]
        return Recalled(entry.text, score, (entry.message_id,))

    def items(self, ranked: Iterable[tuple[int, float]]) -> tuple[Recalled, ...]:
        return tuple(self.item(i, s) for i, s in ranked)

    def stored(self) -> list[StoredItem]:
        """Every entry, in ingestion order (what an agent built on the log holds)."""
        return [StoredItem(e.text, str(i), (e.message_id,)) for i, e in enumerate(self.entries)]
