"""What a memory system stored: the run's stored.jsonl.

An agent may list what it holds for its sample (``stored()``, see
:class:`memplug.protocols.ListsStored`). The runner asks once per sample, right after
ingestion and before the first question, and writes one line per sample:

    {"sample_id": "s0", "total": 412, "items": [{"text": "...", "id": "...", "message_ids": [...]}, ...]}

``items`` holds the first :data:`MAX_ITEMS` of them (each text clipped to
:data:`MAX_CHARS` characters, ``"clipped": true`` then), ``total`` how many the agent
listed. People ask for this when a system scores low: did it store the fact at all, or
store it and fail to find it? `memplug report --html` shows it beside each wrong answer.

Listing is a diagnostic: whatever goes wrong in it (the agent raises, returns
something that is not a list of items, the disk is full) is logged and nothing is
recorded for the sample; the run and its scores never depend on it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Iterable

import orjson

from memplug.models import Recalled, StoredItem
from memplug.record import json_number
from memplug.text import clip

log = logging.getLogger(__name__)

#: the file in a run directory
STORED_FILE = "stored.jsonl"
#: items kept per sample (the rest are counted in ``total``)
MAX_ITEMS = 200
#: characters kept per item's text
MAX_CHARS = 2000
#: keys that are not strings written as strings (json.dumps's way), numpy values as numbers
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE


def _item(value: Any) -> dict[str, Any]:
    """One listed thing as stored.jsonl writes it: a StoredItem, a Recalled, a plain string,
    or a mapping with a "text" (or Mem0's "memory") key."""
    if isinstance(value, StoredItem):
        out = value.as_dict()
    elif isinstance(value, Recalled):
        out = {"text": value.text, "id": None, "message_ids": list(value.message_ids)}
    elif isinstance(value, str):
        out = {"text": value, "id": None, "message_ids": []}
    elif isinstance(value, dict) and isinstance(text := value.get("text", value.get("memory")), str):
        out = StoredItem(
            text, _str_or_none(value.get("id")), tuple(value.get("message_ids") or ()), value.get("meta") or {}
        ).as_dict()
    else:
        raise TypeError(f"stored() listed a {type(value).__name__}, expected memplug.StoredItem or str")
    out["text"] = str(out["text"])
    return out


def _clipped(item: dict[str, Any]) -> dict[str, Any]:
    """The item as stored.jsonl keeps it: its text cut to MAX_CHARS, then ``"clipped": true``."""
    if len(item["text"]) <= MAX_CHARS:
        return item
    return {**item, "text": clip(item["text"], MAX_CHARS), "clipped": True}


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def listing(listed: Iterable[Any]) -> list[dict[str, Any]]:
    """Every item of ``listed`` as stored.jsonl writes one, texts whole (the run diagnoses its
    questions against the whole store, :mod:`memplug.diagnosis`); TypeError when it is not a
    list of items."""
    if isinstance(listed, (str, bytes)) or not hasattr(listed, "__iter__"):
        raise TypeError(f"stored() returned a {type(listed).__name__}, expected a list of memplug.StoredItem")
    return [_item(value) for value in listed]


def entry(sample_id: str, listed: Iterable[Any]) -> dict[str, Any]:
    """The stored.jsonl line for ``sample_id``: the first MAX_ITEMS of ``listed`` and their count."""
    return _line(sample_id, listing(listed))


def _line(sample_id: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"sample_id": sample_id, "total": len(items), "items": [_clipped(i) for i in items[:MAX_ITEMS]]}


def line_of(sample_id: str, listed: Iterable[Any]) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
    """Every item of ``listed`` (:func:`listing`) and the sample's line of stored.jsonl; (None,
    None) when it is not a list of items, which is logged, never raised."""
    try:
        items = listing(listed)
        return items, _line(sample_id, items)
    except Exception as exc:  # a diagnostic must not fail the run
        _not_recorded(sample_id, exc)
        return None, None


def _not_recorded(sample_id: str, exc: Exception) -> None:
    log.warning(
        "sample %s: what the agent stored is not recorded (%s: %s)",
        sample_id,
        type(exc).__name__,
        str(exc).strip().splitlines()[0] if str(exc).strip() else "",
    )


def _as_json(value: Any) -> Any:
    """orjson's fallback: what the records take (:func:`memplug.record.json_number`), anything
    else as its text."""
    try:
        return json_number(value)
    except TypeError:
        return str(value)


def _encoded(line: dict[str, Any]) -> bytes:
    """The line as compact UTF-8 JSON and a newline, as samples.jsonl's records are written.

    orjson rather than json: json.dumps was 7% of a warm rerun's samples thread, orjson
    takes a tenth of that. What orjson refuses (an int beyond 64 bits, a listing nested
    past 254 levels or holding itself) goes to json.dumps, which takes the first and
    fails on the others, which are then not recorded.
    """
    try:
        return orjson.dumps(line, default=_as_json, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        return (json.dumps(line, ensure_ascii=False, default=str, check_circular=False) + "\n").encode("utf-8")


def _open(run_path: Path | str) -> int:
    return os.open(os.path.join(run_path, STORED_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def append(run_path: Path, line: dict[str, Any]) -> None:
    """Append one sample's line to ``run_path``/stored.jsonl (a resumed sample gets a second
    line; :func:`read` keeps the last)."""
    fd = _open(run_path)
    try:
        _write_all(fd, _encoded(line))
    finally:
        os.close(fd)


class StoredFile:
    """A run's stored.jsonl, open while the run lasts (the driver's sink writes through it).

    Each sample's line is one ``write`` to a descriptor opened in append mode at the first
    line (a run whose agent lists nothing gets no file; a resumed run appends to the lines
    there), closed by :meth:`close` at the run's end, Ctrl-C and errors included. An
    open and a close per sample were a twentieth of a warm rerun's samples thread
    (bench/eval_throughput.py, 64 side by side; docs/performance.md). A line written after
    :meth:`close` is dropped (an agent's thread a Ctrl-C left behind: its sample is not
    part of the run); a failure (a full disk) is logged, never raised.
    """

    def __init__(self, run_path: Path) -> None:
        self.run_path = run_path
        self._fd: int | None = None
        self._closed = False
        self._lock = threading.Lock()  # the samples' thread writes, the run's thread closes

    def write(self, line: dict[str, Any]) -> None:
        try:
            data = _encoded(line)
            with self._lock:
                if self._closed:
                    return
                if self._fd is None:
                    self._fd = _open(self.run_path)
                _write_all(self._fd, data)
        except Exception as exc:  # a diagnostic must not fail the run
            _not_recorded(str(line.get("sample_id")), exc)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError as exc:
                log.warning("stored.jsonl: closing it failed (%s)", exc)


def read(run_path: Path) -> dict[str, dict[str, Any]]:
    """stored.jsonl of a run by sample id (the last line of a sample wins); {} when the run has
    none. A line that is not JSON (a torn last line, say) is skipped: this is a diagnostic."""
    path = Path(run_path) / STORED_FILE
    if not path.is_file():
        return {}
    out: dict[str, dict[str, Any]] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and isinstance(value.get("sample_id"), str):
                out[value["sample_id"]] = value
    return out
