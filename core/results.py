"""A run on disk: run.json, samples.jsonl and summary.json.

samples.jsonl is append-only and flushed within 50 ms of each record, so a killed run
loses at most the records of its last 50 ms (see :class:`RecordWriter`). A torn last
line is detected and cut off on resume, never parsed as garbage. run.json and
summary.json are replaced atomically.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TextIO

import orjson

from memplug import stats
from memplug.errors import DataError, MemplugError, OutputError
from memplug.files import read_json

USAGE_KEYS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "cost_usd")
#: the run's outcome, set by the runner in run.json and summary.json (see docs/run-files.md)
OUTCOME_KEYS = ("status", "n_expected", "n_answered", "n_failed", "first_error", "stopped")


def _write_atomic(path: Path, write: Callable[[TextIO], None]) -> None:
    """``write`` into a file next to ``path``, synced, then renamed into place."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON next to ``path`` and rename it into place: readers never see half a file."""

    def write(fh: TextIO) -> None:
        json.dump(obj, fh, ensure_ascii=False, indent=2, sort_keys=False)
        fh.write("\n")

    _write_atomic(path, write)


def write_lines_atomic(path: Path, lines: Iterable[str]) -> None:
    """Replace ``path`` with ``lines``, each ended by a newline, as atomically as write_json_atomic."""
    _write_atomic(path, lambda fh: fh.writelines(line + "\n" for line in lines))


def _plain(value: Any) -> Any:
    """orjson's fallback for the types json.dumps also takes: float and int subclasses."""
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        return int(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def record_line(record: Mapping[str, Any]) -> bytes:
    """One record as a line of samples.jsonl: compact UTF-8 JSON and a newline.

    orjson rather than json: encoding the records was a tenth of a warm rerun's time
    with json.dumps (see docs/performance.md).
    """
    return orjson.dumps(record, default=_plain, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE)


def parse_record(line: bytes) -> Any:
    """A line of samples.jsonl as written by :func:`record_line` (or by json.dumps, which
    earlier versions used and which may write NaN; orjson rejects it)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def write_records_atomic(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Replace a JSON-lines file with ``records``, one per line (as RecordWriter writes them)."""

    def write(fh: TextIO) -> None:
        for record in records:
            fh.buffer.write(record_line(record))

    _write_atomic(path, write)


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
        if not self.run_json.is_file():
            raise MemplugError(f"{self.path}: not a memplug run (no run.json)")
        return self

    def spec(self) -> dict[str, Any]:
        """The content of run.json (``spec``, ``resolved``, ``versions``, status ...)."""
        stored = read_json(self.run_json)
        if not isinstance(stored, dict) or not isinstance(stored.get("spec", {}), dict):
            raise DataError(self.run_json, "not a memplug run file (expected an object with a 'spec' object)")
        return stored

    def top_k(self) -> int:
        """K of the run: the depth it recalled (``resolved.top_k``; runs before it had
        ``spec.top_k``; 5 when neither is there)."""
        stored = self.spec()
        return int((stored.get("resolved") or {}).get("top_k") or (stored.get("spec") or {}).get("top_k") or 5)

    def summary(self) -> dict[str, Any]:
        """The content of summary.json; an unfinished run has none (MemplugError)."""
        if not self.summary_json.is_file():
            raise MemplugError(f"{self.path}: no summary.json (unfinished run? finish it with --resume)")
        return read_json(self.summary_json)

    def records(self) -> list[dict[str, Any]]:
        """The records of samples.jsonl, a torn last line left out (see :func:`read_records`)."""
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
            checks.append({"model": model, "agreement": vs.get("agreement"), "kappa": vs.get("kappa"),
                           "n": vs.get("n")})
        return checks


def read_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Records of a samples.jsonl and the byte length of its intact part.

    The last line may be torn by a kill in the middle of a write: it is left out
    (and the intact length tells where to cut). A bad line elsewhere is corruption.
    """
    if not path.is_file():
        return [], 0
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1  # every write ends in a newline; what follows it is torn
    records: list[dict[str, Any]] = []
    for number, line in enumerate(data[:end].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            records.append(parse_record(line))
        except ValueError:
            raise DataError(path, "corrupt record (not JSON)", f"line {number}") from None
    return records, end


class RecordWriter:
    """Appends one JSON line per finished question; lines reach the file within
    ``flush_delay`` seconds.

    Inside an event loop, a write schedules one flush for the lines of the next
    ``flush_delay`` seconds instead of a system call per line: when answers come from
    the cache, a run finishes hundreds of questions in that time. A kill loses at most
    those lines (their samples are redone on resume, from the cache) and may tear the
    last one, which resume cuts off. Outside a loop every line is flushed at once.
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
        self.written: list[Mapping[str, Any]] = []

    def write(self, record: Mapping[str, Any]) -> None:
        if self.failure is not None:
            raise self.failure
        try:
            self._fh.write(record_line(record))
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
        self._scheduled = None
        if self.failure is not None:
            return
        try:
            self._fh.flush()
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        self.failure = OutputError(f"cannot write {self.path}: {exc.strerror or exc}")

    def close(self) -> None:
        """Flush and close; raises the failure of any write or flush (OutputError)."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        self.flush()
        try:
            self._fh.close()
        except OSError as exc:  # the flush at close hit the same full disk
            self._failed(exc)
        if self.failure is not None:
            raise self.failure


def keep_complete_samples(path: Path, expected: Mapping[str, set[str]]) -> list[dict[str, Any]]:
    """Prepare samples.jsonl for a resume: cut a torn last line and drop unfinished samples.

    A sample is complete when every expected question has a record without an error.
    Records of the other samples are removed and the sample is redone from the start
    (an agent's memory is built by ingesting the whole sample), so a question that
    failed is retried and no question is ever written twice. Returns the records kept.
    """
    records, _ = read_records(path)
    seen: dict[str, set[str]] = defaultdict(set)
    for r in records:
        if not r.get("error"):
            seen[r["sample_id"]].add(r["question_id"])
    done = {sid for sid, qids in seen.items() if sid in expected and qids >= expected[sid]}
    kept: list[dict[str, Any]] = []
    written: set[tuple[str, str]] = set()
    for r in records:
        key = (r["sample_id"], r["question_id"])
        if r["sample_id"] in done and key not in written:
            kept.append(r)
            written.add(key)
    write_records_atomic(path, kept)
    return kept


def _sum_usage(usages: Iterable[Mapping[str, Any] | None]) -> dict[str, float]:
    total: dict[str, float] = {k: 0 for k in USAGE_KEYS}
    for u in usages:
        for k in USAGE_KEYS:
            total[k] += (u or {}).get(k, 0) or 0
    total["cost_usd"] = round(total["cost_usd"], 6)
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
    records: Sequence[Mapping[str, Any]],
    agent: str,
    dataset: str,
    run_id: str,
    wall_s: float,
    resamples: int = 1000,
    level: float = 0.95,
) -> dict[str, Any]:
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
    answered = sorted((r for r in records if not r.get("error")),
                      key=lambda r: (str(r["sample_id"]), str(r["question_id"])))
    by_category: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in answered:
        by_category[r["category"]].append(r)

    def block(rows: list[Mapping[str, Any]]) -> tuple[dict, dict, dict, dict]:
        """Means, intervals (None where not estimable), counts, and why an interval is None."""
        means: dict[str, float] = {}
        intervals: dict[str, list[float] | None] = {}
        counts: dict[str, int] = {}
        na: dict[str, str] = {}
        names = sorted({k for r in rows for k in (r.get("scores") or {})})
        for name in names:
            pairs = [(r["scores"].get(name), r["sample_id"]) for r in rows]
            pairs = [(v, s) for v, s in pairs if v is not None]
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
        if r.get("unanswerable"):
            entry = unanswerable.setdefault(r["category"], {"n": 0, "reason": r["unanswerable"]})
            entry["n"] += 1
    cats = {c: block(rows) for c, rows in sorted(by_category.items())}

    per_sample: dict[str, Mapping[str, Any]] = {}
    for r in records:
        per_sample.setdefault(r["sample_id"], r)
    ingest_s = sum((r.get("timings") or {}).get("ingest_s") or 0.0 for r in per_sample.values())
    n_messages = sum((r.get("timings") or {}).get("n_messages") or 0 for r in per_sample.values())
    recall_times = [t for r in answered if (t := (r.get("timings") or {}).get("recall_s")) is not None]
    llm = _sum_usage(
        [r.get("usage") for r in records] + [r.get("ingest_usage") for r in per_sample.values()]
    )
    return {
        "run_id": run_id,
        "agent": agent,
        "dataset": dataset,
        "n_questions": len(records),
        "n_errors": len(records) - len(answered),
        "metrics": {"overall": overall, "by_category": {c: v[0] for c, v in cats.items()}},
        "ci": {
            "method": stats.CI_METHOD,
            "level": level,
            "resamples": resamples,
            "overall": overall_ci,
            "by_category": {c: v[1] for c, v in cats.items()},
            # why an interval above is null, per metric: {"em": "1 sample"}; only metrics without one
            "na": {"overall": overall_na, "by_category": {c: v[3] for c, v in cats.items() if v[3]}},
        },
        "n": {"overall": overall_n, "by_category": {c: v[2] for c, v in cats.items()}},
        "unanswerable": unanswerable,
        "efficiency": {
            "ingest_s_per_message": round(ingest_s / n_messages, 6) if n_messages else None,
            "recall_s_per_question": round(sum(recall_times) / len(recall_times), 6) if recall_times else None,
            "wall_s": round(wall_s, 3),
            # a mean hides the slow tail that users of a memory system feel: per stage, the
            # percentiles of each sample's ingestion and each question's recall and answer
            "latency_s": {
                "ingest": _percentiles([(r.get("timings") or {}).get("ingest_s") for r in per_sample.values()]),
                "recall": _percentiles(recall_times),
                "answer": _percentiles([(r.get("timings") or {}).get("read_s") for r in answered]),
            },
        },
        "llm": llm,
    }


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
            raise MemplugError(f"{self.path.parent} is being run by another memplug process (pid {holder}); "
                               "wait for it to end, or stop it first") from None
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
        if self._fh is not None:
            self._fh.close()  # closing drops the flock
            self._fh = None
