"""The contracts between the core and its plugins: datasets, agents, readers, metrics.

A plugin registers a *target* (``"module:attr"``) that is one of:

- a dataset builder class: ``info: DatasetInfo``, ``options: tuple[Option, ...]`` and
  ``build(options: BuildOptions) -> Iterable[Sample]``;
- a memory agent factory ``(config: AgentConfig, workdir: Path) -> MemoryAgent`` (usually
  the agent class itself) with ``options: tuple[Option, ...]``;
- a reader factory ``(config: ReaderConfig) -> Reader``;
- a metric factory ``(config: MetricConfig) -> Metric``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol, runtime_checkable

import attrs

from memplug.models import AgentQuestion, Chunk, DatasetInfo, Question, Recall, Recalled, Sample, StoredItem
from memplug.options import Option

if TYPE_CHECKING:  # the LLM layer imports litellm lazily; keep this module light
    from memplug.llm import LLM


@attrs.frozen
class BuildOptions:
    """What a dataset builder gets: release path (loaders), seed (generators), -o values."""

    values: Mapping[str, Any] = attrs.field(factory=dict)
    data: Path | None = None
    seed: int = 0
    #: only for generators that may let an LLM rewrite wording (never answers)
    llm: "LLM | None" = None


@runtime_checkable
class DatasetBuilder(Protocol):
    info: DatasetInfo
    options: tuple[Option, ...]

    def build(self, options: BuildOptions) -> Iterable[Sample]: ...

    # Optional: ``info_for(values, data=None) -> DatasetInfo`` when the info depends on
    # options or on the release at ``data`` (e.g. its language); see dataset_info().


def dataset_info(builder: DatasetBuilder, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo:
    """The builder's info for these resolved option values and release: its ``info_for``
    when it has one, else ``builder.info``. The runner and `memplug rescore` both ask here."""
    info_for = getattr(builder, "info_for", None)
    return info_for(values, data) if info_for else builder.info


@attrs.frozen
class ReferenceChannel:
    """The documented side channel for reference baselines (`oracle`, `noisy`).

    Only agents registered with ``reference=True`` get one; it answers which message
    ids hold the answer of a question, so that the agent never reads a Question.
    """

    _targets: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, sample: Sample) -> "ReferenceChannel":
        return cls({q.id: q.targets for q in sample.questions})

    def targets(self, question_id: str) -> tuple[str, ...]:
        return self._targets.get(question_id, ())


@attrs.frozen
class AgentConfig:
    """Everything an agent factory gets besides its work directory."""

    options: Mapping[str, Any] = attrs.field(factory=dict)
    llm: "LLM | None" = None
    #: embedder name: "wordllama" (offline default), "litellm:<model>", "st:<model>"
    embedder: str = "wordllama"
    top_k: int = 5
    chunk_size: int = 512
    seed: int = 0
    language: str = "en"
    sample_id: str = ""
    reference: ReferenceChannel | None = None
    #: the run's endpoint for systems that need a base URL of their own (letta, mem0)
    api_base: str | None = None


@runtime_checkable
class MemoryAgent(Protocol):
    """A memory system under test. It sees chunks and questions, never answers.

    Agents may also define ``async def aingest`` / ``async def arecall``; the runner
    uses them when present and otherwise runs the sync methods in a worker thread.
    An agent that keeps its memory in process and answers every call quickly sets
    ``blocking = False`` (on the class; an instance may set it back to True, e.g. when
    it embeds through an API): the runner then calls it inline in its event loop and
    creates no work directory for it (the path is still passed).
    """

    def ingest(self, chunk: Chunk) -> None: ...

    def recall(self, question: AgentQuestion) -> Recall: ...

    def close(self) -> None: ...


@runtime_checkable
class ListsStored(Protocol):
    """Optional: an agent that can list what it holds for its sample (Mem0's memories,
    Graphiti's facts, Letta's passages, Cognee's nodes, a native agent's messages).

    The runner calls ``stored()`` once per sample, after ingestion and before the first
    question (untimed, outside the sample's LLM usage: it should not call an LLM), and
    writes the first 200 items and their total count to the run's stored.jsonl
    (:mod:`memplug.stored`); `memplug report --html` shows them beside each wrong answer.
    Return a list (or tuple) of :class:`memplug.StoredItem`, or plain strings; a
    generator is iterated on the runner's event loop, so only one that does no I/O. An
    ``async def astored`` is used when present. Whatever it raises is logged and
    nothing is recorded: the run never fails because of it.
    """

    def stored(self) -> Iterable[StoredItem]: ...


@attrs.frozen
class ReaderConfig:
    llm: "LLM | None" = None
    language: str = "en"


@runtime_checkable
class Reader(Protocol):
    """Turns recalled items into an answer when the agent did not write one.

    It gets what the agent got of the question (text, choices, time): never the gold
    answers, targets or anchors, so no reader can peek.
    """

    async def answer(self, question: AgentQuestion, items: tuple[Recalled, ...], info: DatasetInfo) -> str: ...


@attrs.frozen
class MetricConfig:
    top_k: int = 5
    language: str = "en"
    judge: "LLM | None" = None
    #: the judge (a ``register_judges`` name) for every question: ``--judge-prompt NAME``;
    #: None: each question's dataset decides (see :mod:`memplug.judge`)
    judge_name: str | None = None
    #: the answer protocol's choice matching: "exact" (the letter itself) or "lenient"
    choices: str = "lenient"


@attrs.frozen
class ScoreContext:
    """One answered question as metrics see it."""

    question: Question
    prediction: str
    items: tuple[Recalled, ...]
    language: str = "en"
    #: the agent's Recall.meta, e.g. its memory-type call for the question
    recall_meta: Mapping[str, Any] = attrs.field(factory=dict)


@runtime_checkable
class Metric(Protocol):
    """Scores one answered question; ``None`` means not applicable (left out of means).

    ``score`` may be a coroutine function (the judge is).
    """

    name: str
    version: str

    def score(self, ctx: ScoreContext) -> float | None: ...

