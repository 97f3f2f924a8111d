"""The optional LLM pass: rewrite wording only, never facts (seed 000, §3.3).

MemSim lets an LLM turn a structured hint into a natural sentence. Here the template
sentence already states the hint; the LLM may only rephrase it, and a rewrite that
loses any of the sentence's key strings (the value, the names) is discarded, so that
answers and targets, which come from the hints, stay true.
"""

from __future__ import annotations

from typing import Any, Sequence


class Rewriter:
    """Calls ``llm.complete([...]).text`` (memplug.llm.LLM, or anything with that shape)."""

    def __init__(self, llm: Any, prompt: str) -> None:
        self.llm, self.prompt = llm, prompt
        self.kept = self.discarded = 0

    def __call__(self, text: str, keep: Sequence[str]) -> str:
        reply = self.llm.complete([{"role": "user", "content": self.prompt.format(text=text)}]).text
        reply = (reply or "").strip().strip('"').strip()
        folded = reply.casefold()  # "My cousin" may start the sentence or not: case is wording
        if reply and all(k.casefold() in folded for k in keep if k):
            self.kept += 1
            return reply
        self.discarded += 1
        return text
