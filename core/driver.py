"""The driver of a run: its directory, lock, resume, files, outcome and hooks.

:class:`Driver` takes a :class:`~memplug.plan.Plan` and runs it into a run directory: it
makes the directory (run.json in it from the first moment), takes the lock, on ``--resume``
keeps the samples already answered, writes run.json at the start and the end, hands the
pending samples to an executor (:mod:`memplug.executors`: this process by default, or Ray
workers), writes each record they hand back (:class:`RunSink`: samples.jsonl through the
``--max-errors`` gate, stored.jsonl), sums them up into summary.json and calls the
observer hooks. It is the one writer of the run's files: the sample runner
(:mod:`memplug.samplerun`) only returns results.

A failure that every later question would repeat (a bad key, an unknown model, an agent
that cannot be set up, a full disk under the run directory) stops the run at once. Either
way the outcome says so: run.json's status is ``finished`` only when every question was
answered and scored, else ``partial`` or ``failed``. Records are appended as they finish; a
resumed run redoes the samples that are unfinished or hold an error, from the start.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Mapping, Protocol, Sequence

import attrs

import memplug
from memplug import diagnosis, gates, specs
from memplug import stored as stored_file
from memplug.errors import MemplugError, OutputError, RunInterrupted, RunStopped
from memplug.executors import Executor, LocalExecutor
from memplug.llm import FatalLLMError
from memplug.logs import logs_to
from memplug.models import DatasetInfo, Sample
from memplug.plan import Plan
from memplug.plugins import Plugins
from memplug.protocols import Describes, PlansQuestions
from memplug.record import SCHEMA, Outcome, QuestionRecord, RunInfo, RunSummary
from memplug.results import (
    RunDir,
    RunLock,
    keep_complete_samples,
    safe_name,
    summarize,
    write_json_atomic,
    write_status_in_place,
)
from memplug.samplerun import SampleRunner, SetupFailed
from memplug.secrets import scrub, scrub_all
from memplug.specs import RunSpec

log = logging.getLogger(__name__)


@attrs.define
class Run:
    """A run in progress, handed to observer hooks."""

    spec: RunSpec
    run_id: str
    path: Path
    info: DatasetInfo
    started: float = attrs.field(factory=time.time)


class RecordSink(Protocol):
    """What takes a run's records in the driver: its :class:`~memplug.results.RecordWriter`
    (or the :class:`~memplug.gates.GatedWriter` around it)."""

    def write(self, record: QuestionRecord) -> None: ...


@attrs.define
class RunSink:
    """The driver's end of a run (:class:`memplug.samplerun.RunResults`), where executors hand
    what the samples give: each record to the run's writer (and one tick of the progress
    bar), each stored line to stored.jsonl, each sample's end to the observer hooks."""

    writer: RecordSink
    run: Run
    plugins: Plugins
    tick: Callable[[], Any]
    #: the run's stored.jsonl, open for the run (closed by the driver)
    stored_lines: stored_file.StoredFile
    #: the folder each sample's agent gets a folder in (the run directory's ``work``)
    work: Path = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.work = self.run.path / "work"

    def write(self, record: QuestionRecord) -> None:
        self.writer.write(record)
        self.tick()

    def stored(self, line: dict[str, Any]) -> None:
        self.stored_lines.write(line)

    def sample_end(self, sample: Sample, records: list[QuestionRecord]) -> None:
        self.plugins.hook.memplug_sample_end(run=self.run, sample=sample, records=records)


def run_stem(spec: RunSpec, limit: int = 80) -> str:
    """``<stamp>-<agent>-<dataset>``, a run directory's name made safe in ``limit`` characters:
    one run's id, or the stem the repeats of one ``eval --repeats`` share."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return safe_name(f"{stamp}-{spec.agent}-{spec.dataset}", limit)


class Driver:
    """Runs (or resumes) a :class:`~memplug.plan.Plan` into a run directory."""

    def __init__(self, plan: Plan, runner: SampleRunner | None = None) -> None:
        self.plan = plan
        self.runner = runner or SampleRunner(plan)
        #: what runs the samples (memplug.executors; None: this process), set by run()
        self.executor: Executor | None = None

    # -- run files ------------------------------------------------------------
    def new_run_dir(self, output: Path, started: str | None = None, name: str | None = None) -> tuple[str, Path]:
        """Create ``<output>/<stamp>-<agent>-<dataset>`` (or ``<output>/<name>``; with -1, -2 ...
        when taken), holding its run.json from the first moment; its id and path. A sweep names
        its cells itself (a second stamp can collide across processes and nodes), and
        ``eval --repeats`` its repeats (one stem, -r1 ... -rN: :func:`run_stem`).

        The directory is filled under a hidden name and renamed into place, so a kill at
        any moment leaves either nothing or a directory that ``--resume`` accepts.
        """
        base = safe_name(name) if name else run_stem(self.plan.spec)
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
                write_json_atomic(
                    staging / "run.json", self.run_json(run_id, started or _now(), "running", 0.0).to_json()
                )
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

    def run_json(
        self,
        run_id: str,
        started: str,
        status: str,
        wall_s: float,
        ended: str | None = None,
        outcome: Outcome | None = None,
    ) -> RunInfo:
        """The content of run.json: the spec, what it resolved to, versions, git commit, status
        and the ``outcome`` counts; every string scrubbed of secrets."""
        plan = self.plan
        spec = attrs.asdict(plan.spec)
        extra: dict[str, Any] = {}
        judge = plan.metrics_by_name().get("judge")
        if isinstance(judge, Describes):
            extra["judge"] = judge.describe()
        # what decides the stage of each miss: the overlap rule, or the judge with a pinned prompt
        extra["diagnosis"] = {
            "items_without_sources": "judge" if plan.judge_llm is not None else "overlap",
            **({"judge_prompt_sha256": diagnosis.JUDGE_PROMPT_SHA256} if plan.judge_llm else {}),
        }
        #: what ran the samples: this process (local), or e.g. Ray workers with their address
        extra["executor"] = self.executor.describe() if self.executor is not None else {"name": "local"}
        #: --llm/--judge local: the GGUF's sha256, llama.cpp's version, window, threads, speed, timeout
        local_models = {
            role: llm.local_info
            for role, llm in (("llm", plan.llm), ("judge", plan.judge_llm))
            if llm is not None and llm.local_info
        }
        if local_models:
            extra["local_models"] = local_models
        #: --concurrency auto: each model's limit of calls in flight, where it went and why
        adaptive = {
            role: llm.adaptive.describe()
            for role, llm in (("llm", plan.llm), ("judge", plan.judge_llm))
            if llm is not None and llm.adaptive is not None
        }
        if adaptive:
            extra["concurrency_auto"] = adaptive
        return RunInfo.from_json(
            scrub_all(
                {
                    "schema": SCHEMA,
                    "run_id": run_id,
                    "spec": spec,
                    "resolved": {
                        **plan.resolved.to_json(),  # the resolved spec, as the runner uses it
                        "metrics": [m.name for m in plan.metrics],
                        "answer_prompt_source": plan.info.answer_prompt_source,
                        "protocol": plan.protocol.describe(),
                        "data_sha256": plan.data_sha256(),
                        # --data from any directory (specs.stored_fields), beside the path as given
                        "data_path": None if plan.data is None else specs.data_path(plan.data),
                        "from_run": _from_run_id(plan.spec.from_run),
                        "data_warnings": {"count": len(plan.data_warnings), "first": plan.data_warnings[:20]},
                        "limit": plan.drawn,
                        **extra,
                    },
                    "versions": plan.versions(),
                    "git": _git_hash(),
                    "started": started,
                    "ended": ended,
                    "wall_s": round(wall_s, 3),
                    "status": status,
                    **(outcome.to_json() if outcome is not None else {}),
                }
            ),
            "run.json",
        )

    # -- running --------------------------------------------------------------
    def run(
        self,
        output: Path | None = None,
        resume: Path | None = None,
        progress: Callable[..., Any] | None = None,
        capture_logs: bool = False,
        verbose: bool = False,
        executor: Executor | None = None,
        name: str | None = None,
    ) -> Path:
        """Run (or resume) and return the run directory.

        Raises :class:`RunStopped` when a failure stopped the run (the directory is kept
        and resumable) and :class:`RunInterrupted` on Ctrl-C. Questions that failed on
        their own do not raise: the outcome is in run.json and summary.json (``status``,
        ``n_errors``, ``first_error``). ``progress(total, finished)``: returns what to call
        once per question written. ``capture_logs`` sends every log line to
        ``memplug.log`` in the run directory (and stderr too when ``verbose``). ``executor``
        (:mod:`memplug.executors`) runs the samples, in this process by default; ``name``: the
        new run's id (see :meth:`new_run_dir`).
        """
        plan = self.plan
        samples = plan.samples()
        # --fail-under names a metric the run scores and a category it asks: a typo fails now, not after the run
        gates.check_names(
            gates.thresholds(plan.spec.fail_under),
            [m.name for m in plan.metrics],
            {q.category for s in samples for q in s.questions},
        )
        for metric in plan.metrics:  # the judges of these questions, named in run.json from the start
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

    def _run_in(
        self, run_dir: RunDir, samples: list[Sample], resuming: bool, progress: Callable[..., Any] | None
    ) -> Path:
        plan, spec = self.plan, self.plan.spec
        path = run_dir.path
        stored = run_dir.info()
        if resuming:
            diffs = spec.differences(specs.stored_fields(run_dir))
            if diffs:
                raise MemplugError(f"cannot resume {path}: options differ from run.json ({'; '.join(diffs)})")
            _check_same_protocol(path, stored.protocol, plan.protocol.describe())
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
        run = Run(spec, run_id, path, plan.info)
        log.info(
            "run %s %s: %d of %d questions to ask; spec %s",
            run_id,
            "resumed" if resuming else "started",
            n_expected - sum(len(s.questions) for s in samples if s.id in done),
            n_expected,
            json.dumps(scrub_all(attrs.asdict(spec))),
        )
        t0 = time.perf_counter()
        try:
            write_json_atomic(run_dir.run_json, self.run_json(run_id, started, "running", prior_wall).to_json())
        except OSError as exc:
            raise OutputError(f"cannot write {run_dir.run_json}: {exc.strerror or exc}") from None
        plan.plugins.hook.memplug_run_start(run=run)
        writer = gates.writer(run_dir.samples, spec.max_errors, n_expected)  # --max-errors: a GatedWriter
        if not plan.per_message:  # a message a chunk: no sample is counted in tokens
            plan.token_counts.prefetch(pending)
        stored_lines = stored_file.StoredFile(path)
        ran, stop, interrupted = False, None, False
        replaced_handler: Any = None
        summary: RunSummary | None = None
        # Everything alive now (the samples, the loaded modules) lives to the end of the run:
        # frozen, the collector stops rescanning it. Each full collection of a 1,280-sample
        # MemSim run took ~50 ms otherwise, a quarter of a warm rerun.
        gc.freeze()
        try:
            finished = sum(len(s.questions) for s in samples if s.id in done)
            tick = progress(n_expected, finished) if progress else (lambda: None)
            sink = RunSink(writer, run, plan.plugins, tick, stored_lines)
            # this process by default; e.g. Ray: the samples spread over workers, their records written here
            (self.executor or LocalExecutor()).run_samples(self.runner, pending, sink)
            ran = True
        except (FatalLLMError, OutputError, SetupFailed, gates.TooManyErrors) as exc:
            stop = exc
        except KeyboardInterrupt:
            interrupted = True
            replaced_handler = _exit_on_second_interrupt(path)
            raise RunInterrupted(path) from None
        finally:
            gc.unfreeze()
            stored_lines.close()
            try:
                writer.close()
            except OutputError as exc:
                stop = stop or exc
            with contextlib.suppress(sqlite3.Error, OSError):
                plan.token_counts.save()
            plan.close()  # the LLMs' I/O threads and connections
            wall = prior_wall + time.perf_counter() - t0
            status, outcome = "interrupted", None
            if ran or stop is not None or interrupted:  # the records on file: those kept and this session's
                records = [*kept, *writer.written]
                outcome = _outcome(records, n_expected, stop, interrupted)
                status = outcome.status
                summary = summarize(records, spec.agent, spec.dataset, run_id, wall)
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
            # the log's last line of the run, beside its first ("started"/"resumed")
            answered = f": {outcome.n_answered} of {outcome.n_expected} questions answered" if outcome else ""
            log.info("run %s %s%s in %.1f s", run_id, status, answered, wall)
        plan.plugins.hook.memplug_run_end(run=run, summary=summary)
        if stop is not None and not isinstance(stop, gates.TooManyErrors):  # --max-errors: failed, not stopped
            raise RunStopped(str(stop), path)
        return path


def nothing_to_resume(path: Path, spec: RunSpec) -> bool:
    """Whether ``eval --resume`` of ``path`` with ``spec`` has nothing to do: the run answered
    every question (one with failed questions is partial or failed, and a resume retries
    them) and ``spec`` differs from its own in nothing that counts. A spec that differs, or
    a run another process holds, is left to :meth:`Driver.run`, which refuses it as usual;
    so is a samples.jsonl short of the answers run.json counts. A damaged one: MemplugError."""
    run = RunDir(path).check()
    info = run.info()
    if info.status != "finished" or spec.differences(specs.stored_fields(run)):
        return False
    answered = {r.key for r in run.records() if not r.error}
    if info.outcome is not None and len(answered) < info.outcome.n_expected:
        return False
    lock = RunLock(run.path)
    try:
        lock.acquire()
    except MemplugError:
        return False
    lock.release()
    return True


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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _from_run_id(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return RunDir(Path(path)).info().run_id
    except (MemplugError, OSError):
        return None


def _check_same_protocol(path: Path, stored: Mapping[str, Any] | None, now: Mapping[str, Any]) -> None:
    """A resumed run asks its remaining questions as it asked the others: the same options
    can mean another protocol under another memplug (LoCoMo's default became the official
    per-category prompts in protocol version 2), and one run must not mix two."""
    if not stored:  # a run from before protocols were recorded
        return
    keys = ("name", "version", "variations", "sha256", "parse", "parse_by_category")
    if any(stored.get(k) != now.get(k) for k in keys):

        def label(d: Mapping[str, Any]) -> str:
            variations = f" ({', '.join(d['variations'])})" if d.get("variations") else ""
            return f"{d.get('name')} v{d.get('version')}{variations}"

        raise MemplugError(
            f"cannot resume {path}: it was asked under the answer protocol {label(stored)}, this "
            f"memplug asks under {label(now)}; finish it with the memplug that began it, or "
            "start a new run"
        )


def _exit_on_second_interrupt(run_dir: Path) -> Any:
    """After a first Ctrl-C, while the run's files are written: a second Ctrl-C ends the
    process at once, with one line and no traceback (raised inside that writing, or inside
    the interpreter's exit that waits for an agent's hung thread, it was a traceback).
    Returns the handler replaced, to put back; None where none was replaced (not the main
    thread, or a handler of the caller's own, which keeps its say)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        return None

    def now(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(Exception):
            sys.stderr.write(
                f"memplug: interrupted again: stopped at once; finish the run with: memplug eval --resume {run_dir}\n"
            )
            sys.stderr.flush()
        os._exit(130)

    return signal.signal(signal.SIGINT, now)


def _outcome(
    records: Sequence[QuestionRecord], n_expected: int, stop: BaseException | None, interrupted: bool = False
) -> Outcome:
    """The run's status and what it rests on: ``interrupted`` after a Ctrl-C (the records
    so far are summed up all the same); else ``finished`` only when every expected
    question has a record without an error; ``failed`` when none has; else ``partial``."""
    answered = sum(1 for r in records if not r.error)
    failed = len(records) - answered  # asked and failed; the rest of n_expected was not asked
    first = next((r.error for r in records if r.error), None)
    if stop is not None and not isinstance(stop, gates.TooManyErrors):
        first = scrub(str(stop))
    status = "finished" if answered == n_expected and stop is None else "failed" if answered == 0 else "partial"
    if isinstance(stop, gates.TooManyErrors):  # --max-errors: the run is failed, however many were answered
        status = "failed"
    if interrupted:
        return Outcome("interrupted", n_expected, answered, failed, first, "interrupted (Ctrl-C)")
    return Outcome(status, n_expected, answered, failed, first, scrub(str(stop)) if stop is not None else None)
