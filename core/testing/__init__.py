"""memplug.testing: what a plugin author needs to test a plugin, and what memplug's own tests use.

In the spirit of pytest's ``pytester`` and llm's echo model: small, real pieces rather
than mocks.

- :func:`check_agent` / :func:`assert_agent_conforms`: drive an agent factory through the
  contract the runner relies on (declared options, chunks in, :class:`~memplug.Recall`
  out, message ids it was given, at most ``top_k`` items, one memory per sample, ``close``)
  and list every broken promise.
- :func:`check_dataset` / :func:`assert_dataset_conforms`: the same for a dataset builder
  (unique ids, targets that name messages of their sample, answers or choices to score).
- :class:`TinyDataset` and :func:`tiny_samples`: three small conversations with one
  question per fact, known answers and targets, for tests that need data but not a benchmark;
  :func:`dataset_samples`: a registered benchmark's samples, for checking on real data.
- :func:`run_cli`: ``memplug ...`` in process, returning the exit code, the output and the
  run directory it wrote; :func:`comparable_records`: a run's records as two runs of one
  spec must agree on them.

The loopback OpenAI-compatible server the project's tests use is ``tests/openai_stub.py``;
see docs/writing-a-plugin.md for how a plugin's tests start one.
"""

from memplug.testing.cli import CliResult, comparable_records, run_cli
from memplug.testing.conformance import (
    ConformanceError,
    assert_agent_conforms,
    assert_dataset_conforms,
    check_agent,
    check_dataset,
    dataset_samples,
)
from memplug.testing.tiny import TinyDataset, tiny_samples

__all__ = [
    "CliResult",
    "ConformanceError",
    "comparable_records",
    "TinyDataset",
    "assert_agent_conforms",
    "assert_dataset_conforms",
    "check_agent",
    "check_dataset",
    "dataset_samples",
    "run_cli",
    "tiny_samples",
]
