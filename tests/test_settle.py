"""settle(): ingestion that goes on in the background is awaited before the first question (issue 30)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memplug import (
    AgentConfig,
    AgentQuestion,
    Chunk,
    Recall,
    Recalled,
    hookimpl,
    protocols,
)
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec


class _Background:
    """Ingests into a queue that a background thread writes to memory, slowly, as an
    asynchronous system does; asked before it is done, it finds nothing."""

    settle_s = 0.2

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.pending: list[Recalled] = []
        self.memory: list[Recalled] = []
        self.done = threading.Event()
        self.worker: threading.Thread | None = None

    def ingest(self, chunk: Chunk) -> None:
        self.pending += [Recalled(m.text, 1.0, (m.id,)) for m in chunk.messages]
        if self.worker is None:
            self.worker = threading.Thread(target=self._write, daemon=True)
            self.worker.start()

    def _write(self) -> None:
        time.sleep(self.settle_s)
        self.memory, self.pending = self.pending, []
        self.done.set()

    def recall(self, question: AgentQuestion) -> Recall:
        key = question.text.removeprefix("What is item ").rstrip("?")
        found = [r for r in self.memory if r.text.startswith(f"Item {key} ")]
        return Recall(tuple(found[:1]), answer=found[0].text.split(" is ")[1].rstrip(".") if found else "unknown")

    def close(self) -> None:
        pass


class _Settles(_Background):
    def settle(self) -> None:
        self.done.wait()


class _SettlesAsync(_Background):
    async def asettle(self) -> None:
        while not self.done.is_set():
            await asyncio.sleep(0.01)


class _SettlesForever(_Background):
    async def asettle(self) -> None:
        await asyncio.sleep(3600)


@pytest.fixture
def agents(testkit, plugins):
    class Plugin:
        @hookimpl
        def register_agents(self, register):
            register("background", _Background)
            register("settles", _Settles)
            register("settles-async", _SettlesAsync)
            register("settles-forever", _SettlesForever)

    plugin = Plugin()
    plugins.register(plugin, name="settle-test")
    yield
    plugins.unregister(plugin)


def _run(tmp_path: Path, agent: str, **kw: Any) -> RunDir:
    spec = RunSpec(agent=agent, dataset="counting", dataset_options={"samples": "2"}, **kw)
    return RunDir(Evaluation(spec).run(output=tmp_path / agent))


def test_without_settle_questions_meet_a_memory_still_being_written(agents, tmp_path):
    records = _run(tmp_path, "background").records()
    assert all(r.scores["em"] == 0.0 and r.timings.settle_s is None for r in records)
    assert "settle_s" not in records[0].to_json()["timings"]


@pytest.mark.parametrize("agent", ["settles", "settles-async"])
def test_settle_is_awaited_before_the_first_question_and_timed(agents, tmp_path, agent):
    run = _run(tmp_path, agent)
    records = run.records()
    assert all(r.scores["em"] == 1.0 and r.error is None for r in records)
    assert all(r.timings.settle_s is not None and 0.15 < r.timings.settle_s < 5 for r in records)
    assert all(
        r.timings.ingest_s is not None and r.timings.ingest_s < 0.15 for r in records
    )  # apart from the ingestion's own time


def test_a_settle_past_its_timeout_fails_the_sample_not_the_run(agents, tmp_path):
    run = _run(tmp_path, "settles-forever", settle_timeout=1.0)
    records = run.records()
    assert all(
        r.error == "ingest failed: the agent's settle did not return within 1 s (--settle-timeout): given up"
        for r in records
    )
    outcome = run.summary().outcome
    assert outcome is not None and outcome.status == "failed"
    assert run.info().spec["settle_timeout"] == 1.0


def test_settle_is_a_declared_capability():
    assert protocols.settles(_Settles.__new__(_Settles)) and protocols.settles(_SettlesAsync.__new__(_SettlesAsync))
    assert not protocols.settles(_Background.__new__(_Background))

    class SyncAsettle(_Background):
        def asettle(self) -> None:
            pass

    assert protocols.capability_problems(SyncAsettle) == [
        "asettle is not an async def: the runner awaits it (SettlesAsync)"
    ]


def test_cognee_settles_its_deferred_graph():
    from memplug.adapters.cognee import CogneeAgent

    assert protocols.async_variant(CogneeAgent.__new__(CogneeAgent), "settle") is not None
