"""`memplug generate --dataset perltqa --check`: passes on generated and released characters, fails on corruption."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from memplug.datasets.perltqa.builder import PerLTQABuilder
from memplug.models import Question, Sample
from memplug.protocols import BuildOptions

FIXTURES = Path(__file__).parent / "fixtures" / "perltqa"


def generate(seed: int = 1, **values: Any) -> list[Sample]:
    return list(PerLTQABuilder().build(BuildOptions(values=values, seed=seed)))


def problems(sample: Sample) -> list[str]:
    return PerLTQABuilder().check([sample]).problems


@pytest.fixture(scope="module")
def sample() -> Sample:
    return generate(n=1)[0]


def first(sample: Sample, section: str) -> Question:
    return next(q for q in sample.questions if q.category == section)


def with_question(sample: Sample, old: Question, **changes: Any) -> Sample:
    new = attrs.evolve(old, **changes)
    return attrs.evolve(sample, questions=[new if q is old else q for q in sample.questions])


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("seed", [0, 1, 5])
def test_generated_characters_pass(seed: int, lang: str) -> None:
    report = PerLTQABuilder().check(generate(seed, lang=lang))
    assert report.ok, report.problems[:5]
    stats = report.stats
    assert stats["generated_characters"] == 3 and stats["release_characters"] == 0
    # 13 profile questions, 3 per relationship (6), 3 per event and 2 per dialogue (12 each), per character
    assert stats["questions_by_section"] == {"profile": 39, "social_relationship": 54, "events": 108, "dialogues": 72}
    assert stats["questions_by_type"] == {"semantic": 93, "episodic": 180}
    assert stats["memories_by_type"] == {"semantic": 3 * (14 + 1 + 6), "episodic": 3 * (12 + 12)}


@pytest.mark.parametrize("section", ["profile", "social_relationship", "events", "dialogues"])
def test_a_wrong_gold_answer_is_caught(sample: Sample, section: str) -> None:
    q = first(sample, section)
    bad = with_question(sample, q, answers=("I do not remember.",))
    assert any(f"question {q.id}: anchors" in p and "are not in the gold answer" in p for p in problems(bad))


def test_an_anchor_changed_with_its_answer_is_caught_by_the_memory(sample: Sample) -> None:
    q = first(sample, "events")
    anchor = q.anchors[0]
    bad = with_question(sample, q, answers=(q.answers[0].replace(anchor, "March 3, 1999"),), anchors=("March 3, 1999",))
    assert [p for p in problems(bad) if q.id in p] == [
        f"sample {sample.id} question {q.id}: anchors ['March 3, 1999'] are in no referenced memory {list(q.targets)}"
    ]


def test_an_anchor_missing_from_the_answer_is_caught(sample: Sample) -> None:
    q = first(sample, "dialogues")
    bad = with_question(sample, q, anchors=(*q.anchors, "a trip to the moon"))
    found = problems(bad)
    assert any("anchors ['a trip to the moon'] are not in the gold answer" in p for p in found)
    assert any("anchors ['a trip to the moon'] are in no referenced memory" in p for p in found)
    assert any("has no memory anchors" in p for p in problems(with_question(sample, q, anchors=())))


def test_a_dangling_target_is_caught(sample: Sample) -> None:
    q = first(sample, "social_relationship")
    bad = with_question(sample, q, targets=("9_9",))
    found = problems(bad)
    assert any(f"question {q.id}: targets ['9_9'] are not memories of the character" in p for p in found)
    assert any(f"question {q.id}: targets ['9_9'] but references" in p for p in found)


def test_a_memory_type_against_the_section_is_caught(sample: Sample) -> None:
    q = first(sample, "events")
    bad = with_question(sample, q, meta={**q.meta, "memory_type": "semantic"})
    found = problems(bad)
    assert any("memory_type 'semantic' in section events (expected episodic)" in p for p in found)
    assert any(f"references {list(q.targets)} are not semantic memories" in p for p in found)


def test_a_reference_to_another_kind_of_memory_is_caught(sample: Sample) -> None:
    q = first(sample, "dialogues")
    event = next(m.id for m in sample.messages if m.meta["kind"] == "events")
    bad = with_question(sample, q, targets=(event,), meta={**q.meta, "reference": [event]})
    assert any(f"references ['{event}'] are not dialogues memories" in p for p in problems(bad))
    profile_q = first(sample, "profile")
    bad = with_question(sample, profile_q, targets=(event,), meta={**profile_q.meta, "reference": [event]})
    assert any(f"references ['{event}'] are not semantic memories" in p for p in problems(bad))


def test_a_mislabelled_memory_and_duplicate_ids_are_caught(sample: Sample) -> None:
    messages = list(sample.messages)
    event = next(i for i, m in enumerate(messages) if m.meta["kind"] == "events")
    messages[event] = attrs.evolve(messages[event], meta={**messages[event].meta, "memory_type": "semantic"})
    found = problems(attrs.evolve(sample, messages=messages))
    assert any(f"memory {messages[event].id} of kind 'events' is labelled 'semantic'" in p for p in found)
    doubled = attrs.evolve(sample, messages=[*sample.messages, sample.messages[0]])
    assert any("duplicate memory ids" in p for p in problems(doubled))


def test_release_characters_are_held_to_the_structure_and_their_quirks_counted() -> None:
    samples = list(PerLTQABuilder().build(BuildOptions(data=FIXTURES)))
    report = PerLTQABuilder().check(samples)
    assert report.ok, report.problems
    stats = report.stats
    assert stats["release_characters"] == 2 and "release_checked" in stats
    # the fixture, like the release, has an events question that also references a relationship
    # and one whose only reference is missing from the memory
    assert stats["release_questions_with_references_of_other_type"] == 1
    assert stats["release_questions_with_unresolved_references"] == 1
    assert stats["release_questions_with_anchors_not_in_references"] == 1
    q = samples[0].questions[0]
    bad = with_question(samples[0], q, targets=("nowhere",), meta={**q.meta, "memory_type": "episodic"})
    found = problems(bad)
    assert any("targets ['nowhere'] are not memories of the character" in p for p in found)
    assert any("memory_type 'episodic' in section profile" in p for p in found)
