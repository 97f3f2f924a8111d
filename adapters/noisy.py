"""`noisy`: only the messages that do not hold the answer (MemSim's NoisyMem).

It shows what the reader makes of related but useless history. Targets come through
the reference channel (docs/agents/oracle.md), never the Question.
"""

from __future__ import annotations

from memplug.adapters.retrieval.reference import ReferenceAgent


class NoisyAgent(ReferenceAgent):
    """Only the messages that do not hold the answer, from the reference channel (MemSim NoisyMem)."""

    keep_targets = False
    name = "noisy"
