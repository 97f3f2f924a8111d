"""`full`: every message in the prompt, up to a token budget (MemSim's FullMem).

When the history exceeds ``max_tokens`` (cl100k tokens), the oldest messages are
dropped first. Items are returned oldest first, as the history reads.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from memplug.models import AgentQuestion, Chunk, Recall, Recalled, StoredItem
from memplug.options import Option, resolve
from memplug.protocols import AgentConfig
from memplug.tokens import count_tokens

MAX_TOKENS = Option("max_tokens", int, 120_000, "token budget for the whole history; oldest messages dropped first")


class TokenWindow:
    """The newest messages whose tokens fit a budget (FIFO eviction)."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self._items: deque[tuple[Recalled, int]] = deque()
        self._used = 0

    def add(self, item: Recalled) -> None:
        cost = count_tokens(item.text) + 1  # the newline that joins it to the prompt
        self._items.append((item, cost))
        self._used += cost
        while self._used > self.max_tokens and self._items:
            _, dropped = self._items.popleft()
            self._used -= dropped

    def items(self) -> tuple[Recalled, ...]:
        return tuple(item for item, _ in self._items)


class FullAgent:
    """Every message, oldest first, within a token budget (MemSim FullMem)."""

    options = (MAX_TOKENS,)

    blocking = False  # in memory and quick: the runner calls it inline

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        opts = resolve(self.options, config.options, "full")
        self.window = TokenWindow(opts["max_tokens"])

    def ingest(self, chunk: Chunk) -> None:
        for m in chunk.messages:
            self.window.add(Recalled(m.text, None, (m.id,)))

    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(self.window.items())

    def stored(self) -> list[StoredItem]:
        """The messages in the window, oldest first (those the budget dropped are gone)."""
        return [StoredItem(i.text, message_ids=i.message_ids) for i in self.window.items()]

    def close(self) -> None:
        """Nothing to release."""
