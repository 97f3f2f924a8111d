"""A tiny memory agent: keeps every message and recalls the ones sharing most words."""

from __future__ import annotations

import re
from pathlib import Path

from memplug import AgentConfig, AgentQuestion, Chunk, Option, Recall, Recalled


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class HelloAgent:
    options = (Option("min_overlap", int, 1, "words a message must share with the question"),)

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.top_k = config.top_k
        self.min_overlap = config.options["min_overlap"]
        self.memory: list[tuple[str, str]] = []

    def ingest(self, chunk: Chunk) -> None:
        self.memory.extend((m.id, m.text) for m in chunk.messages)

    def recall(self, question: AgentQuestion) -> Recall:
        asked = _words(question.text)
        scored = sorted(
            ((len(asked & _words(text)), -i, mid, text) for i, (mid, text) in enumerate(self.memory)), reverse=True
        )
        items = [Recalled(text, float(score), (mid,)) for score, _, mid, text in scored if score >= self.min_overlap]
        return Recall(tuple(items[: self.top_k]))

    def close(self) -> None:
        self.memory.clear()
