"""`oracle`: only the messages that hold the answer (MemSim's OracleMem), the ceiling.

Targets come through the documented reference channel, never the Question:
see docs/agents/oracle.md and :mod:`memplug.adapters.retrieval.reference`.
"""

from __future__ import annotations

from memplug.adapters.retrieval.reference import ReferenceAgent


class OracleAgent(ReferenceAgent):
    """Only the messages that hold the answer, from the reference channel (MemSim OracleMem)."""

    keep_targets = True
    name = "oracle"
