"""`memsim` generator: determinism, the six categories, MemDaily-η, options, the LLM rewrite path."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

import attrs
import pytest

from memplug.datasets.memsim import ops
from memplug.datasets.memsim.generator import MemSimBuilder
from memplug.errors import DataError, MemplugError
from memplug.models import Sample
from memplug.protocols import BuildOptions

CATEGORIES = {"simple", "conditional", "comparative", "aggregative", "post_processing", "noisy"}


def generate(seed=7, llm=None, **values):
    return list(MemSimBuilder().build(BuildOptions(values=values, seed=seed, llm=llm)))


def as_jsonl(samples: Iterable[Sample]) -> str:
    return "\n".join(json.dumps(attrs.asdict(s), ensure_ascii=False) for s in samples)


def test_same_seed_same_bytes_other_seed_other_bytes():
    first, again, other = as_jsonl(generate(7, n=60)), as_jsonl(generate(7, n=60)), as_jsonl(generate(8, n=60))
    assert first == again
    assert first != other


def test_six_categories_round_robin_and_counts_override():
    samples = generate(n=12)
    cats = [s.questions[0].category for s in samples]
    assert set(cats[:6]) == CATEGORIES and Counter(cats) == {c: 2 for c in CATEGORIES}
    counts = Counter(s.questions[0].category for s in generate(n=12, simple=5, noisy=0))
    assert counts["simple"] == 5 and counts["noisy"] == 0 and counts["conditional"] == 2


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_generated_trajectories_pass_the_check(lang):
    samples = generate(n=240, lang=lang)
    report = MemSimBuilder().check(samples)
    assert report.ok, report.problems[:5]
    assert report.stats["by_category"] == {c: 40 for c in report.stats["by_category"]}
    assert report.stats["swi"] > 1.0
    for s in samples:
        q = s.questions[0]
        ids = [m.id for m in s.messages]
        assert ids == [str(i) for i in range(len(ids))]
        assert q.choices[q.correct_choice] == q.answers[0] and len(set(q.choices.values())) == 4
        assert set(q.targets) <= set(ids) and q.targets
        times = [m.time for m in s.messages]
        assert times == sorted(times) and q.time > times[-1]


def test_question_shapes_follow_the_seed():
    by_cat = {s.questions[0].category: s for s in generate(n=60)}
    assert len(by_cat["comparative"].questions[0].targets) == 2
    assert len(by_cat["aggregative"].questions[0].targets) == 4
    assert len(by_cat["simple"].questions[0].targets) == 1
    for cat in ("conditional", "post_processing", "noisy"):
        assert len(by_cat[cat].questions[0].targets) == 2
    noisy, cond = by_cat["noisy"].questions[0].text, by_cat["conditional"].questions[0].text
    assert len(noisy) > len(cond) + 40  # small talk before the real question


def test_check_catches_wrong_answers_targets_and_contradictions():
    builder = MemSimBuilder()
    sample = generate(n=6)[1]  # a conditional one
    q = sample.questions[0]
    wrong = next(v for v in q.choices.values() if v != q.answers[0])
    bad_answer = attrs.evolve(sample, questions=[attrs.evolve(q, answers=(wrong,))])
    assert any("hints give" in p for p in builder.check([bad_answer]).problems)
    bad_target = attrs.evolve(sample, questions=[attrs.evolve(q, targets=(*q.targets, "99"))])
    assert any("not messages of the trajectory" in p for p in builder.check([bad_target]).problems)
    bad_letter = attrs.evolve(
        sample, questions=[attrs.evolve(q, correct_choice=next(k for k in q.choices if k != q.correct_choice))]
    )
    assert not builder.check([bad_letter]).ok
    # a second message telling the same fact with another value
    hint = next(h for h in sample.meta["hints"] if h["message"] == q.targets[0])
    other = {**hint, "value": "somewhere else", "message": "0"}
    contradicted = attrs.evolve(sample, meta={**sample.meta, "hints": [*sample.meta["hints"], other]})
    assert any("contradict" in p for p in builder.check([contradicted]).problems)
    assert builder.check([sample]).ok


def test_eta_interleaves_noise_and_remaps_targets(tmp_path):
    vanilla = generate(n=30)
    noisy = generate(n=30, eta=10)
    assert MemSimBuilder().check(noisy).ok
    for v, s in zip(vanilla, noisy):
        real = [m for m in s.messages if m.meta["role"] != "eta_noise"]
        assert len(s.messages) == 10 * len(real)
        targets = {m.id: m.text.split(" (place")[0] for m in s.messages if m.id in s.questions[0].targets}
        assert len(targets) == len(v.questions[0].targets)
    lines = tmp_path / "posts.txt"
    lines.write_text("Just had the best ramen of my life.\nRainy Sunday again.\n\n")
    from_file = generate(n=6, eta=3, noise=lines)
    noise_texts = {m.text.split(" (place")[0] for s in from_file for m in s.messages if m.meta["role"] == "eta_noise"}
    assert noise_texts == {"Just had the best ramen of my life.", "Rainy Sunday again."}
    assert MemSimBuilder().check(from_file).ok


def test_zh_uses_the_shared_value_space_and_reports_zh(shared_data):
    csv = shared_data / "memdaily" / "meta_profile.csv"
    samples = generate(n=60, lang="zh", profile=csv)
    assert MemSimBuilder().check(samples).ok
    assert all("消息地点" in m.text for s in samples for m in s.messages)
    info = MemSimBuilder().info_for({"lang": "zh"})
    assert info.language == "zh" and "[单选题]" in info.answer_prompt
    assert MemSimBuilder().info_for({"lang": "en"}).language == "en"
    assert MemSimBuilder.info.metrics == ("accuracy", "recall@K")


def test_bad_options_are_user_errors(tmp_path):
    with pytest.raises(MemplugError, match="eta"):
        generate(n=1, eta=0)
    with pytest.raises(MemplugError, match="reads no --data"):
        list(MemSimBuilder().build(BuildOptions(values={"n": 1}, data=tmp_path)))
    with pytest.raises(MemplugError, match="eta > 1"):
        generate(n=1, noise=tmp_path / "posts.txt")
    with pytest.raises(MemplugError, match="lang=zh"):
        generate(n=1, profile=tmp_path / "x.csv")
    bad = tmp_path / "meta_profile.csv"
    bad.write_text("属性名,范围\n姓名,\"['王强', \n")
    with pytest.raises(DataError, match="meta_profile.csv: line 2"):
        generate(n=1, lang="zh", profile=bad)
    with pytest.raises(DataError, match="cannot read"):
        generate(n=1, eta=2, noise=tmp_path / "missing.txt")


class FakeLLM:
    """Stands in for memplug.llm.LLM: ``complete(messages).text``."""

    def __init__(self, transform):
        self.transform, self.calls = transform, 0

    def complete(self, messages, **params):
        self.calls += 1
        text = messages[-1]["content"].split("Sentence: ", 1)[1]
        return type("Completion", (), {"text": self.transform(text)})()


def test_llm_rewrites_wording_only():
    plain = generate(n=12)
    polite = FakeLLM(lambda t: f"Just so you know, {t[0].lower()}{t[1:]}")
    rewritten = generate(n=12, llm=polite)
    assert polite.calls == sum(len(s.messages) + 1 for s in plain)
    assert MemSimBuilder().check(rewritten).ok
    for a, b in zip(plain, rewritten):
        qa, qb = a.questions[0], b.questions[0]
        assert (qa.answers, qa.choices, qa.correct_choice, qa.targets) == (
            qb.answers,
            qb.choices,
            qb.correct_choice,
            qb.targets,
        )
        assert all("Just so you know" in m.text for m in b.messages)
    liar = FakeLLM(lambda t: "Something else entirely.")  # loses the facts: every rewrite is discarded
    assert as_jsonl(generate(n=12, llm=liar)) == as_jsonl(plain)


def test_post_processing_reasoning_factors():
    # MemDaily 05_post_processing_roles tid 1: the boss's phone 13651039007, "sum of the last five digits" = 19
    assert ops.digit_sum("13651039007") == 19
    assert [ops.season_index(f"{m:02d}-01") for m in (3, 6, 9, 12, 1)] == [0, 1, 2, 3, 3]


def test_shannon_wiener_index():
    from math import log

    from memplug.datasets.memsim.validator import shannon_wiener

    assert shannon_wiener(["a", "b"]) == pytest.approx(log(2))
    assert shannon_wiener("abcd") == pytest.approx(log(4))
    assert shannon_wiener(["a"] * 5) == 0.0
    # one value is 0.0, not -0.0 (`generate --check` printed "user.hometown": -0.0)
    assert json.dumps(shannon_wiener(["a"] * 5)) == "0.0"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_check_passes_on_3000_trajectories(lang, shared_data):
    values = {"n": 3000, "lang": lang}
    if lang == "zh":
        values["profile"] = shared_data / "memdaily" / "meta_profile.csv"
    report = MemSimBuilder().check(generate(**values))
    assert report.ok, report.problems[:5]
    assert report.stats["trajectories"] == 3000
