"""Optional plugin capabilities are declared protocols (memplug.protocols): the runner uses
what an agent declares (its async methods), refuses a malformed declaration before any
work (one line, exit 2), and memplug.testing.check_agent lists it."""

from __future__ import annotations

import inspect
import json
import re
import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from memplug import AgentConfig, AgentQuestion, Chunk, Option, Recall, Recalled, hookimpl, protocols
from memplug.errors import MemplugError
from memplug.runner import Evaluation, RunSpec
from memplug.testing import check_agent, run_cli

if TYPE_CHECKING:
    from memplug.plugins import Plugins


ROOT = Path(__file__).resolve().parents[1]


class _AsyncAgent:
    """Declares IngestsAsync, RecallsAsync and ClosesAsync; its sync methods must never run."""

    calls: list[tuple[str, str]] = []

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.memory: list[Recalled] = []

    def ingest(self, chunk: Chunk) -> None:
        raise AssertionError("sync ingest called: aingest is declared")

    def recall(self, question: AgentQuestion) -> Recall:
        raise AssertionError("sync recall called: arecall is declared")

    def close(self) -> None:
        raise AssertionError("sync close called: aclose is declared")

    async def aingest(self, chunk: Chunk) -> None:
        self.calls.append(("aingest", threading.current_thread().name))
        self.memory += [Recalled(m.text, 1.0, (m.id,)) for m in chunk.messages]

    async def arecall(self, question: AgentQuestion) -> Recall:
        self.calls.append(("arecall", threading.current_thread().name))
        key = question.text.removeprefix("What is item ").rstrip("?")
        found = [r for r in self.memory if r.text.startswith(f"Item {key} ")]
        return Recall(tuple(found[:1]), answer=found[0].text.split(" is ")[1].rstrip(".") if found else None)

    async def aclose(self) -> None:
        self.calls.append(("aclose", threading.current_thread().name))


class _Base:
    built = 0

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        type(self).built += 1

    def ingest(self, chunk: Chunk) -> None:
        pass

    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(())

    def close(self) -> None:
        pass


class _BlockingYes(_Base):
    blocking = "yes"


class _NegativeChunks(_Base):
    default_chunk_size = -3


class _SyncAingest(_Base):
    def aingest(self, chunk: Chunk) -> None:  # not an async def: the runner would await None
        pass


class _PreflightNotCallable(_Base):
    preflight = "needs an llm"


class _OptionsNotOptions(_Base):
    options = ("delay",)


MALFORMED = {
    "blocking-yes": (_BlockingYes, "blocking = 'yes' is not True or False"),
    "negative-chunks": (_NegativeChunks, "default_chunk_size = -3 is not a number of tokens"),
    "sync-aingest": (_SyncAingest, "aingest is not an async def"),
    "preflight-string": (_PreflightNotCallable, "preflight = 'needs an llm' is not callable"),
    "options-strings": (_OptionsNotOptions, "options = ('delay',) is not a tuple of memplug.Option"),
}


@pytest.fixture
def agents(testkit, plugins):
    class Plugin:
        @hookimpl
        def register_agents(self, register):
            register("async-agent", _AsyncAgent)
            for name, (cls, _) in MALFORMED.items():
                register(name, cls)

    plugin = Plugin()
    plugins.register(plugin, name="capabilities-test")
    _AsyncAgent.calls = []
    yield
    plugins.unregister(plugin)


def test_an_agent_declaring_async_methods_is_driven_through_them_on_the_event_loop(
    agents: None, tmp_path: Path
) -> None:
    assert isinstance(_AsyncAgent, protocols.IngestsAsync) and isinstance(_AsyncAgent, protocols.RecallsAsync)
    spec = RunSpec(agent="async-agent", dataset="counting", dataset_options={"samples": "2"}, concurrency=2)
    path = Evaluation(spec).run(output=tmp_path)
    records = [json.loads(line) for line in (path / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 6
    assert not any(r["error"] for r in records), [r["error"] for r in records]
    assert all(r["agent_answered"] and r["scores"]["em"] == 1.0 for r in records)
    kinds = [kind for kind, _ in _AsyncAgent.calls]
    assert kinds.count("arecall") == 6 and kinds.count("aclose") == 2 and kinds.count("aingest") >= 2
    # awaited on the runner's event loop, not handed to its worker threads
    assert not any(thread.startswith("memplug-agent") for _, thread in _AsyncAgent.calls)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_capability_is_one_line_and_exit_2_before_any_work(agents: None, tmp_path: Path, name: str) -> None:
    cls, expected = MALFORMED[name]
    cls.built = 0
    result = run_cli(["eval", "--agent", name, "--dataset", "counting", "--quiet", "--output", "runs"], cwd=tmp_path)
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"agent {name!r}: {expected}" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert cls.built == 0 and result.run_dir is None and not (tmp_path / "runs").exists()


def test_a_malformed_reader_or_metric_declaration_is_refused_at_set_up(
    testkit: ModuleType, plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memplug import readers
    from memplug.metrics import RecallAtK

    monkeypatch.setattr(readers.ExtractiveReader, "cannot", "counting")  # a string, not a set of skills
    with pytest.raises(MemplugError, match=r"reader 'extractive': cannot = 'counting' is not a set"):
        Evaluation(RunSpec(agent="lookup", dataset="counting"))
    monkeypatch.undo()
    monkeypatch.setattr(RecallAtK, "reads_answer", "no")
    with pytest.raises(MemplugError, match=r"metric 'recall@K': reads_answer = 'no' is not True or False"):
        Evaluation(RunSpec(agent="lookup", dataset="counting"))


def test_check_agent_lists_every_malformed_capability() -> None:
    class Everything(_BlockingYes, _NegativeChunks, _SyncAingest):
        pass

    problems = "\n".join(check_agent(Everything, expect_recall=False))
    for _, expected in (MALFORMED["blocking-yes"], MALFORMED["negative-chunks"], MALFORMED["sync-aingest"]):
        assert expected in problems

    class SetsItLater(_Base):
        blocking = False

        def __init__(self, config: AgentConfig, workdir: Path) -> None:
            super().__init__(config, workdir)
            self.blocking = "when remote"  # type: ignore[assignment]

    assert any("set blocking = 'when remote'" in p for p in check_agent(SetsItLater, expect_recall=False))
    assert check_agent(_AsyncAgent, expect_recall=False) == []


def test_well_formed_declarations_pass_and_are_read_through_their_accessors() -> None:
    class Quick(_Base):
        blocking = False
        default_chunk_size = 4096
        options = (Option("delay", float, 0.0, "seconds"),)

    assert protocols.capability_problems(Quick) == []
    assert not protocols.is_blocking(Quick) and protocols.is_blocking(_Base)
    assert protocols.default_chunk_size(Quick) == 4096 and protocols.default_chunk_size(_Base) is None
    assert [o.name for o in protocols.options_of(Quick)] == ["delay"] and protocols.options_of(_Base) == ()
    assert protocols.async_variant(_AsyncAgent(AgentConfig(), Path(".")), "recall") is not None
    assert protocols.async_variant(_SyncAingest(AgentConfig(), Path(".")), "ingest") is None  # not awaitable


def test_the_docs_table_names_every_optional_capability() -> None:
    """docs/writing-a-plugin.md's table lists each capability protocol of memplug.protocols."""
    contracts = {"DatasetBuilder", "MemoryAgent", "Reader", "Metric"}
    declared = {
        name
        for name, obj in vars(protocols).items()
        if inspect.isclass(obj) and getattr(obj, "_is_runtime_protocol", False) and name not in contracts
    }
    assert {"IngestsAsync", "DeclaresBlocking", "HasDefaultChunkSize", "Preflights", "ReadsAnswer"} <= declared
    text = (ROOT / "docs" / "writing-a-plugin.md").read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("| `")]
    in_table = {m for line in table for m in re.findall(r"`(\w+)`", line.split("|")[2])}
    assert declared <= in_table, declared - in_table
