"""Reads MemoryAgentBench's release as the official loader does: rows, kept by source.

The release (``ai-hyz/MemoryAgentBench`` on Hugging Face) is one parquet file per split,
``data/<Split>-00000-of-00001.parquet``, with the columns ``context``, ``questions``,
``answers`` (a list of lists) and ``metadata`` (a struct: ``source``, ``qa_pair_ids``,
``question_ids``, ``question_types``, ``question_dates``, ``previous_events``,
``keypoints``, ``demo``, ``haystack_sessions``). ``utils/eval_data_utils.py``
``_load_and_filter_dataset`` keeps the rows whose ``metadata.source`` equals the
requested source, and ``_process_single_sample_qa_lists`` makes every list field a list
(a lone value becomes a one-item list, None an empty one); :func:`rows` does the same.

``PATH`` may be a parquet file, a JSON file (a list of rows, or one row) or JSON lines
holding the same columns, or a folder of any of them (searched recursively, so the
downloaded repository folder works as it is).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import attrs

from memplug.datasets.parquet import parquet_rows
from memplug.errors import DataError, MemplugError
from memplug.files import read_json

SUFFIXES = (".parquet", ".json", ".jsonl")
#: ``_process_single_sample_qa_lists``'s metadata fields made lists
LIST_FIELDS = ("question_dates", "question_types", "question_ids", "previous_events", "qa_pair_ids", "demo")


@attrs.frozen
class Row:
    """One release row, its list fields as the official loader makes them."""

    file: Path
    index: int
    context: str
    questions: list[Any]
    answers: list[Any]
    metadata: dict[str, Any]

    @property
    def source(self) -> str:
        return str(self.metadata.get("source") or "")


def as_list(value: Any) -> list[Any]:
    """``_ensure_field_is_list``: a list as it is, another truthy value in a list, else []."""
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    return [value] if value else []


def release_files(path: Path) -> list[Path]:
    """The release files at ``path``: the file itself, or every parquet/JSON file under the folder."""
    if not path.exists():
        raise DataError(path, "no such file or folder")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        if not files:
            raise DataError(path, "no *.parquet, *.json or *.jsonl MemoryAgentBench files in this folder")
        return files
    if path.suffix not in SUFFIXES:
        raise DataError(path, f"expected a .parquet, .json or .jsonl file, got {path.suffix or 'no suffix'}")
    return [path]


def _json_rows(path: Path) -> list[Any]:
    if path.suffix == ".jsonl":
        import orjson

        out = []
        for n, line in enumerate(path.read_bytes().splitlines(), start=1):
            if line.strip():
                try:
                    out.append(orjson.loads(line))
                except orjson.JSONDecodeError as exc:
                    raise DataError(path, f"not JSON: {exc}", f"line {n}") from None
        return out
    data = read_json(path)
    return data if isinstance(data, list) else [data]


def _row(path: Path, index: int, raw: Any) -> Row:
    place = f"row {index}"
    if not isinstance(raw, dict):
        raise DataError(
            path, f"expected an object with context, questions, answers and metadata, got {type(raw).__name__}", place
        )
    for key in ("context", "questions", "answers", "metadata"):
        if key not in raw:
            raise DataError(path, f"missing key {key!r}", place)
    if not isinstance(raw["context"], str):
        raise DataError(path, f"context must be a string, got {type(raw['context']).__name__}", place)
    meta = raw["metadata"]
    if not isinstance(meta, dict):
        raise DataError(path, f"metadata must be an object, got {type(meta).__name__}", place)
    meta = {**meta, **{f: as_list(meta.get(f)) for f in LIST_FIELDS}}
    return Row(path, index, raw["context"], as_list(raw["questions"]), as_list(raw["answers"]), meta)


def _raw_rows(path: Path, source: str | None, only_meta: bool = False) -> Iterator[tuple[int, Any]]:
    if path.suffix == ".parquet":
        yield from enumerate(parquet_rows(path, source, only_meta))
        return
    for i, raw in enumerate(_json_rows(path)):
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        if source is None or (isinstance(meta, dict) and meta.get("source") == source):
            yield i, raw


def catalogue(path: Path) -> dict[str, tuple[int, Path]]:
    """Each source of the release at ``path``: its number of rows and the first file holding
    it, in file order (the metadata alone is read)."""
    found: dict[str, tuple[int, Path]] = {}
    for file in release_files(path):
        for index, raw in _raw_rows(file, None, only_meta=True):
            meta = raw.get("metadata") if isinstance(raw, dict) else None
            if not isinstance(meta, dict):
                raise DataError(file, "metadata must be an object", f"row {index}")
            name = str(meta.get("source") or "")
            count, first = found.get(name, (0, file))
            found[name] = (count + 1, first)
    return found


def sources_in(path: Path) -> dict[str, int]:
    """Each source of the release at ``path`` and its number of rows, in file order."""
    return {name: count for name, (count, _file) in catalogue(path).items()}


def split_of(path: Path, source: str) -> str | None:
    """The split that the first file holding ``source`` names
    (``Conflict_Resolution-00000-of-00001.parquet``); None when its name says none."""
    entry = catalogue(path).get(source)
    return entry[1].name.split("-", 1)[0] if entry is not None and "-" in entry[1].name else None


def rows(path: Path, source: str) -> list[Row]:
    """The rows of ``source`` (``metadata.source == source``, as the official loader keeps
    them); a source the release lacks is one line listing those it has."""
    out = [_row(file, index, raw) for file in release_files(path) for index, raw in _raw_rows(file, source)]
    if not out:
        have = sources_in(path)
        listed = ", ".join(f"{name} ({n})" for name, n in have.items()) or "none"
        raise MemplugError(f"{path}: no rows of source {source!r}; the sources it has (rows): {listed}")
    return out
