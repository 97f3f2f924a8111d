"""Conformance checks: does a plugin keep the promises the runner relies on?

Each check drives the plugin the way ``memplug eval`` does (options resolved from their
declarations, chunks of whole messages, one agent per sample, the question without its
answers) and returns every broken promise as a line, so one test run lists them all.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from memplug.chunking import chunk_messages
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, DatasetInfo, Recall, Recalled, Sample, StoredItem
from memplug.options import Option, resolve
from memplug.protocols import (
    AgentConfig,
    BuildOptions,
    DeclaresBlocking,
    ReferenceChannel,
    async_variant,
    capability_problems,
    lists_stored,
    options_of,
)
from memplug.testing.tiny import tiny_samples


class ConformanceError(AssertionError):
    """A plugin broke one or more promises; the message lists them, one per line."""


def _declared(plugin: Any, problems: list[str]) -> tuple[Option, ...]:
    """The plugin's options; every malformed capability it declares (memplug.protocols) goes to ``problems``."""
    problems.extend(capability_problems(plugin))
    return tuple(o for o in options_of(plugin) if isinstance(o, Option))


def _call(loop: asyncio.AbstractEventLoop, agent: Any, method: str, *args: Any) -> Any:
    """The agent's declared async variant when it has one (as the runner prefers), else the sync method."""
    declared = async_variant(agent, method)
    if declared is not None:
        return loop.run_until_complete(declared(*args))
    return getattr(agent, method)(*args)


def _check_stored(listed: Any, sample: Sample, where: str) -> list[str]:
    """What ``stored()`` returned: StoredItem or plain strings, linked only to this sample's
    messages. The runner tolerates anything (a run never fails for it); a plugin should not."""
    if isinstance(listed, (str, bytes)) or not hasattr(listed, "__iter__"):
        return [f"{where}: stored() returned {type(listed).__name__}, not a list of memplug.StoredItem"]
    ids = {m.id for m in sample.messages}
    problems = []
    for item in listed:
        if isinstance(item, str):
            continue
        if not isinstance(item, StoredItem):
            problems.append(f"{where}: stored() listed a {type(item).__name__}, not memplug.StoredItem or str")
        elif set(item.message_ids) - ids:
            problems.append(
                f"{where}: stored() item {item.text[:40]!r} names messages of no ingested chunk: "
                f"{', '.join(sorted(set(item.message_ids) - ids)[:3])}"
            )
    return problems


def _check_recall(recall: Any, sample: Sample, others: set[str], top_k: int | None, where: str) -> list[str]:
    if not isinstance(recall, Recall):
        return [f"{where}: recall returned {type(recall).__name__}, not memplug.Recall"]
    problems = []
    if top_k is not None and len(recall.items) > top_k:
        problems.append(f"{where}: {len(recall.items)} items for top_k={top_k}")
    if recall.answer is not None and not isinstance(recall.answer, str):
        problems.append(f"{where}: answer is {type(recall.answer).__name__}, not str or None")
    own = {m.id for m in sample.messages}
    for n, item in enumerate(recall.items, start=1):
        if not isinstance(item, Recalled):
            problems.append(f"{where}: item {n} is {type(item).__name__}, not memplug.Recalled")
            continue
        if not isinstance(item.text, str):
            problems.append(f"{where}: item {n} text is {type(item.text).__name__}, not str")
        if item.score is not None and not (isinstance(item.score, (int, float)) and math.isfinite(item.score)):
            problems.append(f"{where}: item {n} score {item.score!r} is not a finite number or None")
        leaked = sorted(set(item.message_ids) & others)
        unknown = sorted(set(item.message_ids) - own - others)
        if leaked:
            problems.append(
                f"{where}: item {n} holds messages of another sample ({', '.join(leaked[:3])}): "
                "memory must not outlive its agent"
            )
        if unknown:
            problems.append(f"{where}: item {n} names message ids it was never given ({', '.join(unknown[:3])})")
    return problems


def check_agent(
    factory: Callable[[AgentConfig, Path], Any],
    *,
    options: Mapping[str, Any] | None = None,
    samples: Sequence[Sample] | None = None,
    top_k: int = 3,
    chunk_size: int = 64,
    expect_recall: bool = True,
    min_recall: float = 0.5,
    whole_history: bool = False,
    reference: bool = False,
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """Every way ``factory`` (an agent class or factory) breaks the agent contract.

    ``options`` are ``-o`` values (strings or typed), resolved against the factory's
    declared options as the runner resolves them. With ``expect_recall`` (the default),
    an agent that finds the answering message of no question in its top ``top_k``
    (recall@K = 0: what a user sees as an empty column) is listed as having recalled
    nothing, and one must find it for at least ``min_recall`` of the questions (half by
    default, as any retrieving memory does on :func:`tiny_samples`). On a real benchmark's
    samples (a few MemSim trajectories, say) pass ``min_recall=0`` to check only that it
    recalls something: a weak memory is not a broken one, but one that recalls nothing
    with its default options is, as memplug's own ``decay`` was until its relevance was
    calibrated. Turn ``expect_recall`` off for agents that do not retrieve (``none``). An
    agent returns at most ``top_k`` items unless it gives the whole history by design
    (``whole_history``, as ``full`` does). ``reference`` gives each sample's agent the
    targets of its questions through :class:`~memplug.protocols.ReferenceChannel`, as
    the runner does for agents registered with ``reference=True`` (``oracle``).
    ``config`` sets other AgentConfig fields (``llm``, ``embedder``, ``api_base``, ...). Every optional capability
    the factory (or agent) declares must be well formed, as the runner's preflight demands
    (:func:`memplug.protocols.capability_problems`: ``blocking`` True or False, a positive
    ``default_chunk_size``, ``aingest``/``arecall``/``aclose``/``astored`` as ``async def``,
    ``preflight`` and ``stored`` callable, ``options`` a tuple of Option); its declared
    async variants are the methods driven, as the runner prefers them.
    """
    problems: list[str] = []
    declared = _declared(factory, problems)  # and the optional capabilities (memplug.protocols)
    try:
        values = resolve(declared, options or {}, "agent")
    except MemplugError as exc:
        return [*problems, f"options: {exc}"]
    samples = list(samples) if samples is not None else tiny_samples(filler=4)
    hits = asked = empty = 0
    with tempfile.TemporaryDirectory(prefix="memplug-conformance-") as tmp:
        for sample in samples:
            # ids are unique within a sample only (MemSim numbers each trajectory's from 0):
            # an id this sample has too cannot tell a leak
            others = {m.id for s in samples if s is not sample for m in s.messages} - {m.id for m in sample.messages}
            workdir = Path(tmp) / sample.id
            workdir.mkdir()
            channel = ReferenceChannel.of(sample) if reference else None
            agent_config = AgentConfig(
                options=values,
                top_k=top_k,
                chunk_size=chunk_size,
                sample_id=sample.id,
                reference=channel,
                **dict(config or {}),
            )
            loop = asyncio.new_event_loop()
            try:
                agent = factory(agent_config, workdir)
                if isinstance(agent, DeclaresBlocking) and not isinstance(agent.blocking, bool):
                    problems.append(f"{sample.id}: the agent set blocking = {agent.blocking!r}, not True or False")
                for chunk in chunk_messages(sample.messages, chunk_size):
                    _call(loop, agent, "ingest", chunk)
                if lists_stored(agent):
                    try:
                        problems += _check_stored(_call(loop, agent, "stored"), sample, f"{sample.id}/stored")
                    except Exception as exc:  # noqa: BLE001 - reported like the runner logs it, then on
                        problems.append(f"{sample.id}/stored: stored() raised {type(exc).__name__}: {exc}")
                for question in sample.questions:
                    recall = _call(loop, agent, "recall", AgentQuestion.of(question))
                    problems += _check_recall(
                        recall, sample, others, None if whole_history else top_k, f"{sample.id}/{question.id}"
                    )
                    if isinstance(recall, Recall) and question.targets:
                        asked += 1
                        empty += not recall.items
                        found = {i for item in recall.items if isinstance(item, Recalled) for i in item.message_ids}
                        hits += bool(found & set(question.targets))
                _call(loop, agent, "close")
            except Exception as exc:  # noqa: BLE001 - a conformance check reports, it does not stop
                problems.append(f"{sample.id}: {type(exc).__name__}: {exc}")
            finally:
                loop.close()
    if expect_recall and asked and not hits:
        came_back = "every Recall empty" if empty == asked else f"{empty} Recalls empty" if empty else "none empty"
        problems.append(
            f"your agent recalled nothing on {asked} questions: the answering message was in none of "
            f"its top {top_k} (recall@{top_k} = 0; {came_back}); with its default options, an "
            "agent that searches should find some (expect_recall=False for one that does not)"
        )
    elif expect_recall and asked and hits < min_recall * asked:
        problems.append(
            f"found the answering message of only {hits} of {asked} questions in the top {top_k}, "
            f"under min_recall={min_recall:g} "
            "(pass expect_recall=False for an agent that does not retrieve)"
        )
    return problems


def check_dataset(
    builder: Any, *, options: Mapping[str, Any] | None = None, data: Path | None = None, seed: int = 0
) -> list[str]:
    """Every way a dataset builder breaks the contract: its info and options, and what it builds.

    Each sample needs a unique id, unique message and question ids, questions with
    answers (or choices with the correct one among them), and targets that name
    messages of the same sample (recall@K is computed from them).
    """
    problems: list[str] = []
    if not isinstance(getattr(builder, "info", None), DatasetInfo):
        problems.append("info is not a memplug.DatasetInfo")
    declared = _declared(builder, problems)
    try:
        values = resolve(declared, options or {}, "dataset")
        samples = list(builder.build(BuildOptions(values=values, data=data, seed=seed)))
    except Exception as exc:  # noqa: BLE001 - a conformance check reports, it does not stop
        return [*problems, f"build: {type(exc).__name__}: {exc}"]
    if not samples:
        problems.append("build() yielded no samples")
    seen: set[str] = set()
    for sample in samples:
        if not isinstance(sample, Sample):
            problems.append(f"build() yielded {type(sample).__name__}, not memplug.Sample")
            continue
        if sample.id in seen:
            problems.append(f"sample id {sample.id!r} appears twice")
        seen.add(sample.id)
        message_ids = [m.id for m in sample.messages]
        if len(set(message_ids)) != len(message_ids):
            problems.append(f"{sample.id}: message ids repeat")
        question_ids = [q.id for q in sample.questions]
        if len(set(question_ids)) != len(question_ids):
            problems.append(f"{sample.id}: question ids repeat")
        for q in sample.questions:
            where = f"{sample.id}/{q.id}"
            if q.choices is not None:
                if q.correct_choice not in q.choices:
                    problems.append(f"{where}: correct_choice {q.correct_choice!r} is not one of the choices")
            elif not q.answers:
                problems.append(f"{where}: no answers and no choices: nothing to score against")
            missing = sorted(set(q.targets) - set(message_ids))
            if missing:
                problems.append(f"{where}: targets name no message of the sample: {', '.join(missing[:3])}")
    return problems


def dataset_samples(name: str, *, data: Path | str | None = None, seed: int = 0, **options: Any) -> list[Sample]:
    """The samples of the registered dataset ``name`` as ``memplug eval`` builds them
    (``options`` are its ``-o`` values, ``data`` its ``--data``), for checking an agent on
    a real benchmark, not only on :func:`tiny_samples`: ``check_agent(MyAgent,
    samples=dataset_samples("memsim", n=10), top_k=5, min_recall=0)``."""
    from memplug.plugins import get_plugins  # the registry loads entry points: only when asked

    builder = get_plugins().registry("datasets").get(name).load()()
    values = resolve(options_of(builder), options, name)
    return list(builder.build(BuildOptions(values=values, data=None if data is None else Path(data), seed=seed)))


def _raise(problems: list[str], what: str) -> None:
    if problems:
        raise ConformanceError(f"{what} breaks {len(problems)} promise(s):\n" + "\n".join(f"- {p}" for p in problems))


def assert_agent_conforms(factory: Callable[[AgentConfig, Path], Any], **kwargs: Any) -> None:
    """:func:`check_agent`, raising :class:`ConformanceError` that lists every problem."""
    _raise(check_agent(factory, **kwargs), getattr(factory, "__name__", repr(factory)))


def assert_dataset_conforms(builder: Any, **kwargs: Any) -> None:
    """:func:`check_dataset`, raising :class:`ConformanceError` that lists every problem."""
    _raise(check_dataset(builder, **kwargs), type(builder).__name__)
