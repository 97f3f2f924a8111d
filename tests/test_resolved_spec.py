"""A spec is resolved once (issue 17.3): the driver's Evaluation turns the RunSpec into a
ResolvedSpec (option values, the agent's preflight, reader, depth, chunk size); the runner
uses it, run.json records it as is, and an executor's workers are handed it instead of
resolving the spec again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from memplug import AgentConfig, AgentQuestion, Chunk, Option, Recall, hookimpl
from memplug.preflight import AgentPlan
from memplug.runner import Evaluation, ResolvedSpec, RunSpec


class _Recorder:
    """Keeps what each of its instances was configured with; its preflight picks a mode."""

    options = (
        Option("mode", str, "auto", "what the preflight decides when left at auto"),
        Option("depth", int, 2, "a number, given as text on the command line"),
    )
    default_chunk_size = 48
    blocking = False
    configs: list[AgentConfig] = []
    preflights = 0

    @classmethod
    def preflight(cls, values: Any, given: Any, llm: Any) -> AgentPlan:
        cls.preflights += 1  # a second resolution would pick another mode
        if values["mode"] != "auto":
            return AgentPlan(values)
        return AgentPlan({**values, "mode": f"offline-{cls.preflights}"}, "recorder: no --llm, so offline")

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.configs.append(config)

    def ingest(self, chunk: Chunk) -> None:
        pass

    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(())

    def close(self) -> None:
        pass


@pytest.fixture
def recorder(testkit, plugins):
    class Plugin:
        @hookimpl
        def register_agents(self, register):
            register("recorder", _Recorder)

    plugin = Plugin()
    plugins.register(plugin, name="resolved-spec-test")
    _Recorder.configs, _Recorder.preflights = [], 0
    yield
    plugins.unregister(plugin)


SPEC = RunSpec(
    agent="recorder",
    dataset="counting",
    agent_options={"depth": "7"},
    dataset_options={"samples": "3", "questions": "2"},
)


def test_run_json_records_the_resolved_spec_the_runner_used(recorder: None, tmp_path: Path) -> None:
    evaluation = Evaluation(SPEC)
    path = evaluation.run(output=tmp_path)
    recorded = json.loads((path / "run.json").read_text())["resolved"]
    resolved = ResolvedSpec.from_json(recorded)
    assert resolved == evaluation.resolved
    # what it resolved to: typed options, the preflight's choice and note, the agent's chunk size
    assert resolved.agent_options == {"mode": "offline-1", "depth": 7}
    assert resolved.agent_note == "recorder: no --llm, so offline"
    assert resolved.dataset_options == {"samples": 3, "questions": 2, "messages": 4}
    assert (resolved.reader, resolved.chunk_size, resolved.memory_unit) == ("extractive", 48, "48 tokens")
    # and what every agent of the run was given is exactly that
    assert len(_Recorder.configs) == 3
    for config in _Recorder.configs:
        assert dict(config.options) == resolved.agent_options
        assert (config.top_k, config.chunk_size) == (resolved.top_k, resolved.chunk_size)
    assert _Recorder.preflights == 1


def test_a_worker_runs_the_drivers_resolution_and_resolves_nothing_again(recorder: None, tmp_path: Path) -> None:
    from memplug.executors import _SampleWorker

    driver = Evaluation(SPEC)
    sample = driver.samples()[0]
    worker = _SampleWorker("worker-0")  # the Ray actor's class, driven in process
    result = asyncio.run(worker.run_sample(attrs.asdict(SPEC), driver.resolved, str(tmp_path / "work"), sample))
    assert len(result.records) == 2
    assert _Recorder.preflights == 1  # the driver's only
    (config,) = _Recorder.configs
    assert dict(config.options) == driver.resolved.agent_options == {"mode": "offline-1", "depth": 7}
    assert config.chunk_size == driver.resolved.chunk_size
    ((worker_runner, _),) = worker.runners.values()
    assert worker_runner.plan.resolved == driver.resolved
