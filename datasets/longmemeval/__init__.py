"""LongMemEval: loader of the release, its answer protocol and the abstention rule."""
