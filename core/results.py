"""A run on disk: run.json, samples.jsonl and summary.json, read and written as the
typed records of :mod:`memplug.record` (the only reader and writer of these files).

samples.jsonl is append-only and flushed within 50 ms of each record, so a killed run
loses at most the records of its last 50 ms (see :class:`RecordWriter`). A torn last
line is detected and cut off on resume, never parsed as garbage. run.json and
summary.json are replaced atomically.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TextIO

from memplug import diagnosis, stats
from memplug.errors import DataError, MemplugError, OutputError
from memplug.files import read_json
from memplug.record import Breakdown, Efficiency, Intervals, LLMUsage, QuestionRecord, RunInfo, RunSummary


def _write_atomic(path: Path, write: Callable[[TextIO], None]) -> None:
    """``write`` into a file next to ``path``, synced, then renamed into place. A failure (a
    full disk) leaves ``path`` as it was and no temporary file behind."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_status_in_place(path: Path, status: str) -> bool:
    """Set run.json's ``"status": "running"`` to ``status`` by overwriting those bytes where
    they stand: on a full disk, where no new file can be written (write_json_atomic needs
    one), a run stopped by it must not read as still running. Blocks a file already holds
    are rewritten without allocating new ones. Only a status no longer than "running" fits
    (``partial``, ``failed``; JSON allows the padding space). Whether it was written."""
    old = b'"status": "running"'
    new = f'"status": "{status}"'.encode()
    if len(new) > len(old):
        return False
    try:
        with path.open("r+b") as fh:
            data = fh.read()
            at = data.rfind(old)
            if at < 0:
                return False
            fh.seek(at)
            fh.write(new + b" " * (len(old) - len(new)))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError:
        return False
    return True


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON next to ``path`` and rename it into place: readers never see half a file."""

    def write(fh: TextIO) -> None:
        json.dump(obj, fh, ensure_ascii=False, indent=2, sort_keys=False)
        fh.write("\n")

    _write_atomic(path, write)


def write_lines_atomic(path: Path, lines: Iterable[str]) -> None:
    """Replace ``path`` with ``lines``, each ended by a newline, as atomically as write_json_atomic."""
    _write_atomic(path, lambda fh: fh.writelines(line + "\n" for line in lines))


def write_records_atomic(path: Path, records: Iterable[QuestionRecord]) -> None:
    """Replace a samples.jsonl with ``records``, one per line (as RecordWriter writes them)."""

    def write(fh: TextIO) -> None:
        for record in records:
            fh.buffer.write(record.to_line())

    _write_atomic(path, write)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_SAFE = re.compile(r"[A-Za-z0-9-](?:[A-Za-z0-9_.-]*[A-Za-z0-9-])?")  # what the cleaning below keeps as is


def safe_name(text: str, limit: int = 80) -> str:
    """A file name that cannot climb out of its folder ("../x" becomes "x-<hash>"): a run
    directory's name, a sweep cell's, a sample's folder under the run's ``work``."""
    if len(text) <= limit and _SAFE.fullmatch(text):  # most ids are already safe: one match
        return text
    clean = _UNSAFE.sub("_", text).strip("._")[:limit] or "x"
    if clean != text:
        clean = f"{clean}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return clean


class RunDir:
    """Paths and readers of one run directory."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.run_json = self.path / "run.json"
        self.samples = self.path / "samples.jsonl"
        self.summary_json = self.path / "summary.json"
        #: written by `memplug judge-check`, read by `memplug report`
        self.judge_check = self.path / "judge-check.json"

    def check(self) -> "RunDir":
        """This run directory, or a MemplugError when it holds no run.json."""
        if not self.path.exists():
            raise MemplugError(f"{self.path}: no such run directory")
        if not self.run_json.is_file():
            raise MemplugError(f"{self.path}: not a memplug run directory (no run.json)")
        return self

    def info(self) -> RunInfo:
        """run.json (:class:`memplug.record.RunInfo`: spec, resolved, versions, status ...);
        MemplugError for a run written by a newer memplug (:func:`memplug.record.check_schema`),
        DataError for another tool's run.json (a directory of its runs: said as such, never
        taken for an unfinished run)."""
        return RunInfo.from_json(read_json(self.run_json), self.run_json)

    def summary(self) -> RunSummary:
        """summary.json; an unfinished run has none (MemplugError), nor has a directory that
        is not a memplug run (MemplugError saying so, rather than suggesting --resume)."""
        if not self.summary_json.is_file():
            self.check().info()
            raise MemplugError(f"{self.path}: no summary.json (unfinished run? finish it with --resume)")
        return RunSummary.from_json(read_json(self.summary_json), self.summary_json)

    def records(self) -> list[QuestionRecord]:
        """The records of samples.jsonl, a torn last line left out (see :func:`read_records`);
        run.json's schema is checked first (a newer one: MemplugError)."""
        if self.run_json.is_file():
            self.info()
        return read_records(self.samples)[0]

    def judge_checks(self) -> list[dict[str, Any]]:
        """Per judge model in judge-check.json: agreement, Cohen's kappa and n against exact scoring.

        These are over all the run's objective questions (``vs_exact.all``); a run never
        checked has none.
        """
        if not self.judge_check.is_file():
            return []
        checks = []
        for model, result in read_json(self.judge_check).get("judges", {}).items():
            vs = result.get("vs_exact", {}).get("all", {})
            checks.append(
                {"model": model, "agreement": vs.get("agreement"), "kappa": vs.get("kappa"), "n": vs.get("n")}
            )
        return checks


def read_records(path: Path) -> tuple[list[QuestionRecord], int]:
    """Records of a samples.jsonl and the byte length of its intact part.

    The last line may be torn by a kill in the middle of a write: it is left out
    (and the intact length tells where to cut). A bad line elsewhere is corruption.
    """
    if not path.is_file():
        return [], 0
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1  # every write ends in a newline; what follows it is torn
    records: list[QuestionRecord] = []
    for number, line in enumerate(data[:end].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            records.append(QuestionRecord.from_line(line))
        except ValueError as exc:
            problem = "corrupt record (not JSON)" if isinstance(exc, json.JSONDecodeError) else f"corrupt record: {exc}"
            raise DataError(path, problem, f"line {number}") from None
    return records, end


class RecordWriter:
    """Appends one JSON line per finished question; lines reach the file within
    ``flush_delay`` seconds.

    Inside an event loop, a write schedules one flush for the lines of the next
    ``flush_delay`` seconds instead of a system call per line: when answers come from
    the cache, a run finishes hundreds of questions in that time. A kill loses at most
    those lines (their samples are redone on resume, from the cache) and may tear the
    last one, which resume cuts off. Outside a loop every line is flushed at once.

    Once closed, a write is dropped: after a Ctrl-C the run's files are written while an
    agent's call may still be running in a thread left behind, and what it finishes then
    is not part of the run (its sample is unfinished, and redone on resume).
    """

    def __init__(self, path: Path, flush_delay: float = 0.05) -> None:
        self.path = path
        try:
            self._fh = path.open("ab", buffering=1 << 20)  # the flush, not a full buffer, decides when lines go out
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        self.flush_delay = flush_delay
        #: the first write or flush that failed (a full disk): every later write raises it
        self.failure: OutputError | None = None
        self._scheduled: asyncio.TimerHandle | None = None
        self._scheduled_in: asyncio.AbstractEventLoop | None = None
        #: every record written, in order (the run's summary is computed from them)
        self.written: list[QuestionRecord] = []
        self._closed = False
        self._lock = threading.RLock()  # the samples' thread writes, the run's thread closes

    def write(self, record: QuestionRecord) -> None:
        with self._lock:
            if self._closed:
                return
            if self.failure is not None:
                raise self.failure
            try:
                self._fh.write(record.to_line())
            except OSError as exc:
                self._failed(exc)
                raise self.failure from None  # type: ignore[misc]
            self.written.append(record)
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            if self._scheduled is None or self._scheduled_in is not loop:  # (a flush left in an ended loop never runs)
                self._scheduled, self._scheduled_in = loop.call_later(self.flush_delay, self.flush), loop

    def flush(self) -> None:
        """Write the buffered lines out. A failure is kept, not raised: a flush runs as an
        event-loop callback, where an exception would only be logged; the next write raises it."""
        with self._lock:
            self._scheduled = None
            if self.failure is not None or self._closed:
                return
            try:
                self._fh.flush()
            except OSError as exc:
                self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        self.failure = OutputError(f"cannot write {self.path}: {exc.strerror or exc}")

    def close(self) -> None:
        """Flush and close; raises the failure of any write or flush (OutputError), after
        cutting the line a failed write tore (truncating needs no free space)."""
        with self._lock:
            # a flush still scheduled (perhaps in the loop of a thread left behind) finds it closed
            self._scheduled = None
            if not self._closed:
                self.flush()
                self._closed = True
                try:
                    self._fh.close()
                except OSError as exc:  # the flush at close hit the same full disk
                    self._failed(exc)
                if self.failure is not None:
                    cut_torn_line(self.path)
            if self.failure is not None:
                raise self.failure


def cut_torn_line(path: Path) -> None:
    """Cut what follows the last line break of ``path`` (a line torn by a failed write or a
    kill): readers leave it out anyway, this makes the file say so too. Reads the tail only."""
    try:
        with path.open("r+b") as fh:
            end = fh.seek(0, os.SEEK_END)
            at = end
            while at > 0:
                start = max(at - (1 << 16), 0)
                fh.seek(start)
                block = fh.read(at - start)
                newline = block.rfind(b"\n")
                if newline >= 0:
                    at = start + newline + 1
                    break
                at = start
            if at < end:
                fh.truncate(at)
    except OSError:
        pass


def keep_complete_samples(path: Path, expected: dict[str, set[str]]) -> list[QuestionRecord]:
    """Prepare samples.jsonl for a resume: cut a torn last line and drop unfinished samples.

    A sample is complete when every expected question has a record without an error.
    Records of the other samples are removed and the sample is redone from the start
    (an agent's memory is built by ingesting the whole sample), so a question that
    failed is retried and no question is ever written twice. Returns the records kept.
    """
    records, _ = read_records(path)
    seen: dict[str, set[str]] = defaultdict(set)
    for r in records:
        if not r.error:
            seen[r.sample_id].add(r.question_id)
    done = {sid for sid, qids in seen.items() if sid in expected and qids >= expected[sid]}
    kept: list[QuestionRecord] = []
    written: set[tuple[str, str]] = set()
    for r in records:
        if r.sample_id in done and r.key not in written:
            kept.append(r)
            written.add(r.key)
    write_records_atomic(path, kept)
    return kept


def _sum_usage(usages: Iterable[LLMUsage | None]) -> LLMUsage:
    total = LLMUsage(0, 0, 0, 0, 0)
    for u in usages:
        if u is not None:
            total.calls += u.calls or 0
            total.cache_hits += u.cache_hits or 0
            total.prompt_tokens += u.prompt_tokens or 0
            total.completion_tokens += u.completion_tokens or 0
            total.cost_usd += u.cost_usd or 0
    total.cost_usd = round(total.cost_usd, 6)
    return total


PERCENTILES = (50, 95, 99)


def _percentiles(values: Iterable[float | None]) -> dict[str, float] | None:
    """{"p50", "p95", "p99", "max"} of the values given (None left out), or None without any."""
    import numpy as np

    xs = np.asarray([v for v in values if v is not None], dtype=float)
    if xs.size == 0:
        return None
    out = {f"p{p}": round(float(np.percentile(xs, p)), 6) for p in PERCENTILES}
    out["max"] = round(float(xs.max()), 6)
    return out


def summarize(
    records: Sequence[QuestionRecord],
    agent: str,
    dataset: str,
    run_id: str,
    wall_s: float,
    resamples: int = 1000,
    level: float = 0.95,
) -> RunSummary:
    """summary.json from the records alone (plus the wall time), so a rescore can redo it.

    Metrics are means over answered questions: a record with an error is counted in
    n_errors and left out of every metric; a score of None (not applicable) is left out
    of that metric. Intervals are percentile bootstraps resampling whole samples; a mean
    over the questions of one sample has none: its interval is null and ``ci.na`` gives
    the reason ("1 sample"; shown as "n/a (1 sample)"), since resampling one cluster can
    only give [mean, mean].
    """
    # in a fixed order, not the order the records were written in (which samples finished first
    # with --concurrency, a resume, a sharded run): the bootstrap draws whole samples by their
    # order of appearance, so the same records always give the same intervals
    answered = sorted((r for r in records if not r.error), key=lambda r: (str(r.sample_id), str(r.question_id)))
    by_category: dict[str, list[QuestionRecord]] = defaultdict(list)
    for r in answered:
        by_category[r.category].append(r)

    def block(
        rows: list[QuestionRecord],
    ) -> tuple[dict[str, float], dict[str, list[float] | None], dict[str, int], dict[str, str]]:
        """Means, intervals (None where not estimable), counts, and why an interval is None."""
        means: dict[str, float] = {}
        intervals: dict[str, list[float] | None] = {}
        counts: dict[str, int] = {}
        na: dict[str, str] = {}
        names = sorted({k for r in rows for k in r.scores})
        for name in names:
            pairs = [(v, r.sample_id) for r in rows if (v := r.scores.get(name)) is not None]
            if not pairs:
                continue
            values = [float(v) for v, _ in pairs]
            clusters = [s for _, s in pairs]
            means[name] = round(sum(values) / len(values), 6)
            counts[name] = len(values)
            try:
                low, high = stats.bootstrap_ci(values, clusters, level=level, resamples=resamples)
            except stats.NotEstimable as exc:  # one sample: resampling it gives [mean, mean], no interval
                intervals[name], na[name] = None, exc.reason
                continue
            intervals[name] = [round(low, 6), round(high, 6)]
        return means, intervals, counts, na

    overall, overall_ci, overall_n, overall_na = block(answered)
    # questions the reader could not answer (a kind it cannot do): only their recall is scored
    unanswerable: dict[str, dict[str, Any]] = {}
    for r in answered:
        if r.unanswerable:
            entry = unanswerable.setdefault(r.category, {"n": 0, "reason": r.unanswerable})
            entry["n"] += 1
    cats = {c: block(rows) for c, rows in sorted(by_category.items())}
    # questions a metric applied to but could not score (the judge's reply held no verdict):
    # left out of its mean, as a "not applicable" None is, but counted here and printed
    unscored: dict[str, dict[str, Any]] = {}
    for r in answered:
        for name, reason in (r.unscored or {}).items():
            entry = unscored.setdefault(name, {"n": 0, "of": overall_n.get(name, 0), "reason": reason})
            entry["n"] += 1
            entry["of"] += 1

    per_sample: dict[str, QuestionRecord] = {}
    for r in records:
        per_sample.setdefault(r.sample_id, r)
    ingested = [r for r in per_sample.values() if r.timings.ingest_s is not None]  # not: set-up or ingest failed
    ingest_s = sum(r.timings.ingest_s or 0.0 for r in ingested)
    n_messages = sum(r.timings.n_messages or 0 for r in ingested)
    recall_times = [t for r in answered if (t := r.timings.recall_s) is not None]
    llm = _sum_usage([r.usage for r in records] + [r.ingest_usage for r in per_sample.values()])
    return RunSummary(
        run_id=run_id,
        agent=agent,
        dataset=dataset,
        n_questions=len(records),
        n_errors=len(records) - len(answered),
        metrics=Breakdown(overall, {c: v[0] for c, v in cats.items()}),
        ci=Intervals(
            method=stats.CI_METHOD,
            level=level,
            resamples=resamples,
            overall=overall_ci,
            by_category={c: v[1] for c, v in cats.items()},
            # why an interval above is null, per metric: {"em": "1 sample"}; only metrics without one
            na=Breakdown(overall_na, {c: v[3] for c, v in cats.items() if v[3]}),
        ),
        n=Breakdown(overall_n, {c: v[2] for c, v in cats.items()}),
        unanswerable=unanswerable,
        efficiency=Efficiency(
            ingest_s_per_message=round(ingest_s / n_messages, 6) if n_messages else None,
            recall_s_per_question=round(sum(recall_times) / len(recall_times), 6) if recall_times else None,
            wall_s=round(wall_s, 3),
            # a mean hides the slow tail that users of a memory system feel: per stage, the
            # percentiles of each sample's ingestion and each question's recall and answer
            latency_s={
                "ingest": _percentiles([r.timings.ingest_s for r in ingested]),
                "recall": _percentiles(recall_times),
                "answer": _percentiles([r.timings.read_s for r in answered]),
            },
        ),
        llm=llm,
        diagnosis=diagnosis.tally(answered, level=level, resamples=resamples),
        unscored=unscored or None,
        answered={"overall": len(answered), **{c: len(rows) for c, rows in sorted(by_category.items())}},
    )


class RunLock:
    """An exclusive lock on a run directory for the life of one process's run.

    ``fcntl.flock`` on ``.lock`` inside it: the kernel drops the lock when the process
    dies, even by SIGKILL, so a stale lock never blocks a resume. The file holds the
    holder's pid, for the message. (No-op where fcntl is missing, i.e. on Windows.)
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / ".lock"
        self._fh: Any = None

    def acquire(self) -> "RunLock":
        try:
            import fcntl
        except ImportError:
            return self
        while True:
            try:
                fh = self.path.open("a+", encoding="utf-8")
            except OSError as exc:
                raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from None
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.seek(0)
                holder = fh.read().strip() or "?"
                fh.close()
                raise MemplugError(
                    f"{self.path.parent} is being run by another memplug process (pid {holder}); "
                    "wait for it to end, or stop it first"
                ) from None
            try:  # the holder before removes the file as it lets go: then it is a new file's turn
                if os.stat(self.path).st_ino == os.fstat(fh.fileno()).st_ino:
                    break
            except FileNotFoundError:
                pass
            fh.close()
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(str(os.getpid()))
            fh.flush()
        except OSError:  # a full disk: the lock holds without the pid
            pass
        self._fh = fh
        return self

    def release(self) -> None:
        """Remove ``.lock`` (while still holding it: a process that opened it meanwhile sees
        another file at the path and tries again) and let go."""
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self._fh.close()  # closing drops the flock
            self._fh = None
