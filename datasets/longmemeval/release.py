"""Reads LongMemEval's release (``longmemeval_{s,m,oracle}[_cleaned].json``) into samples.

The file is a JSON list of 500 questions, each with its own chat history (README of
xiaowu0162/LongMemEval @ 9e0b455, "Dataset Format"): ``question_id``, ``question_type``
(six types), ``question``, ``answer`` (a string, sometimes a number), ``question_date``,
``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions`` (each a list of turns
``{role, content[, has_answer]}``) and ``answer_session_ids``. A ``question_id`` holding
``_abs`` marks an abstention question (the official code tests ``'_abs' in question_id``).

One sample per question (its haystack), one message per turn, sessions in file order
(sorted by date in _s and _m; the README says _oracle's are not sorted, and memplug keeps
the file's order there too). A turn's id is ``<session_id>:<n>`` with n counted from 1,
as the official retrieval numbers its corpus ids (``session_id + '_' + str(i_turn+1)``),
so that ``session_hit@K`` reads the session before the last ":". Evidence follows
``src/retrieval/run_retrieval.py``: the targets are the ``has_answer`` turns (by default
the user's only, which are all the official retrieval indexes; ``-o evidence=all`` adds the
assistant's), and abstention questions have none (the official retrieval metrics skip
them). ``answer_session_ids`` are kept in the question's meta.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from memplug.errors import DataError
from memplug.files import read_json, short
from memplug.models import Message, Question, Sample

log = logging.getLogger(__name__)

#: the six question types of the README, in its order
QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
#: appended to an abstention question's category, as to its id
ABSTENTION_SUFFIX = "_abs"
_DATE = re.compile(r"^\s*(\d{4})/(\d{2})/(\d{2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})\s*$")

#: sha256 of the official release files, by file name. Empty: neither the official repository
#: (README, 9e0b455) nor its Hugging Face cards publish checksums, and memplug pins none it
#: cannot trace to the authors; see docs/datasets/longmemeval.md, "Provenance".
KNOWN_SHA256: dict[str, str] = {}
#: the file names of the releases (original 2024/10 and cleaned 2025/09) and the variant each is
RELEASE_NAMES = {
    "longmemeval_s.json": "s",
    "longmemeval_m.json": "m",
    "longmemeval_oracle.json": "oracle",
    "longmemeval_s_cleaned.json": "s",
    "longmemeval_m_cleaned.json": "m",
    "longmemeval_oracle_cleaned.json": "oracle",
}


def parse_date(raw: str) -> str:
    """ISO 8601 for the release's "2023/05/20 (Sat) 02:21"; the text as it is otherwise."""
    m = _DATE.match(raw)
    if not m:
        return raw
    try:
        year, month, day, hour, minute = (int(g) for g in m.groups())
        return datetime(year, month, day, hour, minute).isoformat()
    except ValueError:
        return raw


def is_abstention(question_id: str) -> bool:
    return ABSTENTION_SUFFIX in question_id


def turn_text(turn: dict[str, Any], date: str) -> str:
    """A turn as the official generation writes a retrieved chunk of it (run_generation.py,
    ``prepare_prompt``, history_format json): "Session Date: <date>", "Session Content:", a
    blank line, then ``json.dumps`` of the turn without ``has_answer``, in a list."""
    shown = {k: v for k, v in turn.items() if k != "has_answer"}
    return f"Session Date: {date}\nSession Content:\n\n{json.dumps([shown])}"


def _check_list(path: Path, where: str, row: dict[str, Any], key: str, n: int | None) -> list[Any]:
    value = row.get(key)
    if not isinstance(value, list):
        raise DataError(path, f"{key!r} must be a list, got {type(value).__name__}", where)
    if n is not None and len(value) != n:
        raise DataError(path, f"{key!r} has {len(value)} entries, haystack_sessions {n}", where)
    return value


def read_question(
    path: Path, where: str, row: Any, *, evidence: str = "user", text: str = "official", judge: str = "longmemeval"
) -> Sample:
    if not isinstance(row, dict):
        raise DataError(path, f"expected an object, got {type(row).__name__}", where)
    for key in ("question_id", "question_type", "question", "question_date"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise DataError(path, f"missing {key!r} (a string)", where)
    if "answer" not in row or row["answer"] is None or isinstance(row["answer"], (dict, list)):
        raise DataError(path, "missing 'answer' (a string or number)", where)
    qid, qtype = row["question_id"], row["question_type"]
    where = f"{where} ({qid})"
    if qtype not in QUESTION_TYPES:
        raise DataError(path, f"question_type {short(qtype)} is not one of {', '.join(QUESTION_TYPES)}", where)
    sessions = _check_list(path, where, row, "haystack_sessions", None)
    ids = [str(s) for s in _check_list(path, where, row, "haystack_session_ids", len(sessions))]
    dates = _check_list(path, where, row, "haystack_dates", len(sessions))
    answer_sessions = [str(s) for s in row.get("answer_session_ids") or []]
    abstention = is_abstention(qid)
    messages: list[Message] = []
    targets: list[str] = []
    seen: dict[str, int] = {}
    for s, (sid, date, turns) in enumerate(zip(ids, dates, sessions)):
        if not isinstance(turns, list):
            raise DataError(
                path, f"a session is a list of turns, got {type(turns).__name__}", f"{where}.haystack_sessions[{s}]"
            )
        if sid in seen:  # two sessions under one id would merge their turns' ids
            seen[sid] += 1
            log.warning(
                "%s: %s: session id %s repeats; its turns are numbered under %s~%d", path, where, sid, sid, seen[sid]
            )
            sid = f"{sid}~{seen[sid]}"
        else:
            seen[sid] = 1
        date = str(date)
        for t, turn in enumerate(turns):
            place = f"{where}.haystack_sessions[{s}][{t}]"
            if (
                not isinstance(turn, dict)
                or not isinstance(turn.get("role"), str)
                or not isinstance(turn.get("content"), str)
            ):
                raise DataError(path, "a turn needs string 'role' and 'content'", place)
            mid = f"{sid}:{t + 1}"
            body = turn_text(turn, date) if text == "official" else turn["content"]
            messages.append(
                Message(
                    mid,
                    body,
                    time=parse_date(date),
                    speaker=turn["role"],
                    meta={"session": sid, "date": date},
                    shows=("time", "speaker") if text == "official" else (),
                )
            )
            if turn.get("has_answer") is True and not abstention and (evidence == "all" or turn["role"] == "user"):
                targets.append(mid)
    question = Question(
        id=qid,
        text=row["question"],
        # an abstention question's "answer" explains why it has none: the judge's abstention
        # prompt reads it (meta["answer"]); answer metrics (subem, f1) do not apply
        answers=() if abstention else (str(row["answer"]),),
        category=qtype + (ABSTENTION_SUFFIX if abstention else ""),
        targets=targets,
        time=parse_date(row["question_date"]),
        meta={
            "question_id": qid,
            "question_type": qtype,
            "abstention": abstention,
            "answer": row["answer"],
            "answer_session_ids": answer_sessions,
            "time_text": row["question_date"],
            "judge": judge,
            "family": "longmemeval",
        },
    )
    return Sample(qid, messages, [question], {"file": str(path), "sessions": len(sessions), "question_type": qtype})


def load_release(
    path: Path, *, evidence: str = "user", text: str = "official", judge: str = "longmemeval"
) -> Iterator[Sample]:
    """Samples of every question in the file, in file order; the file's provenance checked first."""
    check_provenance(path)
    data = read_json(path)
    if isinstance(data, dict):  # one question; an object of another shape is no release
        if "question_id" not in data:
            keys = ", ".join(sorted(map(str, data))[:5]) or "none"
            raise DataError(path, f"expected a JSON list of questions, got an object (keys: {keys})")
        data = [data]
    if not isinstance(data, list) or not data:
        raise DataError(path, "expected a non-empty JSON list of questions")
    seen: set[str] = set()
    for i, row in enumerate(data):
        sample = read_question(path, f"[{i}]", row, evidence=evidence, text=text, judge=judge)
        if sample.id in seen:
            raise DataError(path, f"question_id {sample.id} repeats", f"[{i}]")
        seen.add(sample.id)
        yield sample


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_provenance(path: Path, known: dict[str, str] | None = None) -> str | None:
    """A warning (logged, and returned) when ``path`` is named as a release whose pinned sha256
    it does not have, or has the sha256 of another release (the cleaned and original files are
    easily mixed up); None when it matches or nothing is pinned for it."""
    known = KNOWN_SHA256 if known is None else known
    if not known or not path.is_file():
        return None
    digest = file_sha256(path)
    same = [name for name, h in known.items() if h == digest]
    if path.name in known and known[path.name] == digest:
        return None
    if same:
        message = (
            f"{path}: its content is the release {same[0]}, not {path.name}" if path.name in RELEASE_NAMES else None
        )
    elif path.name in known:
        message = (
            f"{path}: sha256 {digest[:12]}… is not that of the official {path.name} "
            f"({known[path.name][:12]}…): a modified or other copy; runs on it are not comparable"
        )
    else:
        message = None
    if message:
        log.warning("%s", message)
    return message
