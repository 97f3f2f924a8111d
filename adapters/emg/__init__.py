"""The Editable Memory Graph agent (seed 004): tree partitions, entity graph, edits, traversal."""

from memplug.adapters.emg.agent import EMGAgent

__all__ = ["EMGAgent"]
