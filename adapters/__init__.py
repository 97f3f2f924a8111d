"""Memory agents that ship with memplug: native baselines and adapters for external systems."""
