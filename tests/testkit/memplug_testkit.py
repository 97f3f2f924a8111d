"""A test plugin: a counting dataset and agents that can be slowed down or made to fail.

Tests register this module directly (in-process) or expose it through a real entry
point in a throw-away dist-info folder (subprocesses, e.g. the SIGKILL tests).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Iterable

from memplug import (
    AgentConfig,
    AgentQuestion,
    BuildOptions,
    Chunk,
    DatasetInfo,
    Message,
    Option,
    Question,
    Recall,
    Recalled,
    Sample,
    hookimpl,
)
from memplug.hookspecs import Register

#: what a hung agent (option ``hang``) waits for: set by a test that is done with it, so
#: that the thread it hangs in ends (a pool thread left running holds up the interpreter's exit)
RELEASE = threading.Event()

WORDS = ["apple", "river", "lamp", "violin", "cactus", "harbour", "pepper", "glacier", "saddle", "orbit"]


class CountingDataset:
    """Samples of numbered items; question i of a sample asks for item i."""

    info = DatasetInfo(
        name="counting", version="1", description="numbered items", metrics=("em", "subem"), default_chunk_size=32
    )
    options = (
        Option("samples", int, 6, "number of samples"),
        Option("questions", int, 3, "questions per sample"),
        Option("messages", int, 4, "messages per sample"),
    )

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        v = options.values
        for s in range(v["samples"]):
            messages = [
                Message(f"m{i}", f"Item {s}-{i} is {WORDS[(s + i + options.seed) % len(WORDS)]}.")
                for i in range(v["messages"])
            ]
            questions = [
                Question(
                    f"q{i}",
                    f"What is item {s}-{i}?",
                    (WORDS[(s + i + options.seed) % len(WORDS)],),
                    category="even" if i % 2 == 0 else "odd",
                    targets=(f"m{i}",),
                )
                for i in range(min(v["questions"], v["messages"]))
            ]
            yield Sample(f"s{s}", messages, questions)


class LookupAgent:
    """Finds the message naming the item asked about; can sleep or fail on purpose."""

    options = (
        Option("delay", float, 0.0, "seconds to sleep per ingest and recall"),
        Option("fail_question", str, "", "raise on recall of this question id"),
        Option("fail_sample", str, "", "raise on ingest in this sample"),
        Option("answer", bool, True, "write the answer itself instead of leaving it to the reader"),
        Option("wrong", str, "", "answer this question id wrongly (in every sample)"),
        Option(
            "die_once",
            str,
            "",
            "kill this process on the first ingest when this file does not exist yet "
            "(it is created first): a worker dies mid-run once",
        ),
        Option("hang", str, "", "in this sample (or every one: *), hang in ingest until RELEASE is set"),
        Option("hang_setup", str, "", "in this sample, hang while the agent is made until RELEASE is set"),
        Option("inline", bool, False, "declare blocking = False: the calls run on the event loop itself"),
    )
    active = 0
    peak = 0

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.opts = config.options  # parsed values of the options the class declares
        self.sample_id = config.sample_id
        self.workdir = workdir
        self.memory: dict[str, tuple[str, str]] = {}
        if self.opts["hang_setup"] == self.sample_id:
            RELEASE.wait()
        if self.opts["inline"]:
            self.blocking = False
        LookupAgent.active += 1
        LookupAgent.peak = max(LookupAgent.peak, LookupAgent.active)

    def ingest(self, chunk: Chunk) -> None:
        time.sleep(self.opts["delay"])
        if self.opts["hang"] in ("*", self.sample_id):
            RELEASE.wait()
        marker = self.opts["die_once"]
        if marker and not Path(marker).exists():
            Path(marker).write_text(self.sample_id)
            os._exit(1)
        if self.opts["fail_sample"] == self.sample_id:
            raise RuntimeError(f"ingest refused in {self.sample_id}")
        for m in chunk.messages:
            key = m.text.split(" is ")[0].replace("Item ", "")
            self.memory[key] = (m.id, m.text)
        (self.workdir / "memory.txt").write_text("\n".join(t for _, t in self.memory.values()))

    def recall(self, question: AgentQuestion) -> Recall:
        time.sleep(self.opts["delay"])
        if self.opts["fail_question"] and question.id == self.opts["fail_question"]:
            raise ValueError("recall exploded")
        key = question.text.removeprefix("What is item ").rstrip("?")
        if key not in self.memory:
            return Recall(())
        mid, text = self.memory[key]
        answer = text.split(" is ")[1].rstrip(".") if self.opts["answer"] else None
        if self.opts["wrong"] == question.id:
            answer = "nothing"
        return Recall((Recalled(text, 1.0, (mid,)),), answer=answer)

    def close(self) -> None:
        LookupAgent.active -= 1


@hookimpl
def register_datasets(register: Register) -> None:
    register("counting", "memplug_testkit:CountingDataset")


@hookimpl
def register_agents(register: Register) -> None:
    register("lookup", "memplug_testkit:LookupAgent")
