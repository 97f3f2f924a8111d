"""Finds and reads the PerLTQA release: one memory file and one QA file.

``--data`` is either a directory holding exactly one ``*mem*.json`` (e.g.
``perltmem_en_v2.json``) and one ``*qa*.json`` (``perltqa_en_v2.json``), or the memory
file itself, with the QA file given by ``-o qa=PATH`` (default: the one ``*qa*.json``
beside it).
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
    if data.is_dir():
        memory = _one(data, "*mem*.json", "memory")
        return memory, qa or _one(data, "*qa*.json", "QA", exclude=memory)
    return data, qa or _one(data.parent, "*qa*.json", "QA", exclude=data)


def load_release(data: Path, qa: Path | None, lang: str) -> Iterator[Sample]:
    """One sample per character that has questions, in the QA file's order."""
    memory_path, qa_path = release_paths(data, qa)
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
