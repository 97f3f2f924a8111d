"""Finds and reads the PerLTQA release: one memory file and one QA file.

``--data`` is either a directory holding exactly one ``*mem*.json`` (e.g.
``perltmem_en_v2.json``) and one ``*qa*.json`` (``perltqa_en_v2.json``), or the memory
file itself, with the QA file given by ``-o qa=PATH`` (default: the one ``*qa*.json``
beside it). An error in a file found by name says it was picked, and why: a neighbour
that happens to match ``*qa*.json`` is then no mystery.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from memplug.datasets.perltqa.schema import Checker, character_sample
from memplug.errors import DataError
from memplug.models import Sample
from memplug.files import read_json


def _one(folder: Path, pattern: str, what: str, exclude: Path | None = None) -> Path:
    found = sorted(p for p in folder.glob(pattern) if p.is_file() and p != exclude)
    if len(found) != 1:
        listed = ", ".join(p.name for p in found) or "none"
        raise DataError(
            folder,
            f"expected exactly one {what} file matching {pattern} (found: {listed}); "
            f"pass the memory file as --data and the QA file with -o qa=PATH",
        )
    return found[0]


def release_paths(data: Path, qa: Path | None) -> tuple[Path, Path]:
    """(memory file, QA file) from --data and the optional qa option."""
    memory, qa_path, _ = _picked_paths(data, qa)
    return memory, qa_path


def _picked_paths(data: Path, qa: Path | None) -> tuple[Path, Path, dict[Path, str]]:
    """(memory file, QA file) and, for each file found by name rather than given, the note
    an error in it ends with."""
    how = "pass the memory file as --data and the QA file with -o qa=PATH"
    notes: dict[Path, str] = {}
    if data.is_dir():
        memory = _one(data, "*mem*.json", "memory")
        notes[memory] = f"picked as the memory file, the one *mem*.json in {data}; {how}"
        where = f"in {data}"
    else:
        memory, where = data, f"beside --data {data.name}"
    if qa is not None:
        return memory, qa, notes
    qa_path = _one(memory.parent, "*qa*.json", "QA", exclude=memory)
    notes[qa_path] = f"picked as the QA file, the one *qa*.json {where}; {how}"
    return memory, qa_path, notes


def load_release(data: Path, qa: Path | None, lang: str) -> Iterator[Sample]:
    """One sample per character that has questions, in the QA file's order."""
    memory_path, qa_path, notes = _picked_paths(data, qa)
    try:
        yield from _read_release(memory_path, qa_path, lang)
    except DataError as exc:
        note = notes.get(Path(exc.path))
        if note is None:
            raise
        raise DataError(exc.path, f"{exc.problem} ({note})", exc.place) from None


def _read_release(memory_path: Path, qa_path: Path, lang: str) -> Iterator[Sample]:
    memory_check, qa_check = Checker(memory_path), Checker(qa_path)
    memory = read_json(memory_path)
    if not isinstance(memory, dict):
        raise memory_check.fail(
            "top level",
            f"expected the memory file, an object keyed by character name, got "
            f"{type(memory).__name__} (is this the QA file?)",
        )
    entries = qa_check.expect(read_json(qa_path), list, "top level")
    seen: set[str] = set()
    asked = 0
    for n, entry in enumerate(entries):
        qa_check.expect(entry, dict, f"[{n}]")
        for name, sections in entry.items():
            if name in seen:
                raise qa_check.fail(f"[{n}].{name}", "character listed twice")
            seen.add(name)
            if name not in memory:
                raise qa_check.fail(f"[{n}].{name}", f"character not in the memory file {memory_path.name}")
            sample = character_sample(name, memory[name], sections, lang, memory_check, qa_check, str(qa_path))
            asked += len(sample.questions)
            yield sample
    if not asked:
        raise qa_check.fail("top level", "no questions for any character (an evaluation needs at least one)")
