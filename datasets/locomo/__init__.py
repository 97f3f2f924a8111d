"""LoCoMo: loader of the release and its official scoring."""
