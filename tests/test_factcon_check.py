"""`memplug generate --dataset factcon --check`: passes on generated and released contexts, fails on corruption."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from memplug.datasets.factcon.builder import FactConBuilder
from memplug.models import Question, Sample
from memplug.protocols import BuildOptions


def generate(seed: int = 1, tokens: int = 6000) -> Sample:
    # one message per fact, the unit these checks edit (chunked samples are checked on their facts)
    (sample,) = FactConBuilder().build(BuildOptions(values={"tokens": tokens, "unit": "fact"}, seed=seed))
    return sample


def check(sample: Sample) -> list[str]:
    return FactConBuilder().check([sample]).problems


@pytest.fixture(scope="module")
def sample() -> Sample:
    return generate()


def first(sample: Sample, category: str) -> Question:
    return next(q for q in sample.questions if q.category == category)


def with_question(sample: Sample, old: Question, **changes: Any) -> Sample:
    new = attrs.evolve(old, **changes)
    return attrs.evolve(sample, questions=[new if q is old else q for q in sample.questions])


def with_text(sample: Sample, serial: int, text: str) -> Sample:
    messages = list(sample.messages)
    messages[serial] = attrs.evolve(messages[serial], text=f"{serial}. {text}")
    return attrs.evolve(sample, messages=messages)


@pytest.mark.parametrize(("seed", "tokens"), [(0, 6000), (1, 6000), (2, 6000), (7, 6000), (1, 32000), (3, 32000)])
def test_generated_contexts_pass(seed: int, tokens: int) -> None:
    report = FactConBuilder().check([generate(seed, tokens)])
    assert report.ok, report.problems[:5]
    stats = report.stats
    assert stats["generated_contexts"] == 1 and stats["questions"] == 100
    assert stats["sh_questions"] == stats["1_hop_questions"] == 50
    assert sum(stats[f"{h}_hop_questions"] for h in (2, 3, 4)) == stats["mh_questions"] == 50
    assert stats["edits"] >= 100  # one per question plus the padding's unasked edits
    assert 0.8 <= stats["min_fill"] <= 1.0


def test_wrong_gold_answers_are_caught(sample: Sample) -> None:
    for category in ("sh", "mh"):
        q = first(sample, category)
        bad = with_question(sample, q, answers=(q.meta["original_answer"],))
        assert any(f"question {q.id}: gold" in p and "newest facts give" in p for p in check(bad))


def test_a_dangling_target_is_caught(sample: Sample) -> None:
    q = first(sample, "mh")
    bad = with_question(sample, q, targets=(*q.targets[:-1], "99999"))
    problems = check(bad)
    assert any("targets ['99999'] are not messages of the context" in p for p in problems)
    assert any("but the newest facts of the chain are" in p for p in problems)


def test_swapped_serials_are_caught(sample: Sample) -> None:
    messages = list(sample.messages)
    messages[3], messages[7] = attrs.evolve(messages[3], id="7"), attrs.evolve(messages[7], id="3")
    assert any("message id '7' but its text numbers it 3" in p for p in check(attrs.evolve(sample, messages=messages)))
    messages = list(sample.messages)
    messages[3], messages[7] = messages[7], messages[3]
    assert any("not in increasing message order" in p for p in check(attrs.evolve(sample, messages=messages)))


def test_a_gap_in_the_serials_is_caught(sample: Sample) -> None:
    assert any("without gaps" in p for p in check(attrs.evolve(sample, messages=sample.messages[1:])))


def test_an_edit_undone_in_the_context_is_caught(sample: Sample) -> None:
    q = first(sample, "sh")
    edit = q.meta["edit"]
    older = q.meta["original_serial"]
    original_text = sample.messages[older].text.split(". ", 1)[1]
    undone = with_text(sample, q.meta["edit_serial"], original_text)  # the newer fact now restates the old value
    problems = check(undone)
    assert any(
        f"question {q.id}: gold ['{edit['new']}'] but the newest facts give '{edit['old']}'" in p for p in problems
    )
    assert any(f"question {q.id}: hops [] of the chain have conflicting facts" in p for p in problems)


def test_wrong_edit_and_original_answer_metadata_are_caught(sample: Sample) -> None:
    q = first(sample, "mh")
    wrong_old = with_question(sample, q, meta={**q.meta, "edit": {**q.meta["edit"], "old": "Atlantis"}})
    assert any("old value 'Atlantis' is in no older fact" in p for p in check(wrong_old))
    wrong_original = with_question(sample, q, meta={**q.meta, "original_answer": "Atlantis"})
    assert any("original_answer 'Atlantis' but the oldest facts give" in p for p in check(wrong_original))
    wrong_serial = with_question(sample, q, meta={**q.meta, "edit_serial": 0})
    assert any("the newest fact says" in p for p in check(wrong_serial))


def test_a_question_that_does_not_ask_its_chain_is_caught(sample: Sample) -> None:
    q = first(sample, "sh")
    bad = with_question(sample, q, text=q.text.replace(q.meta["subject"], "Atlantis"))
    assert any("does not ask its chain" in p for p in check(bad))


def test_an_unreadable_fact_and_a_broken_chain_are_caught(sample: Sample) -> None:
    q = first(sample, "mh")
    serial = int(q.targets[1 - min(q.meta["edited_hop"], 1)])  # a hop with no older fact to fall back on
    problems = check(with_text(sample, serial, "Nothing to see here."))
    assert any(f"facts [{serial}] are no relation's sentence" in p for p in problems)
    assert any(f"question {q.id}: the chain" in p and "breaks or loops" in p for p in problems)


def test_the_token_budget_is_recounted(sample: Sample) -> None:
    over = attrs.evolve(sample, meta={**sample.meta, "tokens_target": 5000})
    assert any("outside [0.8 x 5000, 5000]" in p for p in check(over))
    under = attrs.evolve(sample, meta={**sample.meta, "tokens_target": 8000})
    assert any("outside [0.8 x 8000, 8000]" in p for p in check(under))
    stated = attrs.evolve(sample, meta={**sample.meta, "context_tokens": 1})
    assert any("meta says 1 context tokens" in p for p in check(stated))


def test_generated_questions_without_their_metadata_fail_without_crashing(sample: Sample) -> None:
    q = first(sample, "sh")
    assert any("meta lacks the generator's" in p for p in check(with_question(sample, q, meta={})))


def release_row(tmp_path: Path, context: str, answers: list[str]) -> Path:
    path = tmp_path / "factconsolidation_sh_tiny.json"
    path.write_text(
        json.dumps(
            {
                "context": context,
                "questions": ["Who is A married to?", "Who is B married to?"],
                "answers": [[a] for a in answers],
                "metadata": {"qa_pair_ids": ["tiny_sh_0", "tiny_sh_1"], "source": "factconsolidation_sh_tiny"},
            }
        )
    )
    return path


def test_release_rows_are_checked_for_what_they_carry(tmp_path: Path) -> None:
    context = "Here is a list of facts:\n5. A is married to B.\n6. B is married to D.\n8. A is married to C.\n"
    samples = list(
        FactConBuilder().build(BuildOptions(values={"unit": "fact"}, data=release_row(tmp_path, context, ["C", "Z"])))
    )
    report = FactConBuilder().check(samples)
    assert report.ok, report.problems
    stats = report.stats
    assert stats["release_contexts"] == 1 and "release_checked" in stats
    assert stats["release_non_contiguous_contexts"] == 1 and stats["edits"] == 1
    assert stats["release_sh_parsed"] == 2 and stats["release_sh_gold_is_newest"] == 1
    assert stats["release_gold_not_in_context"] == 1
    (row,) = samples
    swapped = attrs.evolve(row, messages=[attrs.evolve(row.messages[0], id="6"), *row.messages[1:]])
    assert any("message id '6' but its text numbers it 5" in p for p in check(swapped))


def test_the_released_6k_rows_pass(shared_data: Path) -> None:
    samples = list(FactConBuilder().build(BuildOptions(data=shared_data / "factconsolidation")))
    report = FactConBuilder().check(samples)
    assert report.ok, report.problems[:5]
    assert report.stats["release_contexts"] == 2 and report.stats["release_sh_parsed"] == 100
    assert report.stats["release_gold_not_in_context"] == 0
