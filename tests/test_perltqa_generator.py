"""The offline perltqa generator: determinism, memory types, anchors, and the release schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from memplug.datasets.perltqa.builder import ANSWER_PROMPT_ZH, PerLTQABuilder
from memplug.datasets.perltqa.generator import generate_release
from memplug.datasets.perltqa.schema import MEMORY_TYPE, PROFILE_FIELDS
from memplug.errors import MemplugError
from memplug.models import Sample
from memplug.protocols import BuildOptions


def generate(seed: int = 1, **values: Any) -> list[Sample]:
    return list(PerLTQABuilder().build(BuildOptions(values=values, seed=seed)))


@pytest.fixture(scope="module", params=["en", "zh"])
def samples(request: pytest.FixtureRequest) -> list[Sample]:
    return generate(seed=1, lang=request.param)


def test_same_seed_same_data_other_seed_other_data(samples: list[Sample]) -> None:
    lang = samples[0].meta["language"]
    again = generate(seed=1, lang=lang)
    assert json.dumps([attrs.asdict(s) for s in again]) == json.dumps([attrs.asdict(s) for s in samples])
    assert [s.id for s in generate(seed=2, lang=lang)] != [s.id for s in samples]


def test_english_and_chinese_describe_the_same_characters() -> None:
    en, zh = generate(seed=4), generate(seed=4, lang="zh")
    assert [[m.id for m in s.messages] for s in en] == [[m.id for m in s.messages] for s in zh]
    assert [[q.category for q in s.questions] for s in en] == [[q.category for q in s.questions] for s in zh]
    assert en[0].messages[5].text != zh[0].messages[5].text


def test_memory_items_are_labelled_semantic_or_episodic(samples: list[Sample]) -> None:
    for s in samples:
        kinds = {m.meta["kind"] for m in s.messages}
        assert kinds == {"profile", "social_relationship", "events", "dialogues"}
        for m in s.messages:
            assert m.meta["memory_type"] == MEMORY_TYPE[m.meta["kind"]]
        assert [m.meta["field"] for m in s.messages if m.id.startswith("profile/")] == list(PROFILE_FIELDS)


def test_every_question_has_targets_and_anchors_found_in_answer_and_memory(samples: list[Sample]) -> None:
    for s in samples:
        texts = {m.id: m.text for m in s.messages}
        assert {q.category for q in s.questions} == set(MEMORY_TYPE)
        for q in s.questions:
            assert q.meta["memory_type"] == MEMORY_TYPE[q.category]
            assert q.targets and all(t in texts for t in q.targets), q.id
            assert q.anchors, q.id
            for anchor in q.anchors:
                assert anchor in q.answers[0], (q.id, anchor)
                assert any(anchor in texts[t] for t in q.targets), (q.id, anchor)
        assert len({q.id for q in s.questions}) == len(s.questions)


def test_generated_release_loads_through_the_loader(tmp_path: Path) -> None:
    """The generator writes the release schema: saved to files, the loader reads the same samples back."""
    memory, qa = generate_release(7, "en", 2, 4, 1)
    (tmp_path / "perltmem_gen.json").write_text(json.dumps(memory, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "perltqa_gen.json").write_text(json.dumps(qa, ensure_ascii=False), encoding="utf-8")
    loaded = list(PerLTQABuilder().build(BuildOptions(data=tmp_path)))
    generated = generate(seed=7, n=2, relationships=4, events=1)
    assert [s.messages for s in loaded] == [s.messages for s in generated]
    assert [s.questions for s in loaded] == [s.questions for s in generated]


def test_options_shape_the_characters() -> None:
    (one,) = generate(seed=3, n=1, relationships=2, events=1)
    assert sum(m.meta["kind"] == "social_relationship" for m in one.messages) == 2
    assert sum(m.meta["kind"] == "events" for m in one.messages) == 2
    assert sum(m.meta["kind"] == "dialogues" for m in one.messages) == 2
    with pytest.raises(MemplugError, match="relationships"):
        generate(relationships=12)


def test_info_follows_the_language() -> None:
    builder = PerLTQABuilder()
    assert builder.info_for({"lang": "en"}) is builder.info
    zh = builder.info_for({"lang": "zh"})
    assert zh.language == "zh" and zh.answer_prompt == ANSWER_PROMPT_ZH
    for prompt in (builder.info.answer_prompt, zh.answer_prompt):
        assert prompt.format(memory="M", question="Q", choices="")
    assert builder.info.metrics[:3] == ("f1", "rouge_l", "anchor_map")


def test_gold_answers_score_full_anchor_map(samples: list[Sample]) -> None:
    """Eq. 5 on the gold answers: every anchor is found, so the mean is 1."""
    from memplug.datasets.perltqa.scoring import AnchorMAP
    from memplug.protocols import MetricConfig, ScoreContext

    lang = samples[0].meta["language"]
    metric = AnchorMAP(MetricConfig(language=lang))
    scores = [metric.score(ScoreContext(q, q.answers[0], (), lang)) for s in samples for q in s.questions]
    assert scores and all(score == 1.0 for score in scores)
    wrong = samples[0].questions[0]
    assert metric.score(ScoreContext(wrong, "no idea", (), lang)) == 0.0
