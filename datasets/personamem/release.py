"""Reads PersonaMem's release: ``questions_<size>.csv`` with ``shared_contexts_<size>.jsonl``.

The layout is the one ``inference_standalone_openai.py`` (github bowen-upenn/PersonaMem @
041d82ac) reads: the CSV has a row per question (``question_id``, ``question_type``,
``user_question_or_message``, ``correct_answer`` such as "(c)", ``all_options``, a Python list
literal of four "(x) ..." strings, ``shared_context_id`` and ``end_index_in_shared_context``,
plus persona, topic and distance columns); each JSONL line is ``{shared_context_id:
[{"role", "content"}, ...]}``. The official run asks a question with the context cut at
``context[:end_index_in_shared_context]``: the model has seen that prefix and nothing after.

memplug keeps that promise with one sample per (shared context, end index): the sample's
messages are the prefix, its questions are the rows that share that end index. An agent
therefore never holds a message said after the point a question is asked, at the price of
ingesting the shared context once per end index (the prefixes overlap).
"""

from __future__ import annotations

import ast
import csv
import json
import re
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from memplug.errors import DataError
from memplug.files import short
from memplug.models import Message, Question, Sample

SIZES = ("32k", "128k", "1M")
QUESTIONS = re.compile(r"^questions_(.+)\.csv$")
COLUMNS = (
    "question_id",
    "question_type",
    "user_question_or_message",
    "correct_answer",
    "all_options",
    "shared_context_id",
    "end_index_in_shared_context",
)
#: columns kept in a question's meta when the release has them (the official result CSV's columns)
META_COLUMNS = (
    "persona_id",
    "topic",
    "stereotypical",
    "context_length_in_tokens",
    "distance_to_ref_in_blocks",
    "distance_to_ref_in_tokens",
    "num_irrelevant_tokens",
    "distance_to_ref_proportion_in_context",
)
_LETTER = re.compile(r"^\(([a-z])\)")


def release_files(data: Path, size: str | None) -> tuple[Path, Path]:
    """(questions CSV, shared contexts JSONL) for ``--data`` (the CSV itself or its folder)."""
    if data.is_dir():
        if size is not None:
            questions = data / f"questions_{size}.csv"
        else:
            found = sorted(p for p in data.iterdir() if QUESTIONS.match(p.name))
            if len(found) != 1:
                names = ", ".join(p.name for p in found) or "none"
                raise DataError(
                    data,
                    f"expected one questions_<size>.csv here (found {names}): pass -o size=32k, "
                    "128k or 1M, or the CSV itself as --data",
                )
            questions = found[0]
    else:
        questions = data
    if not questions.is_file():
        raise DataError(questions, "no such file")
    match = QUESTIONS.match(questions.name)
    if match is None:
        raise DataError(
            questions,
            "expected a file named questions_<size>.csv (its contexts are read from "
            "shared_contexts_<size>.jsonl beside it)",
        )
    contexts = questions.with_name(f"shared_contexts_{match.group(1)}.jsonl")
    if not contexts.is_file():
        raise DataError(contexts, f"no such file (the shared contexts of {questions.name})")
    return questions, contexts


def context_offsets(path: Path) -> dict[str, int]:
    """Byte offset of each shared context's line, as the official ``build_jsonl_index``:
    the 1M release is large, so a context is read only when a question needs it.
    Only the key is decoded here, not the whole line."""
    index: dict[str, int] = {}
    decoder = json.JSONDecoder()
    with path.open("rb") as fh:
        for lineno, raw in enumerate(iter(fh.readline, b""), start=1):
            offset = fh.tell() - len(raw)
            line = raw.decode("utf-8", errors="replace").lstrip()
            if not line:
                continue
            try:
                if not line.startswith("{"):
                    raise ValueError
                key, _ = decoder.raw_decode(line, 1 + len(line[1:]) - len(line[1:].lstrip()))
            except ValueError:
                raise DataError(
                    path, "expected a JSON object {shared_context_id: [messages]}", f"line {lineno}"
                ) from None
            if not isinstance(key, str):
                raise DataError(path, "expected a JSON object {shared_context_id: [messages]}", f"line {lineno}")
            if key in index:
                raise DataError(path, f"shared context {short(key)} repeats", f"line {lineno}")
            index[key] = offset
    return index


def read_context(path: Path, offset: int, sid: str) -> tuple[Message, ...]:
    """The messages of one shared context; a message's id is its index in the context
    (so the same turn has the same id in every prefix) and its speaker the role."""
    with path.open("rb") as fh:
        fh.seek(offset)
        raw = fh.readline()
    try:
        item = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(path, f"invalid JSON in the line of shared context {short(sid)} ({exc})") from None
    turns = item.get(sid) if isinstance(item, dict) else None
    if not isinstance(turns, list):
        raise DataError(path, "expected a list of messages", f"shared context {short(sid)}")
    out = []
    for i, turn in enumerate(turns):
        if not (isinstance(turn, dict) and isinstance(turn.get("content"), str) and isinstance(turn.get("role"), str)):
            raise DataError(
                path, 'a message must be {"role": ..., "content": ...}', f"shared context {short(sid)}[{i}]"
            )
        out.append(Message(str(i), turn["content"], speaker=turn["role"]))
    return tuple(out)


def parse_options(raw: str, path: Path, place: str) -> dict[str, str]:
    """``all_options`` as {letter: repr(option)}: the official prompt writes the cell as it
    is, a Python list literal, and "[" + ", ".join(values) + "]" is that literal again."""
    try:
        options = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        raise DataError(path, f"all_options is not a Python list literal: {short(raw)}", place) from None
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise DataError(path, "all_options must be a list of strings", place)
    choices: dict[str, str] = {}
    for option in options:
        m = _LETTER.match(option.strip())
        if m is None or m.group(1) in choices:
            raise DataError(path, f"an option must start with a new letter such as '(a)': {short(option)}", place)
        choices[m.group(1)] = repr(option)
    return choices


def _question(row: Mapping[str, str], path: Path, place: str) -> Question:
    choices = parse_options(row["all_options"], path, place)
    correct = row["correct_answer"].lower().strip("() ")
    if correct not in choices:
        raise DataError(
            path,
            f"correct_answer {short(row['correct_answer'])} is not one of the options "
            f"{', '.join(f'({c})' for c in choices)}",
            place,
        )
    meta: dict[str, Any] = {k: row[k] for k in META_COLUMNS if k in row}
    meta.update(correct_answer=row["correct_answer"], shared_context_id=row["shared_context_id"])
    return Question(
        row["question_id"],
        row["user_question_or_message"],
        (ast.literal_eval(choices[correct]),),
        row["question_type"],
        choices,
        correct,
        meta=meta,
    )


def read_questions(path: Path) -> list[tuple[str, int, Question]]:
    """(shared context id, end index, question) per row, in file order."""
    out: list[tuple[str, int, Question]] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        try:
            header = reader.fieldnames
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DataError(path, f"not a readable CSV ({exc})") from None
        missing = [c for c in COLUMNS if c not in (header or ())]
        if missing:
            raise DataError(path, f"lacks the column(s) {', '.join(missing)} of the PersonaMem release")
        for row in _rows(reader, path):
            place = f"line {reader.line_num}"
            if any(row[c] is None for c in COLUMNS):
                raise DataError(path, "the row has fewer cells than the header", place)
            if row["question_id"] in seen:
                raise DataError(path, f"question_id {short(row['question_id'])} repeats", place)
            seen.add(row["question_id"])
            try:
                end = int(row["end_index_in_shared_context"])
            except ValueError:
                raise DataError(
                    path,
                    f"end_index_in_shared_context is not an integer: {short(row['end_index_in_shared_context'])}",
                    place,
                ) from None
            out.append((row["shared_context_id"], end, _question(row, path, place)))
    if not out:
        raise DataError(path, "holds no questions")
    return out


def _rows(reader: "csv.DictReader[str]", path: Path) -> Iterator[dict[str, str]]:
    """The reader's rows, a malformed CSV (a stray quote, bytes that are not UTF-8) as a DataError."""
    try:
        yield from reader
    except (csv.Error, UnicodeDecodeError) as exc:
        raise DataError(path, f"not a readable CSV ({exc})", f"line {reader.line_num}") from None


def load_release(questions_path: Path, contexts_path: Path) -> Iterator[Sample]:
    """One sample per (shared context, end index), in the order the CSV first names them."""
    rows = read_questions(questions_path)
    offsets = context_offsets(contexts_path)
    groups: dict[tuple[str, int], list[Question]] = {}
    for sid, end, question in rows:
        if sid not in offsets:
            raise DataError(
                questions_path,
                f"shared_context_id {short(sid)} is not in {contexts_path.name}",
                f"question {short(question.id)}",
            )
        groups.setdefault((sid, end), []).append(question)
    loaded: tuple[str, Sequence[Message]] | None = None  # the official loader keeps one context too
    for (sid, end), questions in groups.items():
        if loaded is None or loaded[0] != sid:
            loaded = (sid, read_context(contexts_path, offsets[sid], sid))
        messages = loaded[1]
        if not 1 <= end <= len(messages):
            raise DataError(
                questions_path,
                f"end_index_in_shared_context {end} is outside shared context {short(sid)} ({len(messages)} messages)",
                f"question {short(questions[0].id)}",
            )
        yield Sample(
            f"{sid}@{end}",
            messages[:end],
            questions,
            meta={"shared_context_id": sid, "end_index": end, "context_messages": len(messages)},
        )
