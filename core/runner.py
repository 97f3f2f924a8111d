"""An evaluation under one name: a spec's :class:`~memplug.plan.Plan` and its
:class:`~memplug.driver.Driver`, for the callers that resolve a spec and run it at once
(:func:`memplug.evaluate`, `memplug eval`, a sweep's cell, `memplug reproduce`, tests).

The engine is three modules, each with one job, below this one:

* :mod:`memplug.plan`: the spec resolved, once (plugins, options, protocol, reader,
  metrics, LLMs, preflight) and the samples loaded;
* :mod:`memplug.samplerun`: one sample run, its records returned (no file written);
* :mod:`memplug.driver`: the run directory, lock, resume, run.json and summary.json, the
  outcome and the hooks; an executor (:mod:`memplug.executors`) runs the samples with the
  sample runner and hands their results to the driver.

The names the engine's callers import from here are re-exported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from memplug.driver import Driver, Run
from memplug.executors import Executor
from memplug.plan import Plan
from memplug.plugins import Plugins
from memplug.results import safe_name
from memplug.samplerun import SampleResult, SampleRunner
from memplug.specs import ResolvedSpec, RunSpec

__all__ = ["Evaluation", "ResolvedSpec", "Run", "RunSpec", "SampleResult", "safe_name"]


class Evaluation(Plan):
    """A spec resolved (this :class:`~memplug.plan.Plan`), with the sample runner and the
    driver that run it: ``Evaluation(spec).run(output=...)``."""

    def __init__(
        self, spec: RunSpec, plugins: Plugins | None = None, check: bool = True, resolved: ResolvedSpec | None = None
    ) -> None:
        super().__init__(spec, plugins, check, resolved)
        self.runner = SampleRunner(self)
        self.driver = Driver(self, self.runner)

    def run(
        self,
        output: Path | None = None,
        resume: Path | None = None,
        progress: Callable[..., Any] | None = None,
        capture_logs: bool = False,
        verbose: bool = False,
        executor: Executor | None = None,
        name: str | None = None,
    ) -> Path:
        """Run (or resume) and return the run directory (:meth:`memplug.driver.Driver.run`)."""
        return self.driver.run(output, resume, progress, capture_logs, verbose, executor, name)

    def new_run_dir(self, output: Path, started: str | None = None, name: str | None = None) -> tuple[str, Path]:
        """A new run directory, run.json in it (:meth:`memplug.driver.Driver.new_run_dir`)."""
        return self.driver.new_run_dir(output, started, name)
