"""One sample, run: given a :class:`~memplug.plan.Plan` and a sample, its records.

:class:`SampleRunner` builds the sample's agent, feeds it the sample chunk by chunk, lists
what it stored, asks each question (recall, answer, parse, score, diagnose) and returns a
:class:`SampleResult`: a record per question and the sample's line of stored.jsonl. It
writes no run file: each result also goes to a :class:`SampleSink` as soon as it is made
(the driver's writes it at once, so a kill loses little; a Ray worker's keeps nothing and
returns the result whole). The same function runs a sample in this process
(:func:`run_here`, the local executor) and in a Ray worker (:mod:`memplug.executors`).

The questions of one sample run in order, because an agent's state may change on recall.
Sync agent methods run in a thread pool (:class:`AgentThreads`) as wide as the
concurrency, so blocking LLM calls inside agents overlap too. A failure of one question (an
LLM error after its retries, a reply too long or empty, an agent exception) is recorded on
the question it hit, or on all questions of a sample whose ingestion failed. A failure that
every later question would repeat (a bad key, an unknown model, an agent that cannot be set
up) is raised: the driver stops the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import shutil
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol

import attrs

from memplug import budget, diagnosis
from memplug import stored as stored_file
from memplug.errors import MemplugError
from memplug.llm import FatalLLMError, LLMError, usage_scope
from memplug.logs import tame_loguru
from memplug.metrics import score_with
from memplug.models import AgentQuestion, Chunk, Question, Recall, Sample
from memplug.chunking import chunk_messages
from memplug.plan import Plan
from memplug.protocols import (
    AgentConfig,
    ReferenceChannel,
    ScoreContext,
    async_variant,
    is_blocking,
    lists_stored,
    prompts_with_protocol,
    reader_cannot,
    reads_answer,
    settles,
)
from memplug.record import QuestionRecord, Timings
from memplug.results import safe_name
from memplug.secrets import scrub
from memplug.serialize import jsonable

log = logging.getLogger(__name__)
#: seconds a Ctrl-C gives the samples in progress to stop before their thread is left behind
STOP_GRACE_S = 0.5


@attrs.define
class SampleResult:
    """What running one sample gives (:meth:`SampleRunner.run_sample`): a record per question,
    in the sample's order, and its line of stored.jsonl (what the agent listed after
    ingestion; None when it lists nothing or the listing failed). Plain data: a Ray worker
    returns it."""

    records: list[QuestionRecord]
    stored: dict[str, Any] | None = None


class SampleSink(Protocol):
    """Where :meth:`SampleRunner.run_sample` hands each result as soon as it is made: the
    question's record (``write``) and the sample's line of stored.jsonl (``stored``). The
    driver's sink writes them into the run directory; a Ray worker's keeps nothing (the
    :class:`SampleResult` goes back to the driver)."""

    def write(self, record: QuestionRecord) -> None: ...

    def stored(self, line: dict[str, Any]) -> None: ...


class RunResults(SampleSink, Protocol):
    """The driver's end of a run, as an executor sees it: the folder the samples' agents
    work in, the sink of each record and stored line, and :meth:`sample_end` once a
    sample's records are all in (the ``memplug_sample_end`` hook). An executor that runs
    samples elsewhere hands each returned result over with :func:`deliver`."""

    @property
    def work(self) -> Path:
        """The folder each sample's agent gets a folder in (the run directory's ``work``)."""
        ...

    def sample_end(self, sample: Sample, records: list[QuestionRecord]) -> None: ...


def deliver(results: RunResults, sample: Sample, result: SampleResult) -> None:
    """Hand a sample's result, run elsewhere (a Ray worker), to the driver: in the order a
    local run makes them, the stored line, each record, then the sample's end."""
    if result.stored is not None:
        results.stored(result.stored)
    for record in result.records:
        results.write(record)
    results.sample_end(sample, result.records)


class SetupFailed(MemplugError):
    """The agent could not be built for a reason every sample shares: the run stops."""


class SampleTimeout(Exception):
    """An agent call that did not return within ``--sample-timeout``: its sample's error,
    not the run's (a plain Exception, so that a set-up that hangs is not a configuration
    failure that stops the run)."""


#: the threads running an agent's blocking call now (see :func:`agent_calls_running`)
_CALLS_RUNNING: set[threading.Thread] = set()


def agent_calls_running() -> bool:
    """Whether an agent's call is still running in a thread of the runner: one given up
    after --sample-timeout, or one a Ctrl-C left behind. Python cannot stop it, and the
    interpreter's exit would wait for it (forever, for a hung plugin): the command line
    then ends the process itself once the run's files are written."""
    return any(t.is_alive() for t in list(_CALLS_RUNNING))


class AgentThreads:
    """The threads that run agents' blocking calls, ``width`` of them.

    A thread whose call outlived ``--sample-timeout`` cannot be stopped (Python has no way
    to kill a thread): :meth:`give_up` leaves it to its call and gives the later calls a
    fresh pool, so a hung agent costs one thread, never a place in the run's width (with
    ``--concurrency 1`` every later sample would otherwise queue behind it and time out).
    """

    def __init__(self, width: int) -> None:
        self.width = width
        self.pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="memplug-agent")

    def give_up(self) -> None:
        """Leave the current pool's threads to their calls; later calls get a fresh pool."""
        self.pool.shutdown(wait=False)
        self.pool = ThreadPoolExecutor(max_workers=self.width, thread_name_prefix="memplug-agent")

    def shutdown(self) -> None:
        """No further call; calls not begun are cancelled, running ones are not waited for."""
        self.pool.shutdown(wait=False, cancel_futures=True)


class SampleRunner:
    """Runs one sample of a :class:`~memplug.plan.Plan` at a time, or many side by side on
    one event loop; holds nothing of a run but the stop event a Ctrl-C sets."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        #: set by a Ctrl-C: the samples end at their next stop point (see :func:`run_here`)
        self.stopping = threading.Event()

    def stop_point(self) -> None:
        """Between two agent calls: end the sample here when a Ctrl-C asked the run to stop."""
        if self.stopping.is_set():
            raise asyncio.CancelledError

    def method(
        self, pool: AgentThreads, obj: Any, name: str, limit: float | None = None, flag: str = "--sample-timeout"
    ) -> Callable[..., Awaitable[Any]]:
        """``obj.a<name>`` if the agent declares an async variant (protocols.IngestsAsync,
        RecallsAsync, ClosesAsync, ListsStoredAsync), else ``obj.<name>`` made awaitable.

        Sync calls run in the pool unless the agent (or factory) says ``blocking = False``
        (protocols.DeclaresBlocking): quick in-memory agents run inline, because 64 threads
        contending for the GIL over sub-millisecond calls cost more than the calls
        themselves. Looked up once per agent, not per call: a sample ingests chunk after
        chunk through one method.

        A call in the pool or a declared async one that does not return within
        ``--sample-timeout`` raises :class:`SampleTimeout` (the sample's error; the run goes
        on) and its thread is given up (:meth:`AgentThreads.give_up`). An inline call cannot
        be timed out: it holds the event loop. ``limit`` and ``flag``: another bound and the
        option that sets it (settle(): ``--settle-timeout``).
        """
        limit = self.plan.spec.sample_timeout if limit is None else limit

        async def timed(call: Awaitable[Any]) -> Any:
            try:
                return await asyncio.wait_for(call, limit)
            except asyncio.TimeoutError:
                pool.give_up()
                what = "set-up" if name == "_build_agent" else name.lstrip("_").replace("_", " ")
                raise SampleTimeout(
                    f"the agent's {what} did not return within {limit:g} s ({flag}): given up"
                ) from None

        declared = async_variant(obj, name)
        if declared is not None:

            async def awaited(*args: Any) -> Any:
                return await timed(declared(*args))

            return awaited
        method = getattr(obj, name)
        if not is_blocking(obj):

            async def inline(*args: Any) -> Any:
                return method(*args)

            return inline

        def call(*args: Any) -> Any:
            thread = threading.current_thread()
            _CALLS_RUNNING.add(thread)
            try:
                return method(*args)
            finally:
                _CALLS_RUNNING.discard(thread)

        async def in_pool(*args: Any) -> Any:
            ctx = contextvars.copy_context()  # carries the LLM usage scope into the thread
            return await timed(asyncio.get_running_loop().run_in_executor(pool.pool, ctx.run, call, *args))

        return in_pool

    @property
    def blocking(self) -> bool:
        """Whether building an agent may block (see :meth:`method`)."""
        return self.plan.blocking

    def _build_agent(self, config: AgentConfig, workdir: Path) -> Any:
        factory = self.plan.agent_factory
        assert factory is not None  # None only with --from, which builds no agent
        if self.blocking:  # in-memory agents (blocking = False) store nothing: spare the mkdir
            if workdir.exists():
                # left by an earlier try of this sample (a run interrupted and resumed, a Ray
                # worker that died): its agent's store holds what that try ingested, and an
                # agent opening it would hold every message twice (mem0's Qdrant did)
                shutil.rmtree(workdir)
            workdir.mkdir(parents=True)
        return factory(config, workdir)

    async def run_sample(self, work: Path, sample: Sample, pool: AgentThreads, sink: SampleSink) -> SampleResult:
        """Run one sample: build its agent in ``work``, ingest, list what it stored, ask each
        question, score and diagnose. Each record and the stored line go to ``sink`` as they
        are made (the driver writes them at once, so a kill loses little) and come back in the
        :class:`SampleResult`. Writes no run file itself: the driver
        (:class:`memplug.driver.Driver`) owns the run directory."""
        plan, spec = self.plan, self.plan.spec
        workdir = work / safe_name(sample.id)
        config = AgentConfig(
            options=plan.agent_values,
            llm=plan.llm,
            embedder=spec.embedder,
            top_k=plan.top_k,
            chunk_size=plan.chunk_size,
            seed=spec.seed,
            language=plan.info.language,
            sample_id=sample.id,
            reference=ReferenceChannel.of(sample) if plan.agent_entry.info.get("reference") else None,
            api_base=spec.api_base,
        )
        agent: Any = None
        ingest_error: str | None = None
        #: why the agent is given up (a call past --sample-timeout): no later call, not even close
        hung: str | None = None
        if plan.replayed is not None:  # --from RUN: the recalls are stored; nothing to build or ingest
            agent = _Replay(plan.replayed, sample.id, plan.top_k)
        # memplug's work: not timed
        chunks = (
            []
            if agent is not None
            else [Chunk(i, (m,)) for i, m in enumerate(sample.messages)]
            if plan.per_message
            else list(chunk_messages(sample.messages, plan.chunk_size, plan.token_counts.of(sample)))
        )
        setup_s = ingest_s = 0.0
        settle_s: float | None = None
        with usage_scope() as ingest_usage:
            t0 = time.perf_counter()
            try:
                if agent is None:
                    agent = await self.method(pool, self, "_build_agent")(config, workdir)
            except MemplugError as exc:  # configuration (a missing server, extra or model): every sample would fail
                if isinstance(exc, LLMError) and not isinstance(exc, FatalLLMError):
                    ingest_error = f"agent set-up failed: {_describe(exc)}"
                else:
                    raise SetupFailed(f"agent {spec.agent!r} could not be set up: {scrub(str(exc))}") from None
            except Exception as exc:
                ingest_error = f"agent set-up failed: {_describe(exc)}"
                hung = str(exc) if isinstance(exc, SampleTimeout) else None
            tame_loguru()  # the agent's libraries may have imported loguru just now
            t1 = time.perf_counter()
            setup_s = t1 - t0
            try:
                if agent is not None and chunks:
                    ingest = self.method(pool, agent, "ingest")
                    for chunk in chunks:
                        self.stop_point()
                        await ingest(chunk)
                ingest_s = time.perf_counter() - t1 if chunks else 0.0  # --from: nothing was ingested
                if agent is not None and chunks and settles(agent):  # its ingestion finishes in the background
                    self.stop_point()
                    await self.method(pool, agent, "settle", spec.settle_timeout, "--settle-timeout")()
                    settle_s = time.perf_counter() - t1 - ingest_s
            except FatalLLMError:
                raise
            except Exception as exc:
                ingest_error = f"ingest failed: {_describe(exc)}"
                hung = str(exc) if isinstance(exc, SampleTimeout) else None
        records = []
        recall: Callable[..., Awaitable[Any]] | None = None
        if agent is not None:
            recall_call = self.method(pool, agent, "recall")

            async def recall(asked: AgentQuestion) -> Any:
                nonlocal hung
                try:
                    return await recall_call(asked)
                except SampleTimeout as exc:
                    hung = str(exc)
                    raise

        line: dict[str, Any] | None = None  # the sample's line of stored.jsonl
        try:
            lists = lists_stored(agent)  # optional (protocols.ListsStored, ListsStoredAsync)
            store: diagnosis.Store | None = None
            if agent is not None and ingest_error is None and lists:
                listed, line = await self._list_stored(pool, agent, sample.id)
                if line is not None:
                    sink.stored(line)
                store = diagnosis.Store.of(listed, plan.info.language) if listed is not None else None
            # the stage at which each miss lost its evidence, against the whole store (memplug.diagnosis)
            metric_names = [m.name for m in plan.metrics]
            conversation = diagnosis.Conversation({m.id: m.text for m in sample.messages}, plan.info.language)
            points = diagnosis.sample_points(sample.meta.get(diagnosis.MEMORY_POINTS_KEY), store, conversation)
            for question in sample.questions:
                self.stop_point()
                record = await self._ask(
                    recall, question, sample, ingest_error or (f"not asked: {hung}" if hung else None)
                )
                headline = diagnosis.deciding_metric(record, metric_names)
                record.diagnosis = diagnosis.diagnose(record, headline, conversation, store, plan.info.language, points)
                if plan.judge_llm is not None and record.diagnosis is not None and "overlap" in record.diagnosis.rule:
                    await self._judge_storage(record, conversation, store)
                if plan.replayed is not None and (source := plan.replayed.get(record.key)) is not None:
                    record.diagnosis = diagnosis.carried(record.diagnosis, source.diagnosis)  # what its agent stored
                record.timings.setup_s = round(setup_s, 6)
                # a sample whose agent was not made, or whose ingestion failed, has no ingest time:
                # its 0 would pull the run's ingest figures down
                record.timings.ingest_s = None if ingest_error else round(ingest_s, 6)
                record.timings.settle_s = None if settle_s is None else round(settle_s, 6)
                record.timings.n_messages = len(sample.messages)
                record.ingest_usage = ingest_usage.snapshot()
                sink.write(record)
                records.append(record)
        finally:
            if agent is not None and hung is None:
                try:
                    await self.method(pool, agent, "close")()
                except Exception:  # closing must not turn answered questions into errors
                    pass
        return SampleResult(records, line)

    def failed_records(self, sample: Sample, error: str) -> list[QuestionRecord]:
        """The records of a sample that could not be run (a Ray worker died running it each
        time): each question with ``error``, nothing timed (resume redoes them)."""

        async def records() -> list[QuestionRecord]:
            out = []
            for question in sample.questions:
                record = await self._ask(None, question, sample, error)
                record.timings = Timings(setup_s=0.0, n_messages=len(sample.messages))
                out.append(record)
            return out

        return asyncio.run(records())

    async def _judge_storage(
        self, record: QuestionRecord, conversation: diagnosis.Conversation, store: diagnosis.Store | None
    ) -> None:
        """With ``--judge``: the judge, not the overlap rule, decides whether items that name no
        source hold the record's evidence (:func:`memplug.diagnosis.judged`); its calls count in
        the question's usage. A diagnostic: a failed call is logged and the overlap rule's
        diagnosis kept."""
        judge_llm = self.plan.judge_llm
        assert judge_llm is not None
        with usage_scope() as usage:
            try:
                record.diagnosis = await diagnosis.judged(
                    record, conversation, store, judge_llm, self.plan.info.language
                )
            except FatalLLMError:
                raise
            except Exception as exc:
                log.warning(
                    "question %s/%s: the judge could not diagnose it, the overlap rule stands: %s",
                    record.sample_id,
                    record.question_id,
                    _describe(exc),
                )
        if record.usage is not None:
            record.usage = record.usage.plus(usage.snapshot())

    async def _list_stored(
        self, pool: AgentThreads, agent: Any, sample_id: str
    ) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
        """What the agent holds after ingestion, from its optional ``stored()``
        (:mod:`memplug.stored`): every listed item, which the questions' diagnoses are computed
        against, and the sample's line of stored.jsonl. Untimed, and never the run's failure:
        an error is logged and nothing is recorded (None, None)."""
        try:
            listed = await self.method(pool, agent, "stored")()
        except Exception as exc:
            log.warning("sample %s: the agent's stored() failed, nothing recorded: %s", sample_id, _describe(exc))
            return None, None
        return stored_file.line_of(sample_id, listed)

    async def _ask(
        self,
        recall_method: Callable[..., Awaitable[Any]] | None,
        question: Question,
        sample: Sample,
        ingest_error: str | None,
    ) -> QuestionRecord:
        plan = self.plan
        record = QuestionRecord(
            sample_id=sample.id,
            question_id=question.id,
            category=question.category,
            question=question.text,
            gold=list(question.answers),
            choices=dict(question.choices) if question.choices else None,
            correct_choice=question.correct_choice,
            targets=list(question.targets),
            anchors=list(question.anchors),
            question_time=question.time,
            question_meta=jsonable(question.meta),
            error=ingest_error,
        )
        if ingest_error or recall_method is None:
            return record
        need = plan.info.needs.get(question.category)
        unable = need if need in reader_cannot(plan.reader) else None
        with usage_scope() as usage:
            try:
                t0 = time.perf_counter()
                asked = AgentQuestion.of(question)  # what the agent and the reader may see: no answers
                recall = await recall_method(asked)
                if not isinstance(recall, Recall):
                    raise TypeError(f"agent returned {type(recall).__name__}, expected memplug.Recall")
                t1 = time.perf_counter()
                if recall.answer is not None:
                    reply: str | None = recall.answer
                elif unable:  # this reader cannot answer it: only what was recalled is scored
                    reply = None
                    record.unanswerable = f"the {plan.reader_name} reader cannot do {unable}"
                else:  # --context-tokens: the items that fit the budget, whole and in rank order
                    shown, record.context = budget.cut(recall.items, plan.spec.context_tokens)
                    reply = await plan.reader.answer(asked, shown, plan.info)
                # a category's own parser reads replies to the protocol's prompts only (not an agent's
                # own answer, nor an extractive span)
                prompted = recall.answer is None and prompts_with_protocol(plan.reader)
                prediction = None if reply is None else plan.protocol.parse_reply(reply, asked if prompted else None)
                t2 = time.perf_counter()
                record.prediction, record.reply = prediction, reply
                record.agent_answered, record.meta = recall.answer is not None, jsonable(recall.meta)
                record.recalled = list(recall.items)
                record.timings = Timings(recall_s=round(t1 - t0, 6), read_s=round(t2 - t1, 6))
                ctx = ScoreContext(question, prediction or "", recall.items, plan.info.language, recall.meta, reply)
                raw = reply if plan.protocol.score_raw_too else None
                for metric in plan.metrics:
                    if prediction is not None or not reads_answer(metric):
                        record.scores[metric.name] = await score_with(metric, ctx, raw)
                # a verdict the raw reply gave (score_with) leaves the metric scored after all
                unscored = {m: why for m, why in ctx.unscored.items() if record.scores.get(m) is None}
                record.unscored = unscored or None
            except FatalLLMError:
                raise
            except Exception as exc:
                record.error = _describe(exc)
                record.scores, record.unscored = {}, None
                log.warning("question %s/%s failed: %s", sample.id, question.id, record.error)
        record.usage = usage.snapshot()
        return record


def run_here(runner: SampleRunner, samples: list[Sample], results: RunResults) -> None:
    """Run the samples in this process: on an event loop in a thread of their own, this
    thread only waiting for it.

    A Ctrl-C reaches the main thread only, and must stop the run within a second whatever
    the agent does. An event loop in the main thread cannot promise that: an agent that
    runs inline (``blocking = False``) never lets the loop see the cancellation (its
    awaits never suspend: 8,000 MemSim samples of bm25 ran to the end past a Ctrl-C), and
    a call hung in a pool thread keeps the loop, and then the interpreter's exit, waiting
    on it. Waiting here, the KeyboardInterrupt comes at once: the samples are told to stop
    (checked between chunks and questions, :meth:`SampleRunner.stop_point`), given
    STOP_GRACE_S to end, and a thread still busy is left behind (the writer drops what it
    writes late).
    """
    runner.stopping.clear()
    started = threading.Event()
    held: dict[str, Any] = {}

    async def main() -> None:
        held["loop"], held["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        await _run_samples(runner, samples, results)

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # handed to the waiting thread, which raises it
            held["error"] = exc
        finally:
            started.set()

    # the caller's context (an LLM usage scope, say) goes with the samples
    thread = threading.Thread(
        target=contextvars.copy_context().run, args=(target,), daemon=True, name="memplug-samples"
    )
    thread.start()
    try:
        thread.join()
    except KeyboardInterrupt:
        runner.stopping.set()
        started.wait(STOP_GRACE_S)
        loop, task = held.get("loop"), held.get("task")
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop ended meanwhile
                pass
        thread.join(STOP_GRACE_S)
        raise
    error = held.get("error")
    if error is not None:
        raise error


async def _run_samples(runner: SampleRunner, samples: list[Sample], results: RunResults) -> None:
    width = max(runner.plan.spec.concurrency, 1)
    pool = AgentThreads(width)
    queue = iter(samples)

    # `width` workers taking the next sample in dataset order, rather than a task per
    # sample behind a semaphore: no task and no semaphore wake-up per sample.
    async def worker() -> None:
        for sample in queue:
            runner.stop_point()
            result = await runner.run_sample(results.work, sample, pool, results)
            results.sample_end(sample, result.records)

    try:
        async with contextlib.AsyncExitStack() as lent:
            for llm in runner.plan.llms:  # their calls made here are awaited here (LLM.hosted)
                await lent.enter_async_context(llm.hosted())
            workers = [asyncio.ensure_future(worker()) for _ in range(min(width, len(samples)))]
            try:
                await asyncio.gather(*workers)
            finally:  # one failed (a fatal LLM error) or the run was cancelled: the others end
                for task in workers:  # here, before their LLMs' pools close under their calls
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
    finally:
        pool.shutdown()


class _Replay:
    """The stand-in agent of ``eval --from RUN``: the recalled items (and an answer the agent
    wrote itself) that the earlier run stored, question by question. Changing the reader,
    the LLM, the judge or the protocol's parsing then costs the answers, never a re-ingestion
    of the haystack, which for long benchmarks is most of a run's time and money."""

    blocking = False

    def __init__(self, records: dict[tuple[str, str], QuestionRecord], sample_id: str, top_k: int) -> None:
        # not ``self.stored``: an attribute of that name declares the optional ``stored()``
        # listing (protocols.lists_stored), which the runner would call; the source's
        # diagnoses carry what its agent stored instead (diagnosis.carried)
        self.records, self.sample_id, self.top_k = records, sample_id, top_k

    def recall(self, question: AgentQuestion) -> Recall:
        record = self.records.get((self.sample_id, question.id))
        if record is None:
            raise MemplugError(f"the --from run has no record of question {self.sample_id}/{question.id}")
        if record.error:
            raise MemplugError(f"the --from run failed on this question: {record.error}")
        answer = (record.reply or record.prediction) if record.agent_answered else None
        return Recall(tuple(record.recalled[: self.top_k]), answer=answer, meta=record.meta)

    def close(self) -> None:
        """Nothing is held."""


def _describe(exc: BaseException) -> str:
    """One line for a record, scrubbed of secrets: the exception and where it was raised."""
    if isinstance(exc, SampleTimeout):  # where it was raised (the runner) says nothing
        return str(exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return scrub(f"{type(exc).__name__}: {text}{where}" if text else f"{type(exc).__name__}{where}")
