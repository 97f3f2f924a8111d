"""The typed content of a run's files: a question's record (a line of samples.jsonl), a
run's summary (summary.json) and the schema version that run.json and summary.json carry.

Each class converts to and from the JSON the run files hold, key for key and in the same
order (``to_json`` / ``from_json``), so that a record read and written again is the same
line. Files are read and written by :mod:`memplug.results`; nothing else parses them.

Schema versions: files without ``"schema"`` were written before it existed and are read as
version 1 (the same layout, some keys missing in the oldest runs); this memplug writes
:data:`SCHEMA`. A file from a newer version is refused with one line (:func:`check_schema`)
rather than misread.
"""

from __future__ import annotations

import json
from typing import Any, Generic, Mapping, TypeVar

import attrs
import orjson

from memplug.diagnosis import Diagnosis
from memplug.errors import DataError, MemplugError
from memplug.models import DEFAULT_TOP_K, Recalled

#: the version of the run files' layout this memplug writes (and the newest it reads)
SCHEMA = 2

T = TypeVar("T")


def check_schema(obj: Mapping[str, Any], where: object) -> int:
    """The schema version of a run file's content (1 when it has none), or MemplugError
    for a version newer than this memplug reads."""
    version = obj.get("schema", 1)
    if type(version) is not int or version < 1:
        raise DataError(where, f"schema {version!r} is not a memplug schema version")
    if version > SCHEMA:
        raise MemplugError(
            f"{where}: written by a newer memplug (schema {version}; this one reads up to "
            f"{SCHEMA}): upgrade memplug to read it"
        )
    return version


def json_number(value: Any) -> Any:
    """orjson's fallback for the types json.dumps also takes: float and int subclasses as
    plain numbers; TypeError for anything else."""
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        return int(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@attrs.define(slots=True)
class LLMUsage:
    """LLM calls and their cost (a question's answer and scoring, a sample's ingestion, a run)."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
        }

    def plus(self, other: "LLMUsage") -> "LLMUsage":
        """Both usages together (a question's answer and its diagnosis by the judge)."""
        return LLMUsage(
            self.calls + other.calls,
            self.cache_hits + other.cache_hits,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
        )

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> "LLMUsage | None":
        """None for an empty object (``{}``: nothing was attempted, e.g. a question whose
        sample failed to ingest), which is written back as ``{}``."""
        if not obj:
            return None
        return cls(
            obj.get("calls", 0),
            obj.get("cache_hits", 0),
            obj.get("prompt_tokens", 0),
            obj.get("completion_tokens", 0),
            obj.get("cost_usd", 0.0),
        )


def _usage_json(usage: LLMUsage | None) -> dict[str, Any]:
    return usage.to_json() if usage is not None else {}


@attrs.define(slots=True)
class Timings:
    """A record's timings in seconds. ``setup_s``, ``ingest_s``, ``settle_s`` and ``n_messages`` belong to
    the whole sample (repeated on each of its records); ``recall_s`` and ``read_s`` to the
    question, absent when it failed before them. A None is left out of the JSON."""

    setup_s: float | None = None
    ingest_s: float | None = None
    n_messages: int | None = None
    recall_s: float | None = None
    read_s: float | None = None
    #: the agent's settle() after ingestion (protocols.Settles); None for agents without one
    settle_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in (
                ("setup_s", self.setup_s),
                ("ingest_s", self.ingest_s),
                ("settle_s", self.settle_s),
                ("n_messages", self.n_messages),
                ("recall_s", self.recall_s),
                ("read_s", self.read_s),
            )
            if v is not None
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> "Timings":
        obj = obj or {}
        return cls(
            obj.get("setup_s"),
            obj.get("ingest_s"),
            obj.get("n_messages"),
            obj.get("recall_s"),
            obj.get("read_s"),
            obj.get("settle_s"),
        )


def _recalled(obj: Any) -> Recalled:
    return Recalled(obj.get("text", ""), obj.get("score"), tuple(obj.get("message_ids") or ()))


@attrs.define(slots=True)
class QuestionRecord:
    """One question's result: a line of samples.jsonl (see docs/run-files.md, "samples.jsonl").

    The question as asked (sample_id ... question_meta), what the agent did (recalled,
    agent_answered, meta), the answer (reply: the raw text; prediction: after the
    protocol's parser), its scores, timings, LLM usage, and an error (None when answered)
    or why the reader could not answer (``unanswerable``, left out of the JSON when None),
    why a metric that applies gave no score (``unscored``: {"judge": "unreadable verdict"},
    left out when None),
    and the stage at which a miss lost its evidence (``diagnosis``, :mod:`memplug.diagnosis`;
    left out when None: an unscored question, or a run from before diagnoses).
    """

    sample_id: str
    question_id: str
    category: str
    question: str
    prediction: str | None = None
    reply: str | None = None
    gold: list[str] = attrs.Factory(list)
    choices: dict[str, str] | None = None
    correct_choice: str | None = None
    targets: list[str] = attrs.Factory(list)
    anchors: list[str] = attrs.Factory(list)
    question_time: str | None = None
    question_meta: dict[str, Any] = attrs.Factory(dict)
    recalled: list[Recalled] = attrs.Factory(list)
    agent_answered: bool = False
    #: per metric; None: not applicable to this question
    scores: dict[str, float | None] = attrs.Factory(dict)
    timings: Timings = attrs.Factory(Timings)
    #: the question's LLM calls; None (``{}``) when it was never asked
    usage: LLMUsage | None = None
    error: str | None = None
    #: what the agent's Recall carried besides its items
    meta: dict[str, Any] = attrs.Factory(dict)
    unanswerable: str | None = None
    #: what --context-tokens let the reader see (memplug.budget.cut); None (left out): no budget
    context: dict[str, Any] | None = None
    #: the sample's ingestion (repeated on each of its records); None (``{}``) when none ran
    ingest_usage: LLMUsage | None = None
    diagnosis: Diagnosis | None = None
    #: per metric that applies but gave no score, why (memplug.judge.UNREADABLE); None: none
    unscored: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as samples.jsonl holds it."""
        out = {
            "sample_id": self.sample_id,
            "question_id": self.question_id,
            "category": self.category,
            "question": self.question,
            "prediction": self.prediction,
            "reply": self.reply,
            "gold": self.gold,
            "choices": self.choices,
            "correct_choice": self.correct_choice,
            "targets": self.targets,
            "anchors": self.anchors,
            "question_time": self.question_time,
            "question_meta": self.question_meta,
            "recalled": [i.as_dict() for i in self.recalled],
            "agent_answered": self.agent_answered,
            "scores": self.scores,
            "timings": self.timings.to_json(),
            "usage": _usage_json(self.usage),
            "error": self.error,
            "meta": self.meta,
        }
        if self.unanswerable is not None:
            out["unanswerable"] = self.unanswerable
        if self.context is not None:
            out["context"] = self.context
        out["ingest_usage"] = _usage_json(self.ingest_usage)
        if self.diagnosis is not None:
            out["diagnosis"] = self.diagnosis.to_json()
        if self.unscored is not None:
            out["unscored"] = self.unscored
        return out

    def to_line(self) -> bytes:
        """The record as a line of samples.jsonl: compact UTF-8 JSON and a newline.

        orjson rather than json: encoding the records was a tenth of a warm rerun's time
        with json.dumps (see docs/performance.md).
        """
        return orjson.dumps(
            self.to_json(), default=json_number, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE
        )

    @classmethod
    def from_json(cls, obj: Any) -> "QuestionRecord":
        """A record from its JSON object; KeyError or TypeError when it is not one. Keys
        that the oldest runs lack take their defaults."""
        if not isinstance(obj, dict):
            raise TypeError(f"a record is an object, not {type(obj).__name__}")
        return cls(
            sample_id=obj["sample_id"],
            question_id=obj["question_id"],
            category=obj["category"],
            question=obj["question"],
            prediction=obj.get("prediction"),
            reply=obj.get("reply"),
            gold=obj.get("gold") or [],
            choices=obj.get("choices"),
            correct_choice=obj.get("correct_choice"),
            targets=obj.get("targets") or [],
            anchors=obj.get("anchors") or [],
            question_time=obj.get("question_time"),
            question_meta=obj.get("question_meta") or {},
            recalled=[_recalled(i) for i in obj.get("recalled") or ()],
            agent_answered=bool(obj.get("agent_answered")),
            scores=obj.get("scores") or {},
            timings=Timings.from_json(obj.get("timings")),
            usage=LLMUsage.from_json(obj.get("usage")),
            error=obj.get("error"),
            meta=obj.get("meta") or {},
            unanswerable=obj.get("unanswerable"),
            context=obj.get("context"),
            ingest_usage=LLMUsage.from_json(obj.get("ingest_usage")),
            diagnosis=Diagnosis.from_json(obj["diagnosis"]) if obj.get("diagnosis") else None,
            unscored=obj.get("unscored"),
        )

    @classmethod
    def from_line(cls, line: bytes) -> "QuestionRecord":
        """A line of samples.jsonl (as :meth:`to_line` writes it, or json.dumps, which
        earlier versions used and which may write NaN, which orjson rejects); ValueError
        when it is not a record."""
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = json.loads(line)
        try:
            return cls.from_json(obj)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a record ({type(exc).__name__}: {exc})") from None

    @property
    def key(self) -> tuple[str, str]:
        """(sample id, question id): question ids repeat across samples."""
        return self.sample_id, self.question_id


@attrs.define(slots=True)
class Breakdown(Generic[T]):
    """A value per metric, overall and per category (summary.json's ``metrics``, ``n``, ``ci.na``)."""

    overall: dict[str, T] = attrs.Factory(dict)
    by_category: dict[str, dict[str, T]] = attrs.Factory(dict)

    def to_json(self) -> dict[str, Any]:
        return {"overall": self.overall, "by_category": self.by_category}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> "Breakdown[Any]":
        obj = obj or {}
        return cls(obj.get("overall") or {}, obj.get("by_category") or {})

    def get(self, category: str | None) -> dict[str, T]:
        """The values of one category, ``overall`` (or None) for the whole run; {} for an unknown one."""
        if category is None or category == "overall":
            return self.overall
        return self.by_category.get(category) or {}

    def renamed(self, rename: Any) -> "Breakdown[T]":
        """With each metric name passed through ``rename``."""
        return Breakdown(
            {rename(k): v for k, v in self.overall.items()},
            {c: {rename(k): v for k, v in m.items()} for c, m in self.by_category.items()},
        )


@attrs.define(slots=True)
class Intervals:
    """summary.json's ``ci``: an interval per metric ([low, high], or None where it cannot be
    estimated, ``na`` then saying why), overall and per category."""

    method: str
    level: float
    resamples: int
    overall: dict[str, list[float] | None] = attrs.Factory(dict)
    by_category: dict[str, dict[str, list[float] | None]] = attrs.Factory(dict)
    #: why an interval is None, per metric ("1 sample"); None in runs from before it was written
    na: Breakdown[str] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": self.method,
            "level": self.level,
            "resamples": self.resamples,
            "overall": self.overall,
            "by_category": self.by_category,
        }
        if self.na is not None:
            out["na"] = self.na.to_json()
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Intervals":
        na = obj.get("na")
        return cls(
            obj.get("method", ""),
            obj.get("level", 0.95),
            obj.get("resamples", 1000),
            obj.get("overall") or {},
            obj.get("by_category") or {},
            Breakdown.from_json(na) if na is not None else None,
        )

    @property
    def breakdown(self) -> Breakdown[list[float] | None]:
        """The intervals (overall and by_category, the same dicts) as a :class:`Breakdown`,
        so that a category is looked up and a metric renamed as in ``metrics``, ``n`` and ``na``."""
        return Breakdown(self.overall, self.by_category)

    def get(self, category: str | None) -> dict[str, list[float] | None]:
        return self.breakdown.get(category)

    def renamed(self, rename: Any) -> "Intervals":
        values = self.breakdown.renamed(rename)
        return attrs.evolve(
            self,
            overall=values.overall,
            by_category=values.by_category,
            na=self.na.renamed(rename) if self.na is not None else None,
        )


@attrs.define(slots=True)
class Efficiency:
    """summary.json's ``efficiency``: mean ingestion time per message and recall time per
    question, the run's wall time, and per stage the latency percentiles (``latency_s``:
    ingest, recall, answer, each {p50, p95, p99, max} or None; None in older runs)."""

    ingest_s_per_message: float | None = None
    recall_s_per_question: float | None = None
    wall_s: float = 0.0
    latency_s: dict[str, dict[str, float] | None] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ingest_s_per_message": self.ingest_s_per_message,
            "recall_s_per_question": self.recall_s_per_question,
            "wall_s": self.wall_s,
        }
        if self.latency_s is not None:
            out["latency_s"] = self.latency_s
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> "Efficiency":
        obj = obj or {}
        return cls(
            obj.get("ingest_s_per_message"),
            obj.get("recall_s_per_question"),
            obj.get("wall_s") or 0.0,
            obj.get("latency_s"),
        )


@attrs.define(slots=True)
class Outcome:
    """How a run ended (run.json and summary.json, beside ``status``): see docs/run-files.md."""

    status: str
    n_expected: int
    n_answered: int
    n_failed: int
    first_error: str | None = None
    #: why a failure stopped the run before its end
    stopped: str | None = None

    @property
    def n_unasked(self) -> int:
        """Questions never asked: the run was stopped or interrupted before them."""
        return max(self.n_expected - self.n_answered - self.n_failed, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "n_expected": self.n_expected,
            "n_answered": self.n_answered,
            "n_failed": self.n_failed,
            "first_error": self.first_error,
            "stopped": self.stopped,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Outcome | None":
        """The outcome in a run file, None when it has none (a run from before outcomes)."""
        if "status" not in obj:
            return None
        return cls(
            obj["status"],
            obj.get("n_expected", obj.get("n_questions", 0)),
            obj.get("n_answered", 0),
            obj.get("n_failed", obj.get("n_errors", 0)),
            obj.get("first_error"),
            obj.get("stopped"),
        )


@attrs.define(slots=True)
class RunSummary:
    """summary.json: computed from the records alone (plus the wall time) by
    :func:`memplug.results.summarize`, and the run's outcome."""

    run_id: str
    agent: str
    dataset: str
    n_questions: int
    n_errors: int
    #: means over answered questions
    metrics: Breakdown[float]
    #: None in runs from before intervals
    ci: Intervals | None
    #: questions behind each mean; None in runs from before counts
    n: Breakdown[int] | None
    #: per category the reader could not answer: {"n": ..., "reason": ...}; None in older runs
    unanswerable: dict[str, dict[str, Any]] | None
    efficiency: Efficiency
    llm: LLMUsage
    outcome: Outcome | None = None
    #: questions per stage of a miss (:func:`memplug.diagnosis.tally`); None in runs from before
    #: diagnoses and in runs without a scored question
    diagnosis: dict[str, Any] | None = None
    #: per metric, the answered questions it applied to but could not score (a judge's reply
    #: without a verdict): {"judge": {"n": 4, "of": 5, "reason": "unreadable verdict"}}, where
    #: ``of`` counts the questions it was asked about; None: none (and runs from before)
    unscored: dict[str, dict[str, Any]] | None = None
    #: answered questions (no error), ``overall`` and per category, whatever scored them: a
    #: row's n in the report (its metrics' own counts, ``n``, may each be fewer); None in
    #: runs from before
    answered: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "run_id": self.run_id,
            "agent": self.agent,
            "dataset": self.dataset,
            "n_questions": self.n_questions,
            "n_errors": self.n_errors,
            "metrics": self.metrics.to_json(),
        }
        if self.ci is not None:
            out["ci"] = self.ci.to_json()
        if self.n is not None:
            out["n"] = self.n.to_json()
        if self.unanswerable is not None:
            out["unanswerable"] = self.unanswerable
        if self.diagnosis is not None:
            out["diagnosis"] = self.diagnosis
        if self.unscored is not None:
            out["unscored"] = self.unscored
        if self.answered is not None:
            out["answered"] = self.answered
        out["efficiency"] = self.efficiency.to_json()
        out["llm"] = self.llm.to_json()
        if self.outcome is not None:
            out.update(self.outcome.to_json())
        return out

    @classmethod
    def from_json(cls, obj: Any, where: object) -> "RunSummary":
        """summary.json's content; MemplugError for a newer schema, DataError when it is not a summary."""
        if not isinstance(obj, dict):
            raise DataError(where, "not a memplug summary (expected an object)")
        check_schema(obj, where)
        if not isinstance(obj.get("metrics"), dict):
            raise DataError(where, "no 'metrics' object (not a memplug summary)")
        try:
            return cls(
                run_id=str(obj.get("run_id") or ""),
                agent=str(obj.get("agent") or ""),
                dataset=str(obj.get("dataset") or ""),
                n_questions=obj.get("n_questions", 0),
                n_errors=obj.get("n_errors", 0),
                metrics=Breakdown.from_json(obj["metrics"]),
                ci=Intervals.from_json(obj["ci"]) if obj.get("ci") else None,
                n=Breakdown.from_json(obj["n"]) if obj.get("n") is not None else None,
                unanswerable=obj.get("unanswerable"),
                efficiency=Efficiency.from_json(obj.get("efficiency")),
                llm=LLMUsage.from_json(obj.get("llm")) or LLMUsage(),
                outcome=Outcome.from_json(obj),
                diagnosis=obj.get("diagnosis"),
                unscored=obj.get("unscored"),
                answered=obj.get("answered"),
            )
        except (AttributeError, TypeError) as exc:
            raise DataError(where, f"not a memplug summary ({exc})") from None

    def interval(self, metric: str, category: str | None = None) -> tuple[list[float] | None, str | None]:
        """The interval of a mean ([low, high], None), or (None, why there is none: "1 sample");
        (None, None) where the run recorded no interval for it. A summary written before
        ``ci.na`` had a null interval only for a mean over one sample."""
        if self.ci is None:
            return None, None
        block = self.ci.get(category)
        value = block.get(metric)
        if isinstance(value, list) and len(value) == 2:
            return value, None
        reasons = self.ci.na.get(category) if self.ci.na is not None else {}
        if metric in reasons:
            return None, str(reasons[metric])
        return None, "1 sample" if metric in block else None

    def renamed(self, rename: Any) -> "RunSummary":
        """With each metric name passed through ``rename`` (in metrics, n and ci)."""
        return attrs.evolve(
            self,
            metrics=self.metrics.renamed(rename),
            n=self.n.renamed(rename) if self.n is not None else None,
            ci=self.ci.renamed(rename) if self.ci is not None else None,
        )


#: keys of run.json that :class:`RunInfo` holds as fields, in the order they are written
_RUN_KEYS = (
    "schema",
    "run_id",
    "spec",
    "resolved",
    "versions",
    "git",
    "started",
    "ended",
    "wall_s",
    "status",
    "n_expected",
    "n_answered",
    "n_failed",
    "first_error",
    "stopped",
    "n_questions",
    "n_errors",
)


@attrs.define(slots=True)
class RunInfo:
    """run.json: the spec as given, what it resolved to (``resolved``: reader, depth, metrics,
    protocol, data hashes, judge, executor ...), versions, git commit, times, status and the
    outcome (see docs/run-files.md, "run.json"). Read with :meth:`memplug.results.RunDir.info`.

    ``spec`` and ``resolved`` stay the objects run.json holds (their keys grew with each
    version, and a run from before a key lacks it); the properties below read what the
    commands that read runs use, with the default a run from before the key meant. Keys this
    memplug does not know are kept in ``extra`` and written back after the others, so a
    run.json read and written again is the same file.
    """

    run_id: str
    spec: dict[str, Any]
    resolved: dict[str, Any] = attrs.Factory(dict)
    versions: dict[str, Any] = attrs.Factory(dict)
    git: str | None = None
    started: str | None = None
    ended: str | None = None
    wall_s: float = 0.0
    #: running, finished, partial, failed, interrupted; None in another tool's file
    status: str | None = None
    #: the counts beside ``status``; None while running and in runs from before outcomes
    outcome: Outcome | None = None
    #: None: written before schema versions (read as 1, and written back without it)
    schema: int | None = SCHEMA
    extra: dict[str, Any] = attrs.Factory(dict)

    def to_json(self) -> dict[str, Any]:
        """run.json's content, key for key."""
        out: dict[str, Any] = {} if self.schema is None else {"schema": self.schema}
        out.update(
            {
                "run_id": self.run_id,
                "spec": self.spec,
                "resolved": self.resolved,
                "versions": self.versions,
                "git": self.git,
                "started": self.started,
                "ended": self.ended,
                "wall_s": self.wall_s,
                "status": self.status,
            }
        )
        if self.outcome is not None:
            out.update(self.outcome.to_json())
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, obj: Any, where: object) -> "RunInfo":
        """run.json's content; MemplugError for a newer schema, DataError when it is not a
        memplug run.json (another tool's: no ``spec`` object)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
            raise DataError(where, "not a memplug run directory (its run.json has no 'spec' object)")
        check_schema(obj, where)
        counted = any(k in obj for k in ("n_expected", "n_answered", "n_failed", "n_questions", "n_errors"))
        try:
            return cls(
                run_id=str(obj.get("run_id") or ""),
                spec=obj["spec"],
                resolved=obj.get("resolved") or {},
                versions=obj.get("versions") or {},
                git=obj.get("git"),
                started=obj.get("started"),
                ended=obj.get("ended"),
                wall_s=float(obj.get("wall_s") or 0.0),
                status=obj.get("status"),
                outcome=Outcome.from_json(obj) if counted else None,
                schema=obj.get("schema"),
                extra={k: v for k, v in obj.items() if k not in _RUN_KEYS},
            )
        except (AttributeError, TypeError, ValueError) as exc:
            raise DataError(where, f"not a memplug run.json ({exc})") from None

    # -- what readers of runs use (a run from before a key: what it meant then) --
    @property
    def agent(self) -> str | None:
        return self.spec.get("agent")

    @property
    def dataset(self) -> str | None:
        return self.spec.get("dataset")

    @property
    def seed(self) -> Any:
        return self.spec.get("seed")

    @property
    def data(self) -> str | None:
        """``--data`` as given; None: generated data."""
        return self.spec.get("data")

    @property
    def from_run(self) -> str | None:
        """``--from RUN``: the run whose recalls were answered again; None: a live agent."""
        return self.spec.get("from_run")

    @property
    def api_base(self) -> str | None:
        """``--api-base`` as given (masked where it held a secret)."""
        return self.spec.get("api_base")

    @property
    def llm(self) -> str | None:
        """The reader's model as given (``--llm``)."""
        return self.spec.get("llm")

    @property
    def context_tokens(self) -> int | None:
        """``--context-tokens``: the reader's budget; None: none."""
        return self.spec.get("context_tokens")

    @property
    def reader(self) -> str | None:
        """The reader the run used (resolved; the spec's in runs from before it was resolved)."""
        return self.resolved.get("reader") or self.spec.get("reader")

    @property
    def recorded_top_k(self) -> int | None:
        """K as the run recorded it (``resolved.top_k``; ``spec.top_k`` in runs before it), None when neither."""
        value = self.resolved.get("top_k") or self.spec.get("top_k")
        return int(value) if value else None

    @property
    def top_k(self) -> int:
        """K: the depth the run recalled (:data:`memplug.models.DEFAULT_TOP_K` in runs that recorded none)."""
        return self.recorded_top_k or DEFAULT_TOP_K

    @property
    def metrics(self) -> list[str]:
        """The metrics the run declared, in order ([] in runs without the list)."""
        return list(self.resolved.get("metrics") or [])

    @property
    def protocol(self) -> dict[str, Any] | None:
        """The answer protocol as :meth:`memplug.answering.AnswerProtocol.describe` gave it; None before protocols."""
        return self.resolved.get("protocol")

    @property
    def data_sha256(self) -> dict[str, str] | None:
        """sha256 of each file read from ``--data``; None for generated data and older runs."""
        return self.resolved.get("data_sha256")

    @property
    def judge(self) -> Any:
        """The judge as the run described it (name, model, prompt sha256); None without one."""
        return self.resolved.get("judge")

    @property
    def judge_prompt(self) -> str | None:
        """``--judge-prompt``: the judge (a registered name) for every question; None: each dataset's."""
        return self.spec.get("judge_prompt")

    @property
    def judge_model(self) -> str | None:
        """``--judge``: the judge's model as given."""
        return self.spec.get("judge")
