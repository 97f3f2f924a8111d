"""LoCoMo: loader of the release, its official scoring and Mem0's judge (``locomo-j``)."""
