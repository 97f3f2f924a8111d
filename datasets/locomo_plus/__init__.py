"""LoCoMo-Plus (xjtuleeyf/Locomo-Plus): LoCoMo with a sixth, cognitive category judged by an LLM."""
