"""``--context-tokens N``: one budget of recalled context for every system.

A system that returns long memories (whole sessions, chunks of 4,096 tokens) hands the
reader more text than one that returns short facts, and can buy accuracy with length:
at the same ``--top-k``, the comparison is not of memories but of context sizes. With a
budget, the reader of every system gets at most N tokens of what was recalled, counted
with one tokenizer for all (tiktoken's cl100k_base, :mod:`memplug.tokens`, the one the
chunker uses), whatever model reads them.

Items are kept whole and in the agent's rank order: the first item that does not fit
ends the context, even where a later, shorter one would fit, because skipping ahead
would reward a system for ranking short items low. An item is never cut in two (a cut
fact can read as another fact). What the cut kept is on each record (``context``); the
record's ``recalled`` still holds every item, so recall@K and ``eval --from`` see the
agent's whole answer, and ``eval --from RUN --context-tokens N`` tries another budget
without ingesting again.

An agent that writes its own answer (``Recall.answer``; ``agent_answered`` on the record)
is outside the budget: memplug never sees the context it read. docs/fairness.md says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memplug.models import Recalled
from memplug.tokens import count_tokens


def cut(items: Sequence[Recalled], budget: int | None) -> tuple[tuple[Recalled, ...], dict[str, Any] | None]:
    """The items the reader gets under ``budget`` tokens, and the record's ``context``:
    ``{"budget", "tokens" (kept), "kept", "recalled", "recalled_tokens"}``. Without a
    budget, every item and None (nothing is recorded)."""
    if budget is None:
        return tuple(items), None
    sizes = [count_tokens(item.text) for item in items]
    used = kept = 0
    for size in sizes:
        if used + size > budget:
            break
        used += size
        kept += 1
    return tuple(items[:kept]), {
        "budget": budget,
        "tokens": used,
        "kept": kept,
        "recalled": len(items),
        "recalled_tokens": sum(sizes),
    }
