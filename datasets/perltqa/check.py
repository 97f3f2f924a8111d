"""`memplug generate --dataset perltqa --check`: every gold answer held against its reference memories.

PerLTQA's memory anchors (seed 001, §3.2) are the key spans of an answer, taken from the
memory the answer rests on; the generator writes every anchor verbatim into the gold
answer and into a referenced memory item, so that ``anchor_map`` of the gold answers is 1.
The validator checks exactly that, from the messages and never from stored answers alone:
each anchor must occur in the gold answer and in a referenced message, every reference
must be a message of the character, and a question's memory type must be its section's
(semantic: profile and social_relationship; episodic: events and dialogues, §3.4) and
that of the memories it references. Release data (``--data``) is held to the structure
only; its anchors and references are counted, not failed, since the release has known
exceptions (dangling references, anchors with [-1, -1] spans).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from memplug.datasets.checks import CheckReport
from memplug.datasets.perltqa.schema import MEMORY_TYPE, SECTIONS
from memplug.models import Message, Question, Sample

GENERATED = "generated"


def message_problems(sample: Sample, where: str) -> list[str]:
    """Unique ids, and each memory item's memory type the one its kind has."""
    problems = []
    if len({m.id for m in sample.messages}) != len(sample.messages):
        problems.append(f"{where}: duplicate memory ids")
    for m in sample.messages:
        kind, memory_type = m.meta.get("kind"), m.meta.get("memory_type")
        if (MEMORY_TYPE.get(kind) if isinstance(kind, str) else None) != memory_type:
            problems.append(f"{where}: memory {m.id} of kind {kind!r} is labelled {memory_type!r}")
    return problems


def support(q: Question, by_id: dict[str, Message]) -> dict[str, list[str]]:
    """What in the question is not borne out by the gold answer and the referenced memories."""
    refs = [by_id[t] for t in q.targets if t in by_id]
    answer = q.answers[0] if q.answers else ""
    return {
        "anchors_not_in_answer": [a for a in q.anchors if a not in answer],
        "anchors_not_in_references": [a for a in q.anchors if not any(a in m.text for m in refs)],
        "references_of_other_type": [m.id for m in refs if m.meta.get("memory_type") != q.meta.get("memory_type")],
        "references_of_other_section": [m.id for m in refs if m.meta.get("kind") != q.category],
    }


def question_problems(q: Question, by_id: dict[str, Message], generated: bool, stats: Counter[str]) -> list[str]:
    where = f"question {q.id}"
    problems = []
    if q.category not in SECTIONS:
        return [f"{where}: unknown section {q.category!r}"]
    if q.meta.get("memory_type") != MEMORY_TYPE[q.category]:
        problems.append(
            f"{where}: memory_type {q.meta.get('memory_type')!r} in section {q.category} "
            f"(expected {MEMORY_TYPE[q.category]})"
        )
    dangling = [t for t in q.targets if t not in by_id]
    if dangling:
        problems.append(f"{where}: targets {dangling} are not memories of the character")
    found = support(q, by_id)
    if not generated:
        for name, items in found.items():
            stats[f"release_questions_with_{name}"] += bool(items)
        stats["release_questions_with_unresolved_references"] += bool(q.meta.get("unresolved_references"))
        return problems
    if not q.targets or list(q.targets) != list(q.meta.get("reference", ())):
        problems.append(f"{where}: targets {list(q.targets)} but references {q.meta.get('reference')}")
    if not q.anchors:
        problems.append(f"{where}: has no memory anchors")
    if found["anchors_not_in_answer"]:
        problems.append(f"{where}: anchors {found['anchors_not_in_answer']} are not in the gold answer {q.answers[:1]}")
    if found["anchors_not_in_references"]:
        problems.append(
            f"{where}: anchors {found['anchors_not_in_references']} are in no referenced memory {list(q.targets)}"
        )
    if found["references_of_other_type"]:
        problems.append(
            f"{where}: references {found['references_of_other_type']} are not {q.meta.get('memory_type')} memories"
        )
    if found["references_of_other_section"]:
        problems.append(f"{where}: references {found['references_of_other_section']} are not {q.category} memories")
    return problems


def check(samples: Sequence[Sample]) -> CheckReport:
    """Generated characters fully, release characters by structure; stats count memories and questions."""
    problems: list[str] = []
    stats: Counter[str] = Counter()
    by_section: Counter[str] = Counter()
    by_type: Counter[Any] = Counter()
    messages_by_type: Counter[Any] = Counter()
    generated = 0
    for sample in samples:
        where = f"sample {sample.id}"
        is_generated = sample.meta.get("source") == GENERATED
        generated += is_generated
        problems.extend(message_problems(sample, where))
        by_id = {m.id: m for m in sample.messages}
        messages_by_type.update(m.meta.get("memory_type") for m in sample.messages)
        for q in sample.questions:
            problems.extend(f"{where} {p}" for p in question_problems(q, by_id, is_generated, stats))
            by_section[q.category] += 1
            by_type[q.meta.get("memory_type")] += 1
    report = {
        "characters": len(samples),
        "generated_characters": generated,
        "release_characters": len(samples) - generated,
        "memories_by_type": dict(sorted(messages_by_type.items())),
        "questions": sum(by_section.values()),
        "questions_by_section": {s: by_section[s] for s in SECTIONS},
        "questions_by_type": dict(sorted(by_type.items())),
        **dict(sorted(stats.items())),
        "problems": len(problems),
    }
    if generated < len(samples):
        report["release_checked"] = (
            "memory types, sections and targets; anchors and references are counted, "
            "not failed (the release has known exceptions)"
        )
    return CheckReport(ok=not problems, problems=problems, stats=report)
