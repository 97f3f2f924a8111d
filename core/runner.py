"""Feeds each sample to a fresh agent chunk by chunk, asks its questions, scores answers.

Samples run concurrently (``concurrency``), the questions of one sample in order,
because an agent's state may change on recall. Sync agent methods run in a thread
pool as wide as the concurrency, so blocking LLM calls inside agents overlap too.
A failure of one question (an LLM error after its retries, a reply too long or empty,
an agent exception) is recorded on the question it hit, or on all questions of a
sample whose ingestion failed, and the run goes on. A failure that every later
question would repeat (a bad key, an unknown model, an agent that cannot be set up,
a full disk under the run directory) stops the run at once. Either way the outcome
says so: run.json's status is ``finished`` only when every question was answered and
scored, else ``partial`` or ``failed``. Records are appended as they finish; a resumed
run redoes the samples that are unfinished or hold an error, from the start.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import gc
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import sqlite3
import signal
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Mapping, Protocol, Sequence

import attrs

import memplug
from memplug import options as opts
from memplug.chunking import TokenCounts, chunk_messages
from memplug import budget, gates, preflight, sampling
from memplug.errors import MemplugError, OutputError, RunInterrupted, RunStopped
from memplug.llm import LLM, FatalLLMError, LLMError, usage_scope
from memplug.logs import logs_to, tame_loguru
from memplug.metrics import score_with
from memplug.answering import protocol_of
from memplug.models import DEFAULT_TOP_K, AgentQuestion, Chunk, DatasetInfo, Question, Recall, Sample
from memplug.plugins import Plugins, get_plugins
from memplug.protocols import (
    AgentConfig, BuildOptions, Describes, MetricConfig, PlansQuestions, ReaderConfig, ReferenceChannel, ScoreContext,
    async_variant, dataset_info, default_chunk_size, is_blocking, lists_stored, options_of, prompts_with_protocol,
    reader_cannot, reads_answer, settles,
)
from memplug.record import SCHEMA, Outcome, QuestionRecord, RunInfo, RunSummary, Timings
from memplug.results import (RunDir, RunLock, keep_complete_samples, summarize, write_json_atomic,
                             write_status_in_place)
from memplug.secrets import scrub
from memplug import stored as stored_file
from memplug import diagnosis
from memplug.serialize import is_sample_file, read_samples
from memplug.tokens import encoding

log = logging.getLogger(__name__)
#: seconds one agent call (set-up, the ingestion of a chunk, a recall, close) may take before
#: its sample is recorded as failed (--sample-timeout): far above any call that progresses
#: (each LLM call inside it is bounded by --llm-deadline, 600 s), far below "forever"
DEFAULT_SAMPLE_TIMEOUT_S = 1800.0
#: seconds a Ctrl-C gives the samples in progress to stop before their thread is left behind
STOP_GRACE_S = 0.5

#: spec fields that change the numbers: a resume must not mix two of them
SCORED_FIELDS = (
    "agent", "dataset", "data", "seed", "llm", "api_base", "reader", "judge", "judge_prompt", "embedder",
    "chunk_size", "top_k", "limit", "agent_options", "dataset_options", "from_run", "limit_by", "context_tokens",
)
#: what a run.json written before a spec field existed meant by its absence (for --resume and
#: `memplug reproduce`): a --limit then kept the first N questions
LEGACY_SPEC: dict[str, Any] = {"limit_by": "first"}


@attrs.frozen
class RunSpec:
    """Everything that defines an evaluation; stored in run.json."""

    agent: str
    dataset: str
    data: str | None = None
    seed: int = 0
    llm: str | None = None
    api_base: str | None = None
    reader: str | None = None
    judge: str | None = None
    #: the judge (``memplug list``: judges) that scores every question; None: the dataset's
    #: official judge where it has one (longmemeval; LoCoMo: locomo-j), else memplug's
    judge_prompt: str | None = None
    embedder: str = "wordllama"
    chunk_size: int | None = None
    #: items recalled per question; None: the protocol's official depth, else 5
    top_k: int | None = None
    limit: int | None = None
    concurrency: int = 4
    #: ``--concurrency auto``: ``concurrency`` samples side by side, and each model's calls in
    #: flight adaptive up to it (memplug.llm.adaptive; what they settled at is in run.json)
    concurrency_auto: bool = False
    cache: bool = True
    llm_timeout: float = 60.0
    llm_retries: int = 6
    llm_deadline: float = 600.0
    #: seconds one agent call may take before its sample is recorded as failed (a hung agent)
    sample_timeout: float = DEFAULT_SAMPLE_TIMEOUT_S
    agent_options: dict[str, str] = attrs.field(factory=dict)
    dataset_options: dict[str, str] = attrs.field(factory=dict)
    #: a finished run whose recalled items this run answers and scores again (no agent, no ingestion)
    from_run: str | None = None
    #: how --limit draws its questions: "stratified" by category and abstention, with the seed
    #: (memplug.sampling), or "first" (the first N in dataset order)
    limit_by: str = "stratified"
    #: tokens of recalled context the reader is handed (items kept whole, in rank order); None: all
    context_tokens: int | None = None
    #: failed questions (N, or "P%" of those asked) that stop the run (memplug.gates); None: never
    max_errors: str | None = None
    #: thresholds "METRIC=VALUE" / "METRIC[CATEGORY]=VALUE" checked after the run (memplug.gates)
    fail_under: list[str] = attrs.field(factory=list)
    #: seconds the agent's settle() may take after ingestion (protocols.Settles)
    settle_timeout: float = 600.0

    def differences(self, stored: dict[str, Any]) -> list[str]:
        """Fields that change results and differ from a stored spec (for --resume)."""
        mine = _scrubbed(attrs.asdict(self))  # run.json holds the spec scrubbed of secrets
        stored = {**LEGACY_SPEC, **stored}
        return [f"{k}: {stored.get(k)!r} -> {mine[k]!r}" for k in SCORED_FIELDS if stored.get(k) != mine[k]]


@attrs.frozen
class ResolvedSpec:
    """What a :class:`RunSpec` resolved to: every value the runner derives from the spec, the
    plugins' declarations and the dataset's protocol. Resolved once, by the driver's
    :class:`Evaluation` (the agent's ``preflight`` included); the runner reads these values,
    run.json records them as they are (``resolved``), and an executor's workers are handed
    them rather than resolving the spec again."""

    #: the reader's name (``--reader``, else llm with ``--llm``, else extractive)
    reader: str
    #: the agent's option values after its declarations and its preflight (``config.options``)
    agent_options: dict[str, Any]
    #: the dataset's option values (``BuildOptions.values``)
    dataset_options: dict[str, Any]
    #: items recalled per question (``config.top_k``; K of recall@K)
    top_k: int
    #: tokens per ingestion chunk (``config.chunk_size``)
    chunk_size: int
    #: "message" (one whole message a chunk) or "<chunk_size> tokens"
    memory_unit: str
    #: what the agent's preflight chose for the user, e.g. mem0 without an LLM: infer=false
    agent_note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: _jsonable(v) for k, v in attrs.asdict(self, recurse=False).items()}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "ResolvedSpec":
        """The resolved spec a run.json recorded (its ``resolved``; other keys there are ignored)."""
        return cls(**{f.name: obj[f.name] for f in attrs.fields(cls) if f.name in obj})


@attrs.define
class Run:
    """A run in progress, handed to observer hooks."""

    spec: RunSpec
    run_id: str
    path: Path
    info: DatasetInfo
    started: float = attrs.field(factory=time.time)


@attrs.define
class SampleResult:
    """What running one sample gives (:meth:`Evaluation.run_sample`): a record per question, in
    the sample's order, and its line of stored.jsonl (what the agent listed after ingestion;
    None when it lists nothing or the listing failed). Plain data: a Ray worker returns it."""

    records: list[QuestionRecord]
    stored: dict[str, Any] | None = None


class SampleSink(Protocol):
    """Where :meth:`Evaluation.run_sample` hands each result as soon as it is made: the
    question's record (``write``) and the sample's line of stored.jsonl (``stored``). The
    driver's sink writes them into the run directory; a Ray worker's keeps nothing (the
    :class:`SampleResult` goes back to the driver)."""

    def write(self, record: QuestionRecord) -> None: ...

    def stored(self, line: dict[str, Any]) -> None: ...


class RecordSink(Protocol):
    """What takes a run's records in the driver: its :class:`~memplug.results.RecordWriter`
    (or the :class:`~memplug.gates.GatedWriter` around it)."""

    def write(self, record: QuestionRecord) -> None: ...


@attrs.define
class RunSink:
    """The driver's sink: records to the run's writer, what the agent stored to its stored.jsonl."""

    writer: RecordSink
    path: Path

    def write(self, record: QuestionRecord) -> None:
        self.writer.write(record)

    def stored(self, line: dict[str, Any]) -> None:
        stored_file.write_line(self.path, line)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_SAFE = re.compile(r"[A-Za-z0-9-](?:[A-Za-z0-9_.-]*[A-Za-z0-9-])?")  # what the cleaning below keeps as is


def safe_name(text: str, limit: int = 80) -> str:
    """A file name that cannot climb out of its folder ("../x" becomes "x-<hash>")."""
    if len(text) <= limit and _SAFE.fullmatch(text):  # most ids are already safe: one match
        return text
    clean = _UNSAFE.sub("_", text).strip("._")[:limit] or "x"
    if clean != text:
        clean = f"{clean}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return clean


def select_questions(samples: Iterable[Sample], limit: int | None) -> list[Sample]:
    """Keep the first ``limit`` questions in dataset order; drop samples left without one."""
    out: list[Sample] = []
    left = limit
    for sample in samples:
        questions = sample.questions if left is None else sample.questions[:left]
        if left is not None:
            left -= len(questions)
        if questions:
            out.append(attrs.evolve(sample, questions=questions))
        if left is not None and left <= 0:
            break
    if not out:
        raise MemplugError("the dataset has no questions to ask (check --data, its options and --limit)")
    seen: set[str] = set()
    for s in out:
        if s.id in seen:
            raise MemplugError(f"dataset has two samples with id {s.id!r}")
        seen.add(s.id)
        qids = [q.id for q in s.questions]
        if len(set(qids)) != len(qids):
            twice = next(q for q in qids if qids.count(q) > 1)
            raise MemplugError(f"sample {s.id!r} has two questions with id {twice!r}")
    return out


@functools.cache
def _git_hash() -> str | None:
    """memplug's git commit when it runs from a checkout; asked once per process (run.json is
    written at a run's start and end, and once more per repeat)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(memplug.__file__).parent, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def files_sha256(path: Path) -> dict[str, str]:
    """sha256 of a file, or of every file under a folder (hidden ones left out), by name."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()
                                                 and not any(part.startswith(".") for part in p.relative_to(path).parts))
    out: dict[str, str] = {}
    for file in files:
        digest = hashlib.sha256()
        with file.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        out[file.name if file == path else file.relative_to(path).as_posix()] = digest.hexdigest()
    return out


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Evaluation:
    """Resolves plugins for a spec, then runs or resumes it."""

    def __init__(self, spec: RunSpec, plugins: Plugins | None = None, check: bool = True,
                 resolved: ResolvedSpec | None = None) -> None:
        """Resolve every name and option of ``spec`` into :attr:`resolved` (or take ``resolved``
        as given: an executor's worker gets the driver's, and resolves nothing again); with
        ``check``, also the preflight of :mod:`memplug.preflight` (models, keys, endpoint,
        embedder), so that bad configuration fails here, before the first question, as one line."""
        self.spec = spec
        if check:  # a missing provider key: one line now, not after seconds of importing litellm
            preflight.check_keys(spec)
        self.plugins = plugins or get_plugins()
        reg = self.plugins.registry
        self.agent_entry = reg("agents").get(spec.agent)
        self.dataset_entry = reg("datasets").get(spec.dataset)
        reader_name = resolved.reader if resolved else spec.reader or ("llm" if spec.llm else "extractive")
        self.reader_entry = reg("readers").get(reader_name)
        #: the stored recalls of --from RUN, by (sample id, question id); None: a live agent
        self.replayed: dict[tuple[str, str], QuestionRecord] | None = None
        self.agent_factory = self.agent_entry.load() if spec.from_run is None else None
        builder_cls = self.dataset_entry.load()
        self.builder = builder_cls()
        if self.agent_factory is not None:  # capabilities it declares but malformed: one line now, not mid-run
            preflight.plugin(self.agent_factory, f"agent {spec.agent!r}")
        preflight.plugin(self.builder, f"dataset {spec.dataset!r}")
        if resolved is None:
            agent_values = (opts.resolve(options_of(self.agent_factory), spec.agent_options, f"agent {spec.agent!r}")
                            if spec.from_run is None else dict(spec.agent_options))
            dataset_values = opts.resolve(options_of(self.builder), spec.dataset_options, f"dataset {spec.dataset!r}")
        else:
            agent_values, dataset_values = dict(resolved.agent_options), dict(resolved.dataset_options)
        preflight.check_spec(spec)
        preflight.check_judge(spec.judge, spec.judge_prompt, self.plugins)
        self.data = Path(spec.data).expanduser() if spec.data else None
        self._data_sha256: dict[str, str] | None = None
        #: warnings the loader logged (see :meth:`samples`)
        self.data_warnings: list[str] = []
        self._loaded: list[Sample] | None = None
        #: what --limit drew (memplug.sampling), for run.json's resolved.limit; None: no --limit
        self.drawn: dict[str, Any] | None = None
        self.info: DatasetInfo = dataset_info(self.builder, dataset_values, self.data)
        #: the dataset's answer protocol: prompt, reply parsing, memory unit, depth (memplug.answering)
        self.protocol = protocol_of(self.info)
        top_k = spec.top_k or self.protocol.top_k or DEFAULT_TOP_K
        chunk_size = (spec.chunk_size or self.protocol.chunk_size or default_chunk_size(self.agent_factory)
                      or self.info.default_chunk_size)
        # one whole message per chunk, as the benchmark's official code feeds its memories
        memory_unit = "message" if spec.chunk_size is None and self.protocol.unit == "message" else f"{chunk_size} tokens"
        encoding()  # load the tokenizer now (set-up), not inside the first sample's timings
        self.llm = self._make_llm(spec.llm) if spec.llm else None
        self.judge_llm = self._make_llm(spec.judge) if spec.judge else None
        if reader_name == "llm" and self.llm is None:
            raise MemplugError("the llm reader needs a model: pass --llm MODEL or set MEMPLUG_LLM")
        #: what runs the samples (memplug.executors; None: this process), set by run()
        self.executor: Any = None
        #: set by a Ctrl-C: the samples end at their next stop point (see :meth:`run_here`)
        self._stopping = threading.Event()
        if resolved is None:
            agent_note = None
            if spec.from_run is None:  # the agent's preflight may change its values and say so
                agent_values, agent_note = preflight.agent(self.agent_factory, spec.agent, agent_values,
                                                           spec.agent_options, self.llm)
            resolved = ResolvedSpec(reader_name, agent_values, dataset_values, top_k, chunk_size, memory_unit,
                                    agent_note)
        #: the spec resolved, once: what the runner uses and run.json records as is
        self.resolved: ResolvedSpec = resolved
        if spec.from_run is not None:
            self.replayed = _stored_recalls(Path(spec.from_run), self.top_k)
        if check:
            for role, llm in (("--llm", self.llm), ("--judge", self.judge_llm)):
                if llm is not None:
                    preflight.check_llm(llm, role)
            preflight.check_embedder(spec.embedder, self.llm)
        self.token_counts = TokenCounts.on_disk(spec.cache)
        reader_factory = self.reader_entry.load()
        preflight.plugin(reader_factory, f"reader {self.reader_name!r}")
        self.reader = reader_factory(ReaderConfig(llm=self.llm, language=self.info.language))
        metric_names = list(dict.fromkeys([*self.info.metrics, "recall@K", *(["judge"] if spec.judge else [])]))
        mconfig = MetricConfig(top_k=self.top_k, language=self.info.language, judge=self.judge_llm,
                               judge_name=spec.judge_prompt, choices=self.protocol.choices)
        entries = [reg("metrics").get(n) for n in metric_names]
        self.metric_entries = [e for e in entries if spec.judge or not e.info.get("needs_judge")]
        self.metrics = [e.load()(mconfig) for e in self.metric_entries]
        for entry, metric in zip(self.metric_entries, self.metrics):
            preflight.plugin(metric, f"metric {entry.name!r}")

    # -- the resolved spec, by the names the runner reads ------------------------
    @property
    def reader_name(self) -> str:
        return self.resolved.reader

    @property
    def agent_values(self) -> dict[str, Any]:
        return self.resolved.agent_options

    @property
    def dataset_values(self) -> dict[str, Any]:
        return self.resolved.dataset_options

    @property
    def top_k(self) -> int:
        return self.resolved.top_k

    @property
    def chunk_size(self) -> int:
        return self.resolved.chunk_size

    @property
    def per_message(self) -> bool:
        return self.resolved.memory_unit == "message"

    @property
    def agent_note(self) -> str | None:
        return self.resolved.agent_note

    def _make_llm(self, model: str) -> LLM:
        return LLM(model, api_base=self.spec.api_base, use_cache=self.spec.cache,
                   concurrency=max(self.spec.concurrency, 1), timeout=self.spec.llm_timeout,
                   max_retries=self.spec.llm_retries, deadline=self.spec.llm_deadline,
                   adaptive=self.spec.concurrency_auto)

    # -- data -----------------------------------------------------------------
    def samples(self) -> list[Sample]:
        """The samples to run: a samples .jsonl at --data, or the builder's, cut to --limit.

        What a loader logs as a warning while it reads (a thing it could skip safely, e.g.
        an evidence id that names no turn) is collected into :attr:`data_warnings`, for
        run.json and one line on stderr, instead of one line per occurrence.
        """
        if self._loaded is None:
            with _collect_warnings() as self.data_warnings:
                self._loaded = self._samples()
        return self._loaded

    def _samples(self) -> list[Sample]:
        data = self.data
        if data is not None and not data.exists():
            raise MemplugError(f"--data {data}: no such file or directory")
        if data is not None and is_sample_file(data):
            built: Iterable[Sample] = read_samples(data)
        else:
            # No LLM here: --llm answers questions. Rewording generated data is `memplug generate
            # --llm`'s job, so that evaluated data is fixed and reusable.
            built = self.builder.build(BuildOptions(values=self.dataset_values, data=data, seed=self.spec.seed))
        if self.spec.limit is not None and self.spec.limit_by == "stratified":
            built, self.drawn = sampling.stratified(built, self.spec.limit, self.spec.seed)
        elif self.spec.limit is not None:
            self.drawn = {"by": "first", "n": self.spec.limit}
        return select_questions(built, self.spec.limit)

    # -- run files ------------------------------------------------------------
    def versions(self) -> dict[str, Any]:
        """For run.json: memplug, Python, each plugin used, the dataset and every metric version."""
        plugins: dict[str, str | None] = {}
        for e in (self.agent_entry, self.dataset_entry, self.reader_entry, *self.metric_entries):
            plugins[e.plugin] = e.version
        return {
            "memplug": memplug.__version__,
            "python": platform.python_version(),
            "plugins": plugins,
            "dataset": {"name": self.info.name, "version": self.info.version},
            "metrics": {m.name: m.version for m in self.metrics},
            "chunk_size": self.chunk_size,
        }

    def new_run_dir(self, output: Path, started: str | None = None, name: str | None = None) -> tuple[str, Path]:
        """Create ``<output>/<stamp>-<agent>-<dataset>`` (or ``<output>/<name>``; with -1, -2 ...
        when taken), holding its run.json from the first moment; its id and path. A sweep names
        its cells itself: a second stamp can collide across processes and nodes.

        The directory is filled under a hidden name and renamed into place, so a kill at
        any moment leaves either nothing or a directory that ``--resume`` accepts.
        """
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        base = safe_name(name or f"{stamp}-{self.spec.agent}-{self.spec.dataset}")
        if output.exists() and not output.is_dir():
            raise OutputError(f"--output {output}: is a file, not a directory")
        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"--output {output}: cannot create ({exc.strerror})") from None
        for n in range(1000):
            run_id = base if n == 0 else f"{base}-{n}"
            path = output / run_id
            try:
                path.mkdir()  # claims the name (atomic); the rename below fills it
            except FileExistsError:
                continue
            except OSError as exc:
                raise OutputError(f"--output {output}: cannot write ({exc.strerror})") from None
            staging = output / f".{run_id}.{os.getpid()}.tmp"
            try:
                staging.mkdir()
                write_json_atomic(staging / "run.json",
                                  self.run_json(run_id, started or _now(), "running", 0.0).to_json())
                os.replace(staging, path)  # replaces the empty directory in one step
            except BaseException as exc:  # a full disk, or Ctrl-C half way: leave no empty run directory
                shutil.rmtree(staging, ignore_errors=True)
                with contextlib.suppress(OSError):
                    path.rmdir()
                if isinstance(exc, OSError):
                    raise OutputError(f"--output {output}: cannot write ({exc.strerror or exc})") from None
                raise
            return run_id, path
        raise MemplugError(f"--output {output}: too many runs named {base}")

    def run_json(self, run_id: str, started: str, status: str, wall_s: float, ended: str | None = None,
                 outcome: Outcome | None = None) -> RunInfo:
        """The content of run.json: the spec, what it resolved to, versions, git commit, status
        and the ``outcome`` counts; every string scrubbed of secrets."""
        spec = attrs.asdict(self.spec)
        extra: dict[str, Any] = {}
        judge = self.metrics_by_name().get("judge")
        if isinstance(judge, Describes):
            extra["judge"] = judge.describe()
        # what decides the stage of each miss: the overlap rule, or the judge with a pinned prompt
        extra["diagnosis"] = {"items_without_sources": "judge" if self.judge_llm is not None else "overlap",
                              **({"judge_prompt_sha256": diagnosis.JUDGE_PROMPT_SHA256} if self.judge_llm else {})}
        #: what ran the samples: this process (local), or e.g. Ray workers with their address
        extra["executor"] = self.executor.describe() if self.executor is not None else {"name": "local"}
        #: --llm/--judge local: the GGUF's sha256, llama.cpp's version, window, threads, speed, timeout
        local_models = {role: llm.local_info for role, llm in (("llm", self.llm), ("judge", self.judge_llm))
                        if llm is not None and llm.local_info}
        if local_models:
            extra["local_models"] = local_models
        #: --concurrency auto: each model's limit of calls in flight, where it went and why
        adaptive = {role: llm.adaptive.describe() for role, llm in (("llm", self.llm), ("judge", self.judge_llm))
                    if llm is not None and llm.adaptive is not None}
        if adaptive:
            extra["concurrency_auto"] = adaptive
        return RunInfo.from_json(_scrubbed({
            "schema": SCHEMA,
            "run_id": run_id,
            "spec": spec,
            "resolved": {
                **self.resolved.to_json(),  # the resolved spec, as the runner uses it
                "metrics": [m.name for m in self.metrics],
                "answer_prompt_source": self.info.answer_prompt_source,
                "protocol": self.protocol.describe(),
                "data_sha256": self.data_sha256(),
                "from_run": _from_run_id(self.spec.from_run),
                "data_warnings": {"count": len(self.data_warnings), "first": self.data_warnings[:20]},
                "limit": self.drawn,
                **extra,
            },
            "versions": self.versions(),
            "git": _git_hash(),
            "started": started,
            "ended": ended,
            "wall_s": round(wall_s, 3),
            "status": status,
            **(outcome.to_json() if outcome is not None else {}),
        }), "run.json")

    def data_sha256(self) -> dict[str, str] | None:
        """sha256 of each file the run read from ``--data`` (relative to it; a single file
        under its own name), so that a run can be checked against its inputs later (`memplug
        reproduce`); None for generated data, which its version, options and seed define."""
        if self._data_sha256 is None and self.data is not None and self.data.exists():
            self._data_sha256 = files_sha256(self.data)
        return self._data_sha256

    def metrics_by_name(self) -> dict[str, Any]:
        return {e.name: m for e, m in zip(self.metric_entries, self.metrics)}

    # -- running --------------------------------------------------------------
    def run(self, output: Path | None = None, resume: Path | None = None, progress: Callable[..., Any] | None = None,
            capture_logs: bool = False, verbose: bool = False, executor: Any = None, name: str | None = None) -> Path:
        """Run (or resume) and return the run directory.

        Raises :class:`RunStopped` when a failure stopped the run (the directory is kept
        and resumable) and :class:`RunInterrupted` on Ctrl-C. Questions that failed on
        their own do not raise: the outcome is in run.json and summary.json (``status``,
        ``n_errors``, ``first_error``). ``capture_logs`` sends every log line to
        ``memplug.log`` in the run directory (and stderr too when ``verbose``). ``executor``
        (:mod:`memplug.executors`) runs the samples, in this process by default; ``name``: the
        new run's id (see :meth:`new_run_dir`).
        """
        samples = self.samples()
        # --fail-under names a metric the run scores and a category it asks: a typo fails now, not after the run
        gates.check_names(gates.thresholds(self.spec.fail_under), [m.name for m in self.metrics],
                          {q.category for s in samples for q in s.questions})
        for metric in self.metrics:  # the judges of these questions, named in run.json from the start
            if isinstance(metric, PlansQuestions):
                metric.plan(q for s in samples for q in s.questions)
        self.executor = executor
        if resume is not None:
            run_dir = RunDir(resume).check()
        else:
            if output is None:
                raise MemplugError("no --output directory given")
            run_id, path = self.new_run_dir(Path(output), name=name)
            run_dir = RunDir(path)
        # from here on a Ctrl-C names the directory to resume, whichever line it lands on
        lock = None
        try:
            lock = RunLock(run_dir.path).acquire()
            with logs_to(run_dir.path, verbose) if capture_logs else contextlib.nullcontext():
                return self._run_in(run_dir, samples, resume is not None, progress)
        except KeyboardInterrupt:
            raise RunInterrupted(run_dir.path) from None
        finally:
            if lock is not None:
                lock.release()

    def _run_in(self, run_dir: RunDir, samples: list[Sample], resuming: bool, progress: Callable[..., Any] | None) -> Path:
        path = run_dir.path
        stored = run_dir.info()
        if resuming:
            diffs = self.spec.differences(stored.spec)
            if diffs:
                raise MemplugError(f"cannot resume {path}: options differ from run.json ({'; '.join(diffs)})")
            _check_same_protocol(path, stored.protocol, self.protocol.describe())
            expected = {s.id: {q.id for q in s.questions} for s in samples}
            try:
                kept = keep_complete_samples(run_dir.samples, expected)
            except OSError as exc:
                raise OutputError(f"cannot write {run_dir.samples}: {exc.strerror or exc}") from None
        else:
            kept = []
        run_id = stored.run_id
        started, prior_wall = stored.started or _now(), stored.wall_s
        done = {r.sample_id for r in kept}
        pending = [s for s in samples if s.id not in done]
        n_expected = sum(len(s.questions) for s in samples)
        run = Run(self.spec, run_id, path, self.info)
        log.info("run %s %s: %d of %d questions to ask; spec %s", run_id, "resumed" if resuming else "started",
                 n_expected - sum(len(s.questions) for s in samples if s.id in done), n_expected,
                 json.dumps(_scrubbed(attrs.asdict(self.spec))))
        t0 = time.perf_counter()
        try:
            write_json_atomic(run_dir.run_json, self.run_json(run_id, started, "running", prior_wall).to_json())
        except OSError as exc:
            raise OutputError(f"cannot write {run_dir.run_json}: {exc.strerror or exc}") from None
        self.plugins.hook.memplug_run_start(run=run)
        writer = gates.writer(run_dir.samples, self.spec.max_errors, n_expected)  # --max-errors: a GatedWriter
        self.token_counts.prefetch(pending)
        ran, stop, interrupted = False, None, False
        replaced_handler: Any = None
        summary: RunSummary | None = None
        # Everything alive now (the samples, the loaded modules) lives to the end of the run:
        # frozen, the collector stops rescanning it. Each full collection of a 1,280-sample
        # MemSim run took ~50 ms otherwise, a quarter of a warm rerun.
        gc.freeze()
        try:
            finished = sum(len(s.questions) for s in samples if s.id in done)
            if self.executor is None:
                self.run_here(run, pending, writer, progress, total=n_expected, finished=finished)
            else:  # e.g. Ray: the samples spread over workers, their records written here
                self.executor.run_samples(self, run, pending, writer, progress, total=n_expected, finished=finished)
            ran = True
        except (FatalLLMError, OutputError, _SetupFailed, gates.TooManyErrors) as exc:
            stop = exc
        except KeyboardInterrupt:
            interrupted = True
            replaced_handler = _exit_on_second_interrupt(path)
            raise RunInterrupted(path) from None
        finally:
            gc.unfreeze()
            try:
                writer.close()
            except OutputError as exc:
                stop = stop or exc
            with contextlib.suppress(sqlite3.Error, OSError):
                self.token_counts.save()
            for llm in (self.llm, self.judge_llm):
                if llm is not None:
                    llm.close()  # its I/O thread and connections
            wall = prior_wall + time.perf_counter() - t0
            status, outcome = "interrupted", None
            if ran or stop is not None or interrupted:  # the records on file: those kept and this session's
                records = [*kept, *writer.written]
                outcome = _outcome(records, n_expected, stop, interrupted)
                status = outcome.status
                summary = summarize(records, self.spec.agent, self.spec.dataset, run_id, wall)
                summary.outcome = outcome
                with contextlib.suppress(OSError):  # a full disk: no summary.json; resumable all the same
                    write_json_atomic(run_dir.summary_json, summary.to_json())
            try:
                ended_info = self.run_json(run_id, started, status, wall, _now(), outcome)
                write_json_atomic(run_dir.run_json, ended_info.to_json())
            except OSError:  # a full disk: at least the status, in the blocks run.json already has
                write_status_in_place(run_dir.run_json, status)
            if replaced_handler is not None:
                signal.signal(signal.SIGINT, replaced_handler)
        self.plugins.hook.memplug_run_end(run=run, summary=summary)
        if stop is not None and not isinstance(stop, gates.TooManyErrors):  # --max-errors: failed, not stopped
            raise RunStopped(str(stop), path)
        return path

    def run_here(self, run: Run, samples: list[Sample], writer: RecordSink, progress: Callable[..., Any] | None,
                 total: int, finished: int) -> None:
        """Run the samples in this process: on an event loop in a thread of their own, this
        thread only waiting for it.

        A Ctrl-C reaches the main thread only, and must stop the run within a second whatever
        the agent does. An event loop in the main thread cannot promise that: an agent that
        runs inline (``blocking = False``) never lets the loop see the cancellation (its
        awaits never suspend: 8,000 MemSim samples of bm25 ran to the end past a Ctrl-C), and
        a call hung in a pool thread keeps the loop, and then the interpreter's exit, waiting
        on it. Waiting here, the KeyboardInterrupt comes at once: the samples are told to stop
        (checked between chunks and questions, :meth:`_stop_point`), given STOP_GRACE_S to
        end, and a thread still busy is left behind (the writer drops what it writes late).
        """
        self._stopping.clear()
        started = threading.Event()
        held: dict[str, Any] = {}

        async def main() -> None:
            held["loop"], held["task"] = asyncio.get_running_loop(), asyncio.current_task()
            started.set()
            await self._run_samples(run, samples, writer, progress, total=total, finished=finished)

        def target() -> None:
            try:
                asyncio.run(main())
            except BaseException as exc:  # handed to the waiting thread, which raises it
                held["error"] = exc
            finally:
                started.set()

        # the caller's context (an LLM usage scope, say) goes with the samples
        thread = threading.Thread(target=contextvars.copy_context().run, args=(target,), daemon=True,
                                  name="memplug-samples")
        thread.start()
        try:
            thread.join()
        except KeyboardInterrupt:
            self._stopping.set()
            started.wait(STOP_GRACE_S)
            loop, task = held.get("loop"), held.get("task")
            if loop is not None and task is not None:
                with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                    loop.call_soon_threadsafe(task.cancel)
            thread.join(STOP_GRACE_S)
            raise
        error = held.get("error")
        if error is not None:
            raise error

    def _stop_point(self) -> None:
        """Between two agent calls: end the sample here when a Ctrl-C asked the run to stop."""
        if self._stopping.is_set():
            raise asyncio.CancelledError

    async def _run_samples(self, run: Run, samples: list[Sample], writer: RecordSink,
                           progress: Callable[..., Any] | None, total: int, finished: int) -> None:
        width = max(self.spec.concurrency, 1)
        pool = AgentThreads(width)
        tick = progress(total, finished) if progress else (lambda n=1: None)
        work = run.path / "work"  # each sample's agent gets a folder in it
        sink = RunSink(writer, run.path)
        queue = iter(samples)

        # `width` workers taking the next sample in dataset order, rather than a task per
        # sample behind a semaphore: no task and no semaphore wake-up per sample.
        async def worker() -> None:
            for sample in queue:
                self._stop_point()
                result = await self.run_sample(work, sample, pool, sink, tick)
                self.plugins.hook.memplug_sample_end(run=run, sample=sample, records=result.records)

        try:
            await asyncio.gather(*(worker() for _ in range(min(width, len(samples)))))
        finally:
            pool.shutdown()

    def _method(self, pool: "AgentThreads", obj: Any, name: str, limit: float | None = None,
                flag: str = "--sample-timeout") -> Callable[..., Awaitable[Any]]:
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
        limit = self.spec.sample_timeout if limit is None else limit

        async def timed(call: Awaitable[Any]) -> Any:
            try:
                return await asyncio.wait_for(call, limit)
            except asyncio.TimeoutError:
                pool.give_up()
                what = name.lstrip("_").replace("_", " ")
                raise SampleTimeout(f"the agent's {what} did not return within {limit:g} s "
                                    f"({flag}): given up") from None

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
        """Whether building an agent may block (see :meth:`_method`)."""
        return is_blocking(self.agent_factory)

    def _build_agent(self, config: AgentConfig, workdir: Path) -> Any:
        assert self.agent_factory is not None  # None only with --from, which builds no agent
        if self.blocking:  # in-memory agents (blocking = False) store nothing: spare the mkdir
            workdir.mkdir(parents=True, exist_ok=True)
        return self.agent_factory(config, workdir)

    async def run_sample(self, work: Path, sample: Sample, pool: "AgentThreads", sink: SampleSink,
                         tick: Callable[..., Any]) -> SampleResult:
        """Run one sample: build its agent in ``work``, ingest, list what it stored, ask each
        question, score and diagnose. Each record and the stored line go to ``sink`` as they
        are made (the driver writes them at once, so a kill loses little) and come back in the
        :class:`SampleResult`. Writes no run file itself: the driver (:meth:`run`, or a Ray
        executor's) owns the run directory. ``tick``: called once per question (progress)."""
        workdir = work / safe_name(sample.id)
        config = AgentConfig(
            options=self.agent_values, llm=self.llm, embedder=self.spec.embedder, top_k=self.top_k,
            chunk_size=self.chunk_size, seed=self.spec.seed, language=self.info.language, sample_id=sample.id,
            reference=ReferenceChannel.of(sample) if self.agent_entry.info.get("reference") else None,
            api_base=self.spec.api_base,
        )
        agent: Any = None
        ingest_error: str | None = None
        #: why the agent is given up (a call past --sample-timeout): no later call, not even close
        hung: str | None = None
        if self.replayed is not None:  # --from RUN: the recalls are stored; nothing to build or ingest
            agent = _Replay(self.replayed, sample.id, self.top_k)
        # memplug's work: not timed
        chunks = ([] if agent is not None else [Chunk(i, (m,)) for i, m in enumerate(sample.messages)]
                  if self.per_message
                  else list(chunk_messages(sample.messages, self.chunk_size, self.token_counts.of(sample))))
        setup_s = ingest_s = 0.0
        settle_s: float | None = None
        with usage_scope() as ingest_usage:
            t0 = time.perf_counter()
            try:
                if agent is None:
                    agent = await self._method(pool, self, "_build_agent")(config, workdir)
            except MemplugError as exc:  # configuration (a missing server, extra or model): every sample would fail
                if isinstance(exc, LLMError) and not isinstance(exc, FatalLLMError):
                    ingest_error = f"agent set-up failed: {_describe(exc)}"
                else:
                    raise _SetupFailed(f"agent {self.spec.agent!r} could not be set up: {scrub(str(exc))}") from None
            except Exception as exc:
                ingest_error = f"agent set-up failed: {_describe(exc)}"
                hung = str(exc) if isinstance(exc, SampleTimeout) else None
            tame_loguru()  # the agent's libraries may have imported loguru just now
            t1 = time.perf_counter()
            setup_s = t1 - t0
            try:
                if agent is not None and chunks:
                    ingest = self._method(pool, agent, "ingest")
                    for chunk in chunks:
                        self._stop_point()
                        await ingest(chunk)
                ingest_s = time.perf_counter() - t1 if chunks else 0.0  # --from: nothing was ingested
                if agent is not None and chunks and settles(agent):  # its ingestion finishes in the background
                    self._stop_point()
                    await self._method(pool, agent, "settle", self.spec.settle_timeout, "--settle-timeout")()
                    settle_s = time.perf_counter() - t1 - ingest_s
            except FatalLLMError:
                raise
            except Exception as exc:
                ingest_error = f"ingest failed: {_describe(exc)}"
                hung = str(exc) if isinstance(exc, SampleTimeout) else None
        records = []
        recall: Callable[..., Awaitable[Any]] | None = None
        if agent is not None:
            recall_call = self._method(pool, agent, "recall")

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
                store = diagnosis.Store.of(listed, self.info.language) if listed is not None else None
            # the stage at which each miss lost its evidence, against the whole store (memplug.diagnosis)
            headline = diagnosis.headline_metric([m.name for m in self.metrics])
            conversation = diagnosis.Conversation({m.id: m.text for m in sample.messages}, self.info.language)
            points = diagnosis.sample_points(sample.meta.get(diagnosis.MEMORY_POINTS_KEY), store, conversation)
            for question in sample.questions:
                self._stop_point()
                record = await self._ask(recall, question, sample,
                                         ingest_error or (f"not asked: {hung}" if hung else None))
                record.diagnosis = diagnosis.diagnose(record, headline, conversation, store, self.info.language,
                                                      points)
                if self.judge_llm is not None and record.diagnosis is not None and "overlap" in record.diagnosis.rule:
                    await self._judge_storage(record, conversation, store)
                if self.replayed is not None and (source := self.replayed.get(record.key)) is not None:
                    record.diagnosis = diagnosis.carried(record.diagnosis, source.diagnosis)  # what its agent stored
                record.timings.setup_s, record.timings.ingest_s = round(setup_s, 6), round(ingest_s, 6)
                record.timings.settle_s = None if settle_s is None else round(settle_s, 6)
                record.timings.n_messages = len(sample.messages)
                record.ingest_usage = ingest_usage.snapshot()
                sink.write(record)
                records.append(record)
                tick()
        finally:
            if agent is not None and hung is None:
                try:
                    await self._method(pool, agent, "close")()
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
                record.timings = Timings(setup_s=0.0, ingest_s=0.0, n_messages=len(sample.messages))
                out.append(record)
            return out

        return asyncio.run(records())

    async def _judge_storage(self, record: QuestionRecord, conversation: diagnosis.Conversation,
                             store: diagnosis.Store | None) -> None:
        """With ``--judge``: the judge, not the overlap rule, decides whether items that name no
        source hold the record's evidence (:func:`memplug.diagnosis.judged`); its calls count in
        the question's usage. A diagnostic: a failed call is logged and the overlap rule's
        diagnosis kept."""
        assert self.judge_llm is not None
        with usage_scope() as usage:
            try:
                record.diagnosis = await diagnosis.judged(record, conversation, store, self.judge_llm,
                                                          self.info.language)
            except FatalLLMError:
                raise
            except Exception as exc:
                log.warning("question %s/%s: the judge could not diagnose it, the overlap rule stands: %s",
                            record.sample_id, record.question_id, _describe(exc))
        if record.usage is not None:
            record.usage = record.usage.plus(usage.snapshot())

    async def _list_stored(self, pool: "AgentThreads", agent: Any,
                           sample_id: str) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
        """What the agent holds after ingestion, from its optional ``stored()``
        (:mod:`memplug.stored`): every listed item, which the questions' diagnoses are computed
        against, and the sample's line of stored.jsonl. Untimed, and never the run's failure:
        an error is logged and nothing is recorded (None, None)."""
        try:
            listed = await self._method(pool, agent, "stored")()
        except Exception as exc:
            log.warning("sample %s: the agent's stored() failed, nothing recorded: %s", sample_id, _describe(exc))
            return None, None
        return stored_file.line_of(sample_id, listed)

    async def _ask(self, recall_method: Callable[..., Awaitable[Any]] | None, question: Question, sample: Sample,
                   ingest_error: str | None) -> QuestionRecord:
        record = QuestionRecord(
            sample_id=sample.id, question_id=question.id, category=question.category, question=question.text,
            gold=list(question.answers), choices=dict(question.choices) if question.choices else None,
            correct_choice=question.correct_choice, targets=list(question.targets), anchors=list(question.anchors),
            question_time=question.time, question_meta=_jsonable(question.meta), error=ingest_error,
        )
        if ingest_error or recall_method is None:
            return record
        need = self.info.needs.get(question.category)
        unable = need if need in reader_cannot(self.reader) else None
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
                    record.unanswerable = f"the {self.reader_name} reader cannot do {unable}"
                else:  # --context-tokens: the items that fit the budget, whole and in rank order
                    shown, record.context = budget.cut(recall.items, self.spec.context_tokens)
                    reply = await self.reader.answer(asked, shown, self.info)
                # a category's own parser reads replies to the protocol's prompts only (not an agent's
                # own answer, nor an extractive span)
                prompted = recall.answer is None and prompts_with_protocol(self.reader)
                prediction = None if reply is None else self.protocol.parse_reply(reply, asked if prompted else None)
                t2 = time.perf_counter()
                record.prediction, record.reply = prediction, reply
                record.agent_answered, record.meta = recall.answer is not None, _jsonable(recall.meta)
                record.recalled = list(recall.items)
                record.timings = Timings(recall_s=round(t1 - t0, 6), read_s=round(t2 - t1, 6))
                ctx = ScoreContext(question, prediction or "", recall.items, self.info.language, recall.meta, reply)
                raw = reply if self.protocol.score_raw_too else None
                for metric in self.metrics:
                    if prediction is not None or not reads_answer(metric):
                        record.scores[metric.name] = await score_with(metric, ctx, raw)
            except FatalLLMError:
                raise
            except Exception as exc:
                record.error = _describe(exc)
                record.scores = {}
                log.warning("question %s/%s failed: %s", sample.id, question.id, record.error)
        record.usage = usage.snapshot()
        return record


class _Replay:
    """The stand-in agent of ``eval --from RUN``: the recalled items (and an answer the agent
    wrote itself) that the earlier run stored, question by question. Changing the reader,
    the LLM, the judge or the protocol's parsing then costs the answers, never a re-ingestion
    of the haystack, which for long benchmarks is most of a run's time and money."""

    blocking = False

    def __init__(self, stored: dict[tuple[str, str], QuestionRecord], sample_id: str, top_k: int) -> None:
        self.stored, self.sample_id, self.top_k = stored, sample_id, top_k

    def recall(self, question: AgentQuestion) -> Recall:
        record = self.stored.get((self.sample_id, question.id))
        if record is None:
            raise MemplugError(f"the --from run has no record of question {self.sample_id}/{question.id}")
        if record.error:
            raise MemplugError(f"the --from run failed on this question: {record.error}")
        answer = (record.reply or record.prediction) if record.agent_answered else None
        return Recall(tuple(record.recalled[: self.top_k]), answer=answer, meta=record.meta)

    def close(self) -> None:
        """Nothing is held."""


def _stored_recalls(path: Path, top_k: int) -> dict[tuple[str, str], QuestionRecord]:
    """The records of a finished run, by (sample id, question id), for ``eval --from``."""
    run = RunDir(path).check()
    stored = run.info()
    if stored.status not in ("finished", "partial"):
        raise MemplugError(f"--from {path}: the run is {stored.status!r}; finish it first "
                           f"(memplug eval --resume {path})")
    recalled = stored.top_k
    if top_k > recalled:
        raise MemplugError(f"--from {path}: it recalled {recalled} items per question; --top-k {top_k} "
                           "cannot be answered from them")
    return {r.key: r for r in run.records()}


def _from_run_id(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return RunDir(Path(path)).info().run_id
    except (MemplugError, OSError):
        return None


class _WarningList(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(scrub(record.getMessage()))


@contextlib.contextmanager
def _collect_warnings() -> Any:
    """Warnings logged meanwhile (by any logger), into the list yielded."""
    found: list[str] = []
    handler = _WarningList(found)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield found
    finally:
        root.removeHandler(handler)


def _check_same_protocol(path: Path, stored: Mapping[str, Any] | None, now: Mapping[str, Any]) -> None:
    """A resumed run asks its remaining questions as it asked the others: the same options
    can mean another protocol under another memplug (LoCoMo's default became the official
    per-category prompts in protocol version 2), and one run must not mix two."""
    if not stored:  # a run from before protocols were recorded
        return
    keys = ("name", "version", "variations", "sha256", "parse", "parse_by_category")
    if any(stored.get(k) != now.get(k) for k in keys):
        def label(d: Mapping[str, Any]) -> str:
            return f"{d.get('name')} v{d.get('version')}{' (' + ', '.join(d['variations']) + ')' if d.get('variations') else ''}"

        raise MemplugError(f"cannot resume {path}: it was asked under the answer protocol {label(stored)}, this "
                           f"memplug asks under {label(now)}; finish it with the memplug that began it, or "
                           "start a new run")


class _SetupFailed(MemplugError):
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


def _exit_on_second_interrupt(run_dir: Path) -> Any:
    """After a first Ctrl-C, while the run's files are written: a second Ctrl-C ends the
    process at once, with one line and no traceback (raised inside that writing, or inside
    the interpreter's exit that waits for an agent's hung thread, it was a traceback).
    Returns the handler replaced, to put back; None where none was replaced (not the main
    thread, or a handler of the caller's own, which keeps its say)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        return None

    def now(signum: int, frame: Any) -> None:
        with contextlib.suppress(Exception):
            sys.stderr.write(f"memplug: interrupted again: stopped at once; finish the run with: "
                             f"memplug eval --resume {run_dir}\n")
            sys.stderr.flush()
        os._exit(130)

    return signal.signal(signal.SIGINT, now)


def _describe(exc: BaseException) -> str:
    """One line for a record, scrubbed of secrets: the exception and where it was raised."""
    if isinstance(exc, SampleTimeout):  # where it was raised (the runner) says nothing
        return str(exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return scrub(f"{type(exc).__name__}: {text}{where}" if text else f"{type(exc).__name__}{where}")


def _outcome(records: Sequence[QuestionRecord], n_expected: int, stop: BaseException | None,
             interrupted: bool = False) -> Outcome:
    """The run's status and what it rests on: ``interrupted`` after a Ctrl-C (the records
    so far are summed up all the same); else ``finished`` only when every expected
    question has a record without an error; ``failed`` when none has; else ``partial``."""
    answered = sum(1 for r in records if not r.error)
    first = next((r.error for r in records if r.error), None)
    if stop is not None and not isinstance(stop, gates.TooManyErrors):
        first = scrub(str(stop))
    status = "finished" if answered == n_expected and stop is None else "failed" if answered == 0 else "partial"
    if isinstance(stop, gates.TooManyErrors):  # --max-errors: the run is failed, however many were answered
        status = "failed"
    if interrupted:
        return Outcome("interrupted", n_expected, answered, n_expected - answered, first, "interrupted (Ctrl-C)")
    return Outcome(status, n_expected, answered, n_expected - answered, first,
                   scrub(str(stop)) if stop is not None else None)


def _scrubbed(value: Any) -> Any:
    """``value`` with every string scrubbed of secrets (for run.json)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrubbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _jsonable(value: Any) -> Any:
    """``value`` with mappings as dicts of string keys, collections as lists, others as str."""
    if type(value) in _PLAIN:  # the common case first: most metadata is already plain
        return value
    if isinstance(value, dict) or hasattr(value, "items"):
        return {k if type(k) is str else str(k): v if type(v) in _PLAIN else _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
