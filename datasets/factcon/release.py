"""Reads MemoryAgentBench's FactConsolidation release rows into samples.

A row is ``{context, questions, answers, metadata: {qa_pair_ids, source, ...}}`` where the
context is "Here is a list of facts:" followed by one ``N. fact`` line per fact. A file
holds one row or a list of rows; a directory means every ``*.json`` file in it, sorted.
MemoryAgentBench's own release, ``Conflict_Resolution-00000-of-00001.parquet`` (or a
folder holding it), is read too: its rows whose source is a FactConsolidation one.

Known quirks of the release are kept as they are (seed data README): a few single-hop
gold answers are the older fact, and some questions have no conflicting fact at all.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Sequence

from memplug.datasets.parquet import parquet_rows
from memplug.errors import DataError
from memplug.models import Message, Question, Sample
from memplug.files import read_json, short
from memplug.diagnosis import GOLD_IN_CONTEXT_KEY

_FACT = re.compile(r"^(\d+)\.\s(.*)$")
_KIND = re.compile(r"_(sh|mh)_", re.IGNORECASE)


def release_files(path: Path) -> list[Path]:
    """Every ``*.json`` of a directory (sorted), or the file itself."""
    if path.is_dir():
        files = sorted(p for p in [*path.glob("*.json"), *path.rglob("*.parquet")] if p.is_file())
        if not files:
            raise DataError(path, "no *.json or *.parquet FactConsolidation files in this directory")
        return files
    return [path]


def parse_context(path: Path, place: str, context: str) -> tuple[str, list[tuple[int, str]]]:
    """The header line and the (serial, fact) pairs; serials must increase."""
    header = ""
    facts: list[tuple[int, str]] = []
    for lineno, line in enumerate(context.split("\n"), start=1):
        line = line.strip()
        if not line:
            continue
        match = _FACT.match(line)
        if match is None:
            if not facts and not header:
                header = line
                continue
            raise DataError(
                path, f"expected a numbered fact 'N. text', got {line[:60]!r}", f"{place}.context line {lineno}"
            )
        serial = int(match.group(1))
        if facts and serial <= facts[-1][0]:
            raise DataError(
                path, f"serial number {serial} does not follow {facts[-1][0]}", f"{place}.context line {lineno}"
            )
        facts.append((serial, match.group(2)))
    if not facts:
        raise DataError(path, "context holds no numbered facts", f"{place}.context")
    return header, facts


def contiguous(facts: Sequence[tuple[int, str]], start: int) -> bool:
    """Serials start, start + 1, ... with no gap."""
    return [n for n, _ in facts] == list(range(start, start + len(facts)))


def _category(path: Path, place: str, qa_id: str, source: str) -> str:
    match = _KIND.search(f"_{qa_id}_") or _KIND.search(f"_{source}_")
    if match is None:
        raise DataError(path, f"cannot tell single-hop from multi-hop: {short(qa_id)} has no _sh_ or _mh_", place)
    return match.group(1).lower()


def _answers(path: Path, place: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(a, str) for a in value):
        return tuple(value)
    raise DataError(path, "expected a non-empty list of answer strings", place)


def read_row(path: Path, place: str, row: Any, sample_id: str) -> Sample:
    if not isinstance(row, dict):
        raise DataError(path, f"expected an object, got {type(row).__name__}", place)
    for key, kind in (("context", str), ("questions", list), ("answers", list), ("metadata", dict)):
        if key not in row:
            raise DataError(path, f"missing key {key!r}", place)
        if not isinstance(row[key], kind):
            raise DataError(path, f"expected {kind.__name__}, got {type(row[key]).__name__}", f"{place}.{key}")
    meta = row["metadata"]
    ids = meta.get("qa_pair_ids")
    questions, answers = row["questions"], row["answers"]
    if not isinstance(ids, list) or len(ids) != len(questions):
        raise DataError(path, f"qa_pair_ids must list one id per question ({len(questions)})", f"{place}.metadata")
    if len(answers) != len(questions):
        raise DataError(path, f"{len(answers)} answers for {len(questions)} questions", f"{place}.answers")
    if not questions:
        raise DataError(path, "the row has no questions", f"{place}.questions")
    header, facts = parse_context(path, place, row["context"])
    source = str(meta.get("source") or "")
    messages = [Message(str(n), f"{n}. {text}", meta={"serial": n}) for n, text in facts]
    context_lower = row["context"].lower()
    built = []
    for i, (qa_id, text, gold) in enumerate(zip(ids, questions, answers)):
        where = f"{place}.questions[{i}]"
        if not isinstance(text, str) or not isinstance(qa_id, str):
            raise DataError(path, "question and qa_pair_id must be strings", where)
        gold_answers = _answers(path, f"{place}.answers[{i}]", gold)
        built.append(
            Question(
                id=qa_id,
                text=text,
                answers=gold_answers,
                category=_category(path, f"{place}.metadata.qa_pair_ids[{i}]", qa_id, source),
                # the release says which answer is right but not which fact holds it
                targets=(),
                meta={"qa_pair_id": qa_id, GOLD_IN_CONTEXT_KEY: any(a.lower() in context_lower for a in gold_answers)},
            )
        )
    return Sample(
        sample_id,
        messages,
        built,
        {
            "source": source,
            "file": str(path),
            "header": header,
            "n_facts": len(facts),
            "first_serial": facts[0][0],
            "contiguous_serials": contiguous(facts, facts[0][0]),
        },
    )


def load_release(path: Path) -> Iterator[Sample]:
    """Samples of every row of every release file under ``path``, in file order."""
    seen: dict[str, int] = {}
    for file in release_files(path):
        if file.suffix == ".parquet":
            data: Any = [
                r
                for r in parquet_rows(file, None)
                if str((r.get("metadata") or {}).get("source") or "").startswith("factconsolidation")
            ]
        else:
            data = read_json(file)
        rows = data if isinstance(data, list) else [data]
        if not rows:
            raise DataError(file, "holds an empty list of rows")
        for r, row in enumerate(rows):
            place = f"row {r}" if isinstance(data, list) else "row"
            meta = row.get("metadata") if isinstance(row, dict) else None
            base = str(meta.get("source") or file.stem) if isinstance(meta, dict) else file.stem
            seen[base] = seen.get(base, 0) + 1
            sample_id = base if seen[base] == 1 else f"{base}#{seen[base] - 1}"
            yield read_row(file, place, row, sample_id)
