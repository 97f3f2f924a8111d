"""The offline factcon generator: determinism, newest-wins answers, edits that matter."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from memplug.datasets.factcon.builder import FactConBuilder
from memplug.datasets.factcon.generator import walk
from memplug.datasets.factcon.knowledge import knowledge_base
from memplug.datasets.factcon.relations import RELATIONS
from memplug.errors import MemplugError
from memplug.models import Sample
from memplug.protocols import BuildOptions
from memplug.tokens import count_tokens


def generate(seed: int = 1, **values: Any) -> list[Sample]:
    # one message per fact (the default unit, MemoryAgentBench's chunks, is tested in test_protocol_factcon.py)
    return list(FactConBuilder().build(BuildOptions(values={"tokens": 32000, "unit": "fact", **values}, seed=seed)))


@pytest.fixture(scope="module")
def sample() -> Sample:
    (s,) = generate(seed=1)
    return s


class Pool:
    """Reads the facts back out of the message texts, as a reader of the context would."""

    def __init__(self, sample: Sample) -> None:
        self.facts = [(int(m.id), m.text.split(". ", 1)[1]) for m in sample.messages]

    def objects(self, subject: str, relation: str) -> list[tuple[int, str]]:
        """(serial, object) of every fact stating ``relation`` of ``subject``."""
        head, tail = RELATIONS[relation].cloze.replace("[X]", subject).split("__")
        return [
            (n, text[len(head) : len(text) - len(tail) - 1])
            for n, text in self.facts
            if text.startswith(head) and text.endswith(tail + ".")
        ]

    def newest(self, subject: str, relation: str) -> str | None:
        found = self.objects(subject, relation)
        return max(found)[1] if found else None

    def oldest(self, subject: str, relation: str) -> str | None:
        found = self.objects(subject, relation)
        return min(found)[1] if found else None


def test_same_seed_same_data_other_seed_other_data(sample: Sample) -> None:
    (again,) = generate(seed=1)
    assert json.dumps(attrs.asdict(again)) == json.dumps(attrs.asdict(sample))
    (other,) = generate(seed=2)
    assert [m.text for m in other.messages] != [m.text for m in sample.messages]


def test_context_shape(sample: Sample) -> None:
    assert [m.id for m in sample.messages] == [str(i) for i in range(len(sample.messages))]
    assert all(m.text.startswith(f"{m.id}. ") and m.text.endswith(".") for m in sample.messages)
    tokens = count_tokens("\n".join(m.text for m in sample.messages))
    assert tokens == sample.meta["context_tokens"]
    assert 0.9 * 32000 <= tokens <= 32000
    assert sample.meta["n_sh"] == 50 and sample.meta["n_mh"] == 50
    assert len({q.id for q in sample.questions}) == 100
    json.dumps(attrs.asdict(sample))


def test_every_multi_hop_answer_differs_from_the_unedited_answer(sample: Sample) -> None:
    kb = knowledge_base()
    multi = [q for q in sample.questions if q.category == "mh"]
    assert multi and {q.meta["hops"] for q in multi} == {2, 3, 4}
    for q in multi:
        unedited = walk(kb.get, q.meta["subject"], q.meta["relations"])
        assert unedited is not None and unedited[-1] != q.answers[0], q.text


def test_newest_fact_wins_and_oldest_gives_the_unedited_answer(sample: Sample) -> None:
    pool = Pool(sample)
    for q in sample.questions:
        newest = walk(pool.newest, q.meta["subject"], q.meta["relations"])
        oldest = walk(pool.oldest, q.meta["subject"], q.meta["relations"])
        assert newest is not None and newest[-1] == q.answers[0], q.text
        assert oldest is not None and oldest[-1] == q.meta["original_answer"] != q.answers[0], q.text
        # exactly one hop of the answer chain has a conflicting (edited) fact
        conflicts = [len(pool.objects(s, r)) > 1 for s, r in zip(newest, q.meta["relations"])]
        assert conflicts.count(True) == 1 and conflicts.index(True) == q.meta["edited_hop"], q.text
        assert q.meta["edit_serial"] > q.meta["original_serial"]
        assert set(q.targets) <= {m.id for m in sample.messages} and str(q.meta["edit_serial"]) in q.targets


def test_question_text_comes_from_the_templates(sample: Sample) -> None:
    q = next(q for q in sample.questions if q.category == "sh")
    assert q.text == RELATIONS[q.meta["relations"][0]].ask(q.meta["subject"])
    q = next(q for q in sample.questions if q.meta["hops"] == 3)
    first, second, third = q.meta["relations"]
    inner = RELATIONS[second].describe(RELATIONS[first].describe(q.meta["subject"]))
    assert q.text == RELATIONS[third].ask(inner)


def test_kind_questions_and_n_options() -> None:
    samples = generate(seed=3, tokens=6000, kind="mh", questions=10, n=2)
    assert [s.id for s in samples] == ["factcon_6000_seed3_0", "factcon_6000_seed3_1"]
    assert all({q.category for q in s.questions} == {"mh"} and len(s.questions) == 10 for s in samples)
    assert samples[0].messages != samples[1].messages


def test_small_budget_keeps_only_the_questions_that_fit() -> None:
    (s,) = generate(tokens=1000)
    assert 0 < len(s.questions) < 100 and s.meta["context_tokens"] <= 1000


def test_bad_options_are_user_errors() -> None:
    with pytest.raises(MemplugError, match="tokens=10"):
        generate(tokens=10)
    with pytest.raises(MemplugError, match="kind"):
        generate(kind="xx")


@pytest.mark.slow
def test_262k_context_reaches_its_length() -> None:
    (s,) = generate(tokens=262000)
    assert 0.95 * 262000 <= s.meta["context_tokens"] <= 262000
    assert len(s.questions) == 100
