"""Shared body of the reference baselines `oracle` and `noisy` (MemSim's OracleMem, NoisyMem).

They must know which messages hold each answer. They never read a Question: the
runner hands agents registered with ``reference=True`` a
:class:`memplug.protocols.ReferenceChannel` in ``AgentConfig.reference``, and
``reference.targets(question.id)`` gives the target message ids.
"""

from __future__ import annotations

from pathlib import Path

from memplug.adapters.full import MAX_TOKENS, TokenWindow
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, Chunk, Recall, Recalled
from memplug.options import resolve
from memplug.protocols import AgentConfig, ReferenceChannel


class ReferenceAgent:
    """Keeps every message; at recall, keeps those whose target status is ``keep_targets``."""

    options = (MAX_TOKENS,)
    keep_targets: bool = True
    name = "reference"

    blocking = False  # in memory and quick: the runner calls it inline

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        if config.reference is None:
            raise MemplugError(
                f"agent {self.name!r} needs the reference channel (AgentConfig.reference); "
                "it is given only to agents registered with reference=True"
            )
        self.reference: ReferenceChannel = config.reference
        self.max_tokens = resolve(self.options, config.options, self.name)["max_tokens"]
        self.messages: list[Recalled] = []

    def ingest(self, chunk: Chunk) -> None:
        self.messages.extend(Recalled(m.text, None, (m.id,)) for m in chunk.messages)

    def recall(self, question: AgentQuestion) -> Recall:
        targets = set(self.reference.targets(question.id))
        window = TokenWindow(self.max_tokens)
        for item in self.messages:
            if (item.message_ids[0] in targets) == self.keep_targets:
                window.add(item)
        return Recall(window.items())

    def close(self) -> None:
        """Nothing to release."""
