"""The engine's parts, each with one job (issue 25.1): a Plan resolves a spec and runs
nothing; a SampleRunner returns a sample's results and writes no run file; a Driver owns
the run directory; an executor hands results to the driver through its typed interface
(RunResults), so an executor of a third party's needs no private call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from memplug.driver import Driver
from memplug.executors import Executor
from memplug.models import Sample
from memplug.plan import Plan
from memplug.plugins import Plugins
from memplug.record import QuestionRecord
from memplug.results import RunDir
from memplug.samplerun import AgentThreads, RunResults, SampleResult, SampleRunner, deliver
from memplug.specs import RunSpec

SPEC = RunSpec(agent="lookup", dataset="counting", dataset_options={"samples": "3", "questions": "2"})


class Kept:
    """A sink that keeps what it is handed, in order."""

    def __init__(self) -> None:
        self.handed: list[Any] = []

    def write(self, record: QuestionRecord) -> None:
        self.handed.append(record)

    def stored(self, line: dict[str, Any]) -> None:
        self.handed.append(line)


def _plain(records: list[QuestionRecord]) -> list[dict[str, Any]]:
    """Records as lines in dataset order, timings left out (they differ from run to run)."""
    out = []
    for record in sorted(records, key=lambda r: r.key):
        line = json.loads(record.to_line())
        line.pop("timings")
        out.append(line)
    return out


def test_the_sample_runner_returns_the_records_it_hands_over_and_writes_no_run_file(
    testkit: ModuleType, tmp_path: Path
) -> None:
    plan = Plan(SPEC)
    sample = plan.samples()[0]
    sink = Kept()
    pool = AgentThreads(1)
    try:
        result = asyncio.run(SampleRunner(plan).run_sample(tmp_path / "work", sample, pool, sink))
    finally:
        pool.shutdown()
    assert [r.question_id for r in result.records] == [q.id for q in sample.questions]
    assert all(r.error is None and r.scores["em"] == 1.0 for r in result.records)
    assert sink.handed == result.records  # each record handed over as made, the same objects returned
    # the agent's own folder only: samples.jsonl, stored.jsonl and run.json are the driver's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


class Elsewhere(Executor):
    """An executor as a third party would write one: each sample run to its end (as if in
    another process), its result handed to the driver whole with ``deliver``."""

    name = "elsewhere"

    def __init__(self) -> None:
        self.delivered: list[str] = []

    def run_samples(self, runner: SampleRunner, samples: list[Sample], results: RunResults) -> None:
        pool = AgentThreads(1)
        try:
            for sample in samples:
                result: SampleResult = asyncio.run(runner.run_sample(results.work, sample, pool, Kept()))
                deliver(results, sample, result)
                self.delivered.append(sample.id)
        finally:
            pool.shutdown()


def test_an_executor_hands_whole_results_to_the_driver_and_the_run_is_a_local_ones(
    testkit: ModuleType, tmp_path: Path
) -> None:
    local = RunDir(Driver(Plan(SPEC)).run(output=tmp_path / "local"))
    executor = Elsewhere()
    other = RunDir(Driver(Plan(SPEC)).run(output=tmp_path / "other", executor=executor))
    assert executor.delivered == ["s0", "s1", "s2"]
    assert _plain(other.records()) == _plain(local.records())
    info = other.info()
    assert info.status == "finished" and info.resolved["executor"] == {"name": "elsewhere"}
    assert local.info().resolved["executor"] == {"name": "local"}
    assert other.summary().metrics.overall == local.summary().metrics.overall


def test_the_driver_calls_the_sample_end_hook_once_per_sample_whichever_executor(
    testkit: ModuleType, tmp_path: Path, plugins: Plugins
) -> None:
    from memplug import hookimpl

    ended: list[tuple[str, int]] = []

    class Observer:
        @hookimpl
        def memplug_sample_end(self, run: Any, sample: Sample, records: list[QuestionRecord]) -> None:
            ended.append((sample.id, len(records)))

    observer = Observer()
    plugins.register(observer, name="observer")
    try:
        Driver(Plan(SPEC)).run(output=tmp_path / "local")
        local = sorted(ended)
        ended.clear()
        Driver(Plan(SPEC)).run(output=tmp_path / "other", executor=Elsewhere())
    finally:
        plugins.unregister(observer)
    assert local == sorted(ended) == [("s0", 2), ("s1", 2), ("s2", 2)]
