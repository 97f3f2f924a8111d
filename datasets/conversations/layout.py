"""The ``conversations`` JSON-lines layout: read, validated line by line, into samples.

One line per sample (a conversation, or one question's own history)::

    {"id": "trip-1",
     "sessions": [{"id": "S1", "date": "2024-03-02T10:00",
                   "turns": [{"speaker": "Ana", "text": "We land in Lisbon on Friday."},
                             {"id": "S1:2", "speaker": "Ben", "text": "Great, I'll book the tram tour."}]}],
     "qa": [{"id": "q1", "question": "Where do Ana and Ben land?", "answers": ["Lisbon"],
             "evidence": ["S1:1"], "category": "single-hop", "date": "2024-03-10"}]}

- ``sessions`` in time order; a session has an ``id`` (default ``S<n>``), a ``date``
  (ISO 8601 recommended; any text is kept for the prompt) and ``turns``;
- a turn has ``speaker`` and ``text``, and an ``id`` (default ``<session id>:<n>``, n from
  1); the part of a turn id before its last ":" names its session (``session_hit@K``);
- ``qa``: ``question``, ``answers`` (a string, a number or a list of them; empty with
  ``"abstention": true`` for a question the history cannot answer), ``evidence`` (turn
  ids), ``category`` (default "default"), ``date`` (the question's time), ``id``
  (default ``q<n>``), optional ``choices`` {"A": ...} with ``correct_choice``.

(The keys are ``sessions`` and ``qa``, never ``messages``/``questions``, which would make
memplug read the file as its own samples format.)
"""

from __future__ import annotations

import codecs
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from memplug.errors import DataError
from memplug.files import BadNumber, loads
from memplug.models import Message, Question, Sample

SAMPLE_KEYS = {"id", "sessions", "qa", "meta"}
SESSION_KEYS = {"id", "date", "turns", "meta"}
TURN_KEYS = {"id", "speaker", "text", "meta"}
QA_KEYS = {
    "id",
    "question",
    "answers",
    "evidence",
    "category",
    "date",
    "choices",
    "correct_choice",
    "abstention",
    "meta",
}
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$")


def iso_or_none(text: str) -> str | None:
    if not _ISO.match(text.strip()):
        return None
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).isoformat()
    except ValueError:
        return None


def _str(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _answers(value: Any) -> list[str] | None:
    """The answers as strings (numbers written as digits), or None when they are not answers."""
    values = value if isinstance(value, list) else [value]
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            return None
        out.append(str(v))
    return out


class Reader:
    """Reads one line at a time; ``problems`` collects every error with its line number."""

    def __init__(self, path: Path, dates: bool = True) -> None:
        self.path = path
        #: start each turn's text with its session's date
        self.dates = dates
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.seen_ids: dict[str, int] = {}

    def problem(self, line: int, where: str, text: str) -> None:
        self.problems.append(f"line {line}: {where}: {text}" if where else f"line {line}: {text}")

    def sample(self, line: int, raw: str) -> Sample | None:
        """The sample of one line, or None with its problems recorded."""
        n_before = len(self.problems)
        try:
            row = loads(raw)
        except json.JSONDecodeError as exc:
            self.problem(line, "", f"not JSON ({exc.msg} at column {exc.colno})")
            return None
        except BadNumber as exc:  # NaN, 1e999, an integer of 5000 digits: no value to score against
            self.problem(line, "", exc.problem)
            return None
        if not isinstance(row, dict):
            self.problem(line, "", f"expected an object, got {type(row).__name__}")
            return None
        for key in sorted(set(row) - SAMPLE_KEYS):
            self.problem(line, "", f"unknown key {key!r} (known: {', '.join(sorted(SAMPLE_KEYS))})")
        sample_id = row.get("id", f"line{line}")
        if not _str(sample_id):
            self.problem(line, "id", "must be a non-empty string")
            sample_id = f"line{line}"
        if sample_id in self.seen_ids:
            self.problem(line, "id", f"{sample_id!r} is also the id of line {self.seen_ids[sample_id]}")
        self.seen_ids.setdefault(sample_id, line)
        messages = self._sessions(line, row.get("sessions"))
        turn_ids = {m.id for m in messages}
        questions = self._qa(line, row.get("qa"), turn_ids)
        if len(self.problems) > n_before:
            return None
        given = row.get("meta")
        meta = given if isinstance(given, dict) else {}
        return Sample(
            sample_id,
            messages,
            questions,
            {**meta, "line": line, "file": str(self.path), "sessions": len({m.meta["session"] for m in messages})},
        )

    def _sessions(self, line: int, sessions: Any) -> list[Message]:
        if not isinstance(sessions, list) or not sessions:
            self.problem(line, "sessions", "must be a non-empty list of sessions")
            return []
        messages: list[Message] = []
        seen: set[str] = set()
        for s, session in enumerate(sessions):
            where = f"sessions[{s}]"
            if not isinstance(session, dict):
                self.problem(line, where, f"expected an object, got {type(session).__name__}")
                continue
            for key in sorted(set(session) - SESSION_KEYS):
                self.problem(line, where, f"unknown key {key!r} (known: {', '.join(sorted(SESSION_KEYS))})")
            sid = session.get("id", f"S{s + 1}")
            if not _str(sid) or ":" in str(sid):
                self.problem(line, f"{where}.id", "must be a non-empty string without ':'")
                continue
            date = session.get("date")
            if date is not None and not _str(date):
                self.problem(line, f"{where}.date", "must be a string (ISO 8601 recommended)")
                date = None
            turns = session.get("turns")
            if not isinstance(turns, list) or not turns:
                self.problem(line, f"{where}.turns", "must be a non-empty list of turns")
                continue
            for t, turn in enumerate(turns):
                place = f"{where}.turns[{t}]"
                if not isinstance(turn, dict):
                    self.problem(line, place, f"expected an object, got {type(turn).__name__}")
                    continue
                for key in sorted(set(turn) - TURN_KEYS):
                    self.problem(line, place, f"unknown key {key!r} (known: {', '.join(sorted(TURN_KEYS))})")
                bad = [k for k in ("speaker", "text") if not _str(turn.get(k))]
                if bad:
                    self.problem(line, place, f"missing {' and '.join(repr(k) for k in bad)} (non-empty strings)")
                    continue
                tid = turn.get("id", f"{sid}:{t + 1}")
                if not _str(tid):
                    self.problem(line, f"{place}.id", "must be a non-empty string")
                    continue
                if tid in seen:
                    self.problem(line, f"{place}.id", f"{tid!r} names two turns")
                    continue
                seen.add(tid)
                if not tid.startswith(f"{sid}:"):
                    self.warnings.append(
                        f"line {line}: {place}.id: {tid!r} does not start with its session id "
                        f"'{sid}:' (session_hit@K reads the session before the last ':')"
                    )
                when = iso_or_none(date) if date else None
                text = f"{turn['speaker']}: {turn['text']}"
                shows = ["speaker"]
                if date is not None and self.dates:
                    text = f"[{date}] {text}"
                    shows.append("time")
                meta = {
                    "session": sid,
                    **({"date": date} if date else {}),
                    **(turn["meta"] if isinstance(turn.get("meta"), dict) else {}),
                }
                messages.append(Message(tid, text, time=when or date, speaker=turn["speaker"], meta=meta, shows=shows))
        return messages

    def _qa(self, line: int, qa: Any, turn_ids: set[str]) -> list[Question]:
        if not isinstance(qa, list) or not qa:
            self.problem(line, "qa", "must be a non-empty list of questions")
            return []
        out: list[Question] = []
        seen: set[str] = set()
        for i, q in enumerate(qa):
            where = f"qa[{i}]"
            if not isinstance(q, dict):
                self.problem(line, where, f"expected an object, got {type(q).__name__}")
                continue
            for key in sorted(set(q) - QA_KEYS):
                self.problem(line, where, f"unknown key {key!r} (known: {', '.join(sorted(QA_KEYS))})")
            qid = q.get("id", f"q{i + 1}")
            if not _str(qid) or qid in seen:
                self.problem(line, f"{where}.id", f"{qid!r} is empty or names two questions")
                continue
            seen.add(qid)
            if not _str(q.get("question")):
                self.problem(line, f"{where}.question", "missing (a non-empty string)")
                continue
            abstention = q.get("abstention", False)
            if not isinstance(abstention, bool):
                self.problem(line, f"{where}.abstention", "must be true or false")
                continue
            answers = _answers(q.get("answers", []))
            if answers is None:
                self.problem(line, f"{where}.answers", "must be a string, a number or a list of them")
                continue
            choices, correct = q.get("choices"), q.get("correct_choice")
            if choices is not None and (
                not isinstance(choices, dict) or not all(_str(v) for v in choices.values()) or correct not in choices
            ):
                self.problem(line, f"{where}.choices", "must map letters to texts, with correct_choice one of them")
                continue
            if not answers and not abstention and choices is None:
                self.problem(line, f"{where}.answers", 'empty: give answers, choices, or "abstention": true')
                continue
            evidence = q.get("evidence", [])
            if isinstance(evidence, str):
                evidence = [evidence]
            if not isinstance(evidence, list) or not all(_str(e) for e in evidence):
                self.problem(line, f"{where}.evidence", "must be a list of turn ids")
                continue
            unknown = [e for e in evidence if e not in turn_ids]
            if unknown:
                self.problem(line, f"{where}.evidence", f"{', '.join(map(repr, unknown))} names no turn of this sample")
                continue
            category = q.get("category", "default")
            if not _str(category) and not isinstance(category, int):
                self.problem(line, f"{where}.category", "must be a string")
                continue
            date = q.get("date")
            if date is not None and not _str(date):
                self.problem(line, f"{where}.date", "must be a string")
                continue
            meta = dict(q["meta"]) if isinstance(q.get("meta"), dict) else {}
            meta.update({"abstention": abstention, "evidence": evidence})
            if date:
                meta["time_text"] = date
            out.append(
                Question(
                    id=qid,
                    text=q["question"],
                    answers=tuple(answers),
                    category=str(category),
                    choices=choices,
                    correct_choice=correct,
                    targets=evidence,
                    time=(iso_or_none(date) or date) if date else None,
                    meta=meta,
                )
            )
        return out


def read_file(path: Path, dates: bool = True) -> tuple[list[Sample], Reader]:
    """Every sample of the file, and the reader with every problem found (line-numbered)."""
    reader = Reader(path, dates)
    samples: list[Sample] = []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(path, f"cannot read ({exc.strerror})") from None
    try:
        text = raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError as exc:
        reader.problem(raw[: exc.start].count(b"\n") + 1, "", "not UTF-8")
        return samples, reader
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        sample = reader.sample(n, line)
        if sample is not None:
            samples.append(sample)
    if not samples and not reader.problems:
        reader.problem(1, "", "the file holds no sample")
    return samples, reader


def load(path: Path, dates: bool = True) -> Iterator[Sample]:
    """The samples, or a DataError naming the first problem's line (and how many there are)."""
    samples, reader = read_file(path, dates)
    if reader.problems:
        more = (
            f" (and {len(reader.problems) - 1} more: memplug generate --dataset conversations --data "
            f"{path} --out /dev/null --check lists them)"
            if len(reader.problems) > 1
            else ""
        )
        raise DataError(path, reader.problems[0] + more)
    yield from samples
