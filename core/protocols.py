"""The contracts between the core and its plugins: datasets, agents, readers, metrics.

A plugin registers a *target* (``"module:attr"``) that is one of:

- a dataset builder class: ``info: DatasetInfo``, ``options: tuple[Option, ...]`` and
  ``build(options: BuildOptions) -> Iterable[Sample]``;
- a memory agent factory ``(config: AgentConfig, workdir: Path) -> MemoryAgent`` (usually
  the agent class itself) with ``options: tuple[Option, ...]``;
- a reader factory ``(config: ReaderConfig) -> Reader``;
- a metric factory ``(config: MetricConfig) -> Metric``.

Beyond these, a plugin may declare optional capabilities (async methods, ``blocking``,
``default_chunk_size``, ``preflight``, ``info_for``, ``cannot``, ``reads_answer``, ...).
Each is a Protocol below, with what it is for; core finds them with ``isinstance`` (or the
accessor beside each, e.g. :func:`is_blocking`), never by looking a name up, and
:func:`capability_problems` says what is malformed in a declaration (checked before any
work: one line, exit 2). The table in docs/writing-a-plugin.md lists them.
"""

from __future__ import annotations

from pathlib import Path
import inspect
from typing import (
    TYPE_CHECKING,
    AbstractSet,
    Any,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Protocol,
    Sequence,
    runtime_checkable,
)

import attrs

from memplug.models import (
    DEFAULT_TOP_K,
    AgentQuestion,
    CheckReport,
    Chunk,
    DatasetInfo,
    Question,
    Recall,
    Recalled,
    Sample,
    StoredItem,
)
from memplug.options import Option

if TYPE_CHECKING:  # the LLM layer imports litellm lazily; keep this module light
    from memplug.llm import LLM
    from memplug.preflight import AgentPlan


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

    # Optional: InfoFor, ChecksSamples, ChecksData (below).


@runtime_checkable
class InfoFor(Protocol):
    """Optional on a dataset builder: ``info_for(values, data=None) -> DatasetInfo`` when the
    info depends on its resolved options or on the release at ``data`` (its language, a
    protocol variation such as lenient parsing); see :func:`dataset_info`."""

    def info_for(self, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo: ...


def dataset_info(builder: DatasetBuilder, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo:
    """The builder's info for these resolved option values and release: its ``info_for``
    when it has one, else ``builder.info``. The runner and `memplug rescore` both ask here."""
    return builder.info_for(values, data) if isinstance(builder, InfoFor) else builder.info


@runtime_checkable
class ChecksSamples(Protocol):
    """Optional on a dataset builder: ``check(samples) -> CheckReport``, the validator of
    ``memplug generate --check`` (what it built or loaded: answers present, distractors
    consistent, ...). Without it, ``--check`` is refused before any work."""

    def check(self, samples: list[Sample]) -> CheckReport: ...


@runtime_checkable
class ChecksData(Protocol):
    """Optional on a dataset builder: ``check_data(data, values) -> CheckReport``, run by
    ``memplug generate --check --data PATH`` on the user's own file before anything is built,
    so that every problem comes with its line number."""

    def check_data(self, data: Path, values: dict[str, Any]) -> CheckReport: ...


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
    top_k: int = DEFAULT_TOP_K
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

    Optional capabilities, declared below: :class:`IngestsAsync`, :class:`RecallsAsync`,
    :class:`ClosesAsync` (the runner prefers them; sync methods otherwise run in a worker
    thread), :class:`DeclaresBlocking` (``blocking = False``: called inline),
    :class:`ListsStored`, :class:`Settles`; on the factory: :class:`HasOptions`, :class:`HasDefaultChunkSize`,
    :class:`Preflights`.
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


@runtime_checkable
class ListsStoredAsync(Protocol):
    """Optional: ``async def astored()``, the async form of :class:`ListsStored`, preferred
    when present (graphiti, cognee: their clients are async)."""

    async def astored(self) -> Iterable[StoredItem]: ...


@runtime_checkable
class IngestsAsync(Protocol):
    """Optional: ``async def aingest(chunk)``, awaited on the runner's event loop instead of
    ``ingest`` in a worker thread: for systems whose client is async (graphiti, cognee, an
    MCP session), so that many samples wait on the network without a thread each."""

    async def aingest(self, chunk: Chunk) -> None: ...


@runtime_checkable
class RecallsAsync(Protocol):
    """Optional: ``async def arecall(question) -> Recall``, preferred to ``recall`` as
    :class:`IngestsAsync` is to ``ingest``."""

    async def arecall(self, question: AgentQuestion) -> Recall: ...


@runtime_checkable
class Settles(Protocol):
    """Optional: ``settle()``, for a system whose ingestion goes on after ``ingest`` returns
    (a graph built in the background, a queue of extractions, a deferred ``cognify``).
    The runner calls it once per sample, after the last chunk and before ``stored()`` and
    the first question, and waits for it up to ``--settle-timeout`` seconds (a timeout or
    an exception fails the sample's questions, as a failed ingestion does); its time is on
    each record as ``timings.settle_s``, apart from ``ingest_s``. Without it, a question
    could be asked of a memory that is still being written, and the system would look
    worse than it is, or a slow one faster. Return when what was ingested can be recalled.
    ``async def asettle`` is used when present."""

    def settle(self) -> None: ...


@runtime_checkable
class SettlesAsync(Protocol):
    """Optional: ``async def asettle()``, the async form of :class:`Settles`, preferred when present."""

    async def asettle(self) -> None: ...


def _declares(obj: object, name: str) -> bool:
    """``isinstance(obj, P)`` for a runtime protocol ``P`` whose member is ``name``, as typing
    decides it for a method (present and not None), without its cost: typing's isinstance
    walks the protocol's members every time, tens of microseconds, and the runner asks
    several times a sample (a fifth of a warm rerun's CPU at 64 side by side)."""
    return getattr(obj, name, None) is not None


def settles(agent: object) -> bool:
    """Whether the agent finishes its ingestion in ``settle()`` (:class:`Settles`, :class:`SettlesAsync`)."""
    return _declares(agent, "settle") or _declares(agent, "asettle")


@runtime_checkable
class ClosesAsync(Protocol):
    """Optional: ``async def aclose()``, preferred to ``close`` (an async session to end)."""

    async def aclose(self) -> None: ...


def async_variant(agent: object, method: str) -> Callable[..., Awaitable[Any]] | None:
    """The agent's declared ``async def a<method>`` for ``method`` in ingest, recall, close,
    stored and settle (:class:`IngestsAsync`, :class:`RecallsAsync`, :class:`ClosesAsync`,
    :class:`ListsStoredAsync`, :class:`SettlesAsync`); None when it has none, or has one that is not an ``async def``
    (:func:`capability_problems` reports that before the run)."""
    # the attribute itself, not isinstance(agent, IngestsAsync) and the like (see _declares)
    found = getattr(agent, f"a{method}", None) if method in _ASYNC_VARIANTS else None
    return found if found is not None and inspect.iscoroutinefunction(found) else None


#: the methods with an async variant (``a<method>``) that :func:`async_variant` looks for
_ASYNC_VARIANTS = frozenset({"ingest", "recall", "close", "stored", "settle"})


def lists_stored(agent: object) -> bool:
    """Whether the agent can say what it holds (:class:`ListsStored` or :class:`ListsStoredAsync`)."""
    return _declares(agent, "stored") or _declares(agent, "astored")


@runtime_checkable
class DeclaresBlocking(Protocol):
    """Optional: ``blocking = False`` (True or False; on the class, and an instance may set
    it back to True, e.g. when it embeds through an API) for an agent that keeps its memory
    in process and answers every call in well under a millisecond: the runner then calls its
    sync methods inline on its event loop (no thread hop, which costs more than such a call)
    and creates no work directory for it (the path is still passed). Absent: True."""

    @property
    def blocking(self) -> bool: ...


def is_blocking(obj: object) -> bool:
    """False only for an agent (or factory) that declares ``blocking = False``."""
    return getattr(obj, "blocking", None) is not False  # isinstance(obj, DeclaresBlocking) (see _declares)


@runtime_checkable
class HasOptions(Protocol):
    """Optional on an agent factory (required of a dataset builder): ``options``, a tuple of
    :class:`memplug.Option`, the ``-o key=value`` settings it takes. Values are parsed,
    checked (type, choices, bounds) and defaulted before any work; an option not declared is
    refused. An agent gets the result as ``config.options``, a builder as
    ``BuildOptions.values``. Absent: no option is accepted."""

    @property
    def options(self) -> Sequence[Option]: ...


def options_of(plugin: object) -> tuple[Option, ...]:
    """The options a factory or builder declares (none when it declares none, or declares
    something else: :func:`capability_problems` reports that)."""
    if isinstance(plugin, HasOptions) and isinstance(plugin.options, (tuple, list)):
        return tuple(plugin.options)
    return ()


@runtime_checkable
class HasDefaultChunkSize(Protocol):
    """Optional on an agent factory: ``default_chunk_size = N`` (a positive int), the tokens
    per ingestion chunk the system works best with (mem0, letta, cognee, llamaindex: 4096,
    one extraction call per chunk). Used when neither ``--chunk-size`` nor the dataset's
    protocol sets the size, before the dataset's own default."""

    @property
    def default_chunk_size(self) -> int: ...


def default_chunk_size(factory: object) -> int | None:
    """The agent factory's declared chunk size, or None."""
    return factory.default_chunk_size if isinstance(factory, HasDefaultChunkSize) else None


@runtime_checkable
class Preflights(Protocol):
    """Optional on an agent factory: ``preflight(values, given, llm) -> AgentPlan`` (a
    classmethod or staticmethod; :func:`memplug.preflight.requires_llm` writes the common
    one), called once per run before any data is loaded, with the resolved option values,
    the ``-o`` options the user typed and the run's LLM or None. It raises
    :class:`memplug.MemplugError` when the agent cannot run as configured (one line, exit 2),
    or returns the values to run with and a note for the user (an offline mode it chose).
    See :func:`memplug.preflight.agent`."""

    def preflight(self, values: Mapping[str, Any], given: Mapping[str, str], llm: "LLM | None") -> "AgentPlan": ...


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


@runtime_checkable
class LacksSkills(Protocol):
    """Optional on a reader: ``cannot``, a frozenset of the skills (values of
    ``DatasetInfo.needs``, e.g. "counting") it lacks. A question whose category needs one of
    them is recorded as unanswerable by this reader (only its recall is scored), not as a
    wrong answer. Absent: it can do everything."""

    @property
    def cannot(self) -> AbstractSet[str]: ...


def reader_cannot(reader: object) -> AbstractSet[str]:
    """The skills the reader declares it lacks."""
    return getattr(reader, "cannot", None) or frozenset()  # isinstance(reader, LacksSkills) (see _declares)


@runtime_checkable
class PromptsWithProtocol(Protocol):
    """Optional on a reader: ``prompts_with_protocol = True`` when it asks a model with the
    dataset's answer protocol (``AnswerProtocol.messages``). Its replies answer what those
    prompts ask (LoCoMo's category-5 two-way choice: a reply "a" means option a), so they
    go through the protocol's per-category parsers too. Absent: only the protocol's
    ``parse`` applies (an extractive reader's span answers no choice it was never shown)."""

    @property
    def prompts_with_protocol(self) -> bool: ...


def prompts_with_protocol(reader: object) -> bool:
    """Whether the reader's replies come from the protocol's prompts."""
    return getattr(reader, "prompts_with_protocol", None) is True  # isinstance(reader, PromptsWithProtocol)


@attrs.frozen
class MetricConfig:
    top_k: int = DEFAULT_TOP_K
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
    #: the reply before the protocol's parser (None: not known); for metrics that official code
    #: computes on the raw output while the others get the parsed one (MemoryAgentBench's EventQA)
    reply: str | None = None
    #: why a metric that applies gave no score, by metric name ("unreadable verdict": the
    #: judge's reply held none); a metric writes here, and the record keeps it as ``unscored``
    unscored: dict[str, str] = attrs.field(factory=dict)


@runtime_checkable
class Metric(Protocol):
    """Scores one answered question; ``None`` means not applicable (left out of means).

    ``score`` may be a coroutine function (the judge is).
    """

    name: str
    version: str

    def score(self, ctx: ScoreContext) -> float | None: ...


@runtime_checkable
class ReadsAnswer(Protocol):
    """Optional on a metric: ``reads_answer = False`` for one that scores what was recalled,
    not the answer (recall@K, the memory-type metrics): it is scored even when the reader
    left the question unanswered, and never a second time on the raw reply. Absent: True."""

    @property
    def reads_answer(self) -> bool: ...


def reads_answer(metric: object) -> bool:
    """Whether the metric scores the answer (see :class:`ReadsAnswer`)."""
    return not (isinstance(metric, ReadsAnswer) and metric.reads_answer is False)


@runtime_checkable
class PlansQuestions(Protocol):
    """Optional on a metric: ``plan(questions)``, told every question of the run before the
    first is asked (the judge picks each question's judge then, so that run.json names them
    from the start)."""

    def plan(self, questions: Iterable[Question]) -> None: ...


@runtime_checkable
class Describes(Protocol):
    """Optional on a metric: ``describe() -> dict``, what run.json records of it under
    ``resolved`` (the judge: its model, prompts and their sha256)."""

    def describe(self) -> dict[str, Any]: ...


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1_000_000


def capability_problems(plugin: object) -> list[str]:
    """What is malformed in the optional capabilities ``plugin`` declares (an agent factory or
    agent, a dataset builder, a reader, a metric), one line each; empty when all is well.
    The runner refuses a plugin with any (one line, exit 2: :func:`memplug.preflight.plugin`)
    and :func:`memplug.testing.check_agent` lists them."""
    problems: list[str] = []
    if isinstance(plugin, HasOptions):
        declared = plugin.options
        if not isinstance(declared, (tuple, list)) or not all(isinstance(o, Option) for o in declared):
            problems.append(f"options = {declared!r} is not a tuple of memplug.Option (HasOptions)")
    if isinstance(plugin, DeclaresBlocking) and not isinstance(plugin.blocking, bool):
        problems.append(f"blocking = {plugin.blocking!r} is not True or False (DeclaresBlocking)")
    if isinstance(plugin, HasDefaultChunkSize) and not _positive_int(plugin.default_chunk_size):
        problems.append(
            f"default_chunk_size = {plugin.default_chunk_size!r} is not a number of tokens "
            "from 1 to 1000000 (HasDefaultChunkSize)"
        )
    awaited: tuple[tuple[type, str, object], ...] = (
        (IngestsAsync, "aingest", isinstance(plugin, IngestsAsync) and plugin.aingest),
        (RecallsAsync, "arecall", isinstance(plugin, RecallsAsync) and plugin.arecall),
        (ClosesAsync, "aclose", isinstance(plugin, ClosesAsync) and plugin.aclose),
        (ListsStoredAsync, "astored", isinstance(plugin, ListsStoredAsync) and plugin.astored),
        (SettlesAsync, "asettle", isinstance(plugin, SettlesAsync) and plugin.asettle),
    )
    for protocol, name, found in awaited:
        if found is not False and not inspect.iscoroutinefunction(found):
            problems.append(f"{name} is not an async def: the runner awaits it ({protocol.__name__})")
    called: tuple[tuple[type, str, object], ...] = (
        (ListsStored, "stored", isinstance(plugin, ListsStored) and plugin.stored),
        (Settles, "settle", isinstance(plugin, Settles) and plugin.settle),
        (Preflights, "preflight", isinstance(plugin, Preflights) and plugin.preflight),
        (InfoFor, "info_for", isinstance(plugin, InfoFor) and plugin.info_for),
        (ChecksSamples, "check", isinstance(plugin, ChecksSamples) and plugin.check),
        (ChecksData, "check_data", isinstance(plugin, ChecksData) and plugin.check_data),
        (PlansQuestions, "plan", isinstance(plugin, PlansQuestions) and plugin.plan),
        (Describes, "describe", isinstance(plugin, Describes) and plugin.describe),
    )
    for protocol, name, found in called:
        if found is not False and not callable(found):
            problems.append(f"{name} = {found!r} is not callable ({protocol.__name__})")
    if isinstance(plugin, LacksSkills):
        cannot = plugin.cannot
        if not isinstance(cannot, (set, frozenset, tuple, list)) or not all(isinstance(c, str) for c in cannot):
            problems.append(f"cannot = {cannot!r} is not a set of skill names (LacksSkills)")
    if isinstance(plugin, ReadsAnswer) and not isinstance(plugin.reads_answer, bool):
        problems.append(f"reads_answer = {plugin.reads_answer!r} is not True or False (ReadsAnswer)")
    return problems
