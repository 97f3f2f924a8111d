"""Samples to and from JSON lines, so generated data can be saved and evaluated later.

``memplug generate`` writes one sample per line; ``memplug eval --data FILE.jsonl``
reads such a file back for any dataset name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import attrs

from memplug.errors import DataError
from memplug.models import Message, Question, Sample

SAMPLE_KEYS = {"id", "messages", "questions"}


def sample_to_dict(sample: Sample) -> dict[str, Any]:
    return attrs.asdict(sample)


def sample_from_dict(raw: dict[str, Any]) -> Sample:
    return Sample(
        id=raw["id"],
        messages=tuple(Message(**m) for m in raw["messages"]),
        questions=tuple(Question(**q) for q in raw["questions"]),
        meta=raw.get("meta") or {},
    )


def dumps_sample(sample: Sample) -> str:
    """One deterministic JSON line (sorted keys, no ASCII escaping) for a sample."""
    return json.dumps(sample_to_dict(sample), ensure_ascii=False, sort_keys=True)


def is_sample_file(path: Path) -> bool:
    """True when ``path`` is a JSON-lines file whose first record is a serialised sample."""
    if path.suffix != ".jsonl" or not path.is_file():
        return False
    with path.open("rb") as fh:
        first = fh.readline(1 << 20)
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and SAMPLE_KEYS <= record.keys()


def read_samples(path: Path) -> Iterator[Sample]:
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield sample_from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise DataError(path, f"not a memplug sample ({type(exc).__name__}: {exc})", f"line {number}") from None
