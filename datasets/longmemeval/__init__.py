"""LongMemEval: loader of the release, its answer protocol, the abstention rule and the official judge."""
