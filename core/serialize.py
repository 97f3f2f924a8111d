"""Samples to and from JSON lines, so generated data can be saved and evaluated later.

``memplug generate`` writes one sample per line; ``memplug eval --data FILE.jsonl``
reads such a file back for any dataset name. Reading checks every field, so a hand-made
or damaged file fails here, naming the line and the key, instead of deep in a run.
"""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any, Iterator, Mapping

import attrs

from memplug.errors import DataError
from memplug.files import TOO_DEEP, decode_utf8, short
from memplug.models import SHOWABLE, Message, Question, Sample

#: how much of a .jsonl file is read to tell a samples file from another JSON-lines format
SNIFF_BYTES = 1 << 20


def sample_to_dict(sample: Sample) -> dict[str, Any]:
    """A sample as plain JSON-ready dicts and lists (what :func:`sample_from_dict` reads back)."""
    return attrs.asdict(sample)


class _Check:
    """Type checks of one JSON line, failing with the file, the line and the key path."""

    def __init__(self, path: Path | str, line: int) -> None:
        self.path, self.line = path, line

    def fail(self, place: str, problem: str) -> DataError:
        return DataError(self.path, problem, f"line {self.line}" + (f", {place}" if place else ""))

    def value(self, obj: Any, kind: type | tuple[type, ...], place: str) -> Any:
        if not isinstance(obj, kind) or (
            isinstance(obj, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))
        ):
            kinds = kind if isinstance(kind, tuple) else (kind,)
            names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
            raise self.fail(place, f"expected {names}, got {type(obj).__name__}")
        return obj

    def record(self, obj: Any, cls: type, required: tuple[str, ...], place: str) -> dict[str, Any]:
        """An object with the required keys and no keys ``cls`` does not have."""
        if not isinstance(obj, dict):
            raise self.fail(place, f"expected an object, got {type(obj).__name__}")
        for key in required:
            if key not in obj:
                raise self.fail(place, f"missing key {key!r}")
        known = {a.name for a in attrs.fields(cls)}
        for key in obj:
            if key not in known:
                raise self.fail(
                    place, f"unknown key {short(key)}; a {cls.__name__.lower()} has {', '.join(sorted(known))}"
                )
        return obj

    def strings(self, obj: Any, place: str) -> list[str]:
        self.value(obj, list, place)
        return [self.value(v, str, f"{place}[{i}]") for i, v in enumerate(obj)]


_ID = (str, int)
_TEXT_OR_NULL = (str, type(None))
_OBJECT_OR_NULL = (dict, type(None))


def _message(check: _Check, raw: Any, place: str) -> Message:
    check.record(raw, Message, ("id", "text"), place)
    check.value(raw["id"], _ID, f"{place}.id")
    check.value(raw["text"], str, f"{place}.text")
    for key in ("time", "speaker"):
        check.value(raw.get(key), _TEXT_OR_NULL, f"{place}.{key}")
    check.value(raw.get("meta"), _OBJECT_OR_NULL, f"{place}.meta")
    for i, name in enumerate(check.strings(raw.get("shows", []), f"{place}.shows")):
        if name not in SHOWABLE:
            raise check.fail(f"{place}.shows[{i}]", f"{short(name)} is not one of {', '.join(SHOWABLE)}")
    return Message(**raw)


def _question(check: _Check, raw: Any, place: str, message_ids: set[str]) -> Question:
    check.record(raw, Question, ("id", "text", "answers"), place)
    check.value(raw["id"], _ID, f"{place}.id")
    check.value(raw["text"], str, f"{place}.text")
    check.strings(raw["answers"], f"{place}.answers")
    check.value(raw.get("category", "default"), str, f"{place}.category")
    for key in ("correct_choice", "time"):
        check.value(raw.get(key), _TEXT_OR_NULL, f"{place}.{key}")
    check.value(raw.get("meta"), _OBJECT_OR_NULL, f"{place}.meta")
    choices = check.value(raw.get("choices"), _OBJECT_OR_NULL, f"{place}.choices")
    for letter, text in (choices or {}).items():
        check.value(text, str, f"{place}.choices.{letter}")
    correct = raw.get("correct_choice")
    if correct is not None and correct not in (choices or {}):
        raise check.fail(
            f"{place}.correct_choice",
            f"correct_choice {short(correct)} is not one of the choices {sorted(choices or {})}",
        )
    targets = check.value(raw.get("targets", []), list, f"{place}.targets")
    for i, target in enumerate(targets):
        check.value(target, _ID, f"{place}.targets[{i}]")
    missing = [str(t) for t in targets if str(t) not in message_ids]
    if missing:
        raise check.fail(f"{place}.targets", f"{short(missing)} names no message of the sample")
    check.strings(raw.get("anchors", []), f"{place}.anchors")
    return Question(**raw)


def sample_from_dict(raw: Any, path: Path | str = "<sample>", line: int = 1) -> Sample:
    """A Sample from its JSON form, every field checked (DataError names ``path``, ``line`` and the key)."""
    check = _Check(path, line)
    check.record(raw, Sample, ("id", "messages", "questions"), "")
    check.value(raw["id"], _ID, "id")
    check.value(raw.get("meta"), _OBJECT_OR_NULL, "meta")
    messages = [
        _message(check, m, f"messages[{i}]") for i, m in enumerate(check.value(raw["messages"], list, "messages"))
    ]
    ids: set[str] = set()
    for i, m in enumerate(messages):
        if m.id in ids:
            raise check.fail(f"messages[{i}].id", f"message id {short(m.id)} repeats")
        ids.add(m.id)
    questions = []
    seen: set[str] = set()
    for j, q in enumerate(check.value(raw["questions"], list, "questions")):
        question = _question(check, q, f"questions[{j}]", ids)
        if question.id in seen:
            raise check.fail(f"questions[{j}].id", f"question id {short(question.id)} repeats")
        seen.add(question.id)
        questions.append(question)
    return Sample(id=raw["id"], messages=tuple(messages), questions=tuple(questions), meta=raw.get("meta") or {})


def dumps_sample(sample: Sample) -> str:
    """One deterministic JSON line (sorted keys, no ASCII escaping) for a sample."""
    return json.dumps(sample_to_dict(sample), ensure_ascii=False, sort_keys=True)


def is_sample_file(path: Path) -> bool:
    """True when ``path`` is a ``.jsonl`` file that memplug reads as samples.

    Only a first record that parses as an object holding no ``messages``, and no
    ``questions`` either or a ``context`` beside them (MemoryAgentBench's release rows:
    context, questions, answers, metadata), marks the file as another JSON-lines format,
    left to the dataset's loader. A first line that does not parse (torn, not UTF-8, or longer than the
    sniffing window) still makes it a samples file, so that :func:`read_samples` reports
    the problem instead of the file being silently handed to a generator that ignores it.
    """
    if path.suffix != ".jsonl" or not path.is_file():
        return False
    with path.open("rb") as fh:
        first = fh.readline(SNIFF_BYTES)
        while first and not first.strip():
            first = fh.readline(SNIFF_BYTES)
    try:
        record = json.loads(first.removeprefix(codecs.BOM_UTF8))
    except (ValueError, RecursionError):  # UnicodeDecodeError included; read_samples says what is wrong
        return True
    if not isinstance(record, Mapping) or "messages" in record:
        return True
    return "questions" in record and "context" not in record


def read_samples(path: Path) -> Iterator[Sample]:
    """The samples of a JSON-lines file, one per non-blank line; an empty file is an error."""
    seen: dict[str, int] = {}
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            line = decode_utf8(raw, path, number)
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except RecursionError:
                raise DataError(path, TOO_DEEP, f"line {number}") from None
            except ValueError as exc:
                problem = f"not JSON ({exc.msg})" if isinstance(exc, json.JSONDecodeError) else "not JSON"
                raise DataError(path, f"{problem}; expected one memplug sample per line", f"line {number}") from None
            sample = sample_from_dict(record, path, number)
            if sample.id in seen:
                raise DataError(
                    path, f"sample id {short(sample.id)} repeats (first on line {seen[sample.id]})", f"line {number}"
                )
            seen[sample.id] = number
            yield sample
    if not seen:
        raise DataError(path, "holds no samples (expected one memplug sample per line)")


_PLAIN = frozenset({str, int, float, bool, type(None)})


def jsonable(value: Any) -> Any:
    """``value`` with mappings as dicts of string keys, collections as lists, others as str:
    what a plugin put in a question's or a recall's ``meta`` (any object), as a record keeps it."""
    if type(value) in _PLAIN:  # the common case first: most metadata is already plain
        return value
    if isinstance(value, dict) or hasattr(value, "items"):
        return {k if type(k) is str else str(k): v if type(v) in _PLAIN else jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
