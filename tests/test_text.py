"""Answer normalisation and tokenisation (memplug.text)."""

from __future__ import annotations

import pytest

from memplug.text import cjk_share, detect_language, normalize_answer, resolve_language, token_spans, tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # SQuAD: lower, drop punctuation, drop articles, squeeze whitespace
        ("The Capital of  France, is PARIS!", "capital of france is paris"),
        ("An apple a day", "apple day"),
        ("D.C.", "dc"),  # punctuation is removed, not replaced by a space (as in SQuAD)
        ("“Theater” — there", "theater there"),  # Unicode punctuation goes too; "the" only as a word
    ],
)
def test_normalize_english_follows_squad(text: str, expected: str) -> None:
    assert normalize_answer(text, "en") == expected


def test_normalize_chinese_is_character_level_without_fullwidth_punctuation() -> None:
    # 。，？ are dropped; CJK characters become tokens; Latin words and numbers stay whole
    assert normalize_answer("我的上司，是iPhone 15。", "zh") == "我 的 上 司 是 iphone 15"
    assert tokens("高中？", "zh") == ["高", "中"]
    # no article removal under CJK rules: "a" is a word like any other
    assert tokens("a 猫", "zh") == ["a", "猫"]


def test_cjk_share_counts_tokens_not_characters() -> None:
    # 10 CJK characters + 3 Latin words (zhaoyalin0205, szfinancecenter, com) -> 10/13
    text = "我的上司的邮箱地址是zhaoyalin0205@szfinancecenter.com。"
    assert cjk_share(text) == pytest.approx(10 / 13)
    assert detect_language(text) == "zh"
    # 2 CJK characters among 5 tokens -> 0.4 < 0.5
    assert detect_language("I met 王伟 yesterday") == "en"
    assert cjk_share("") == 0.0


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("en", "高中", "en"),
        ("zh", "Paris", "zh"),
        ("zh-CN", "x", "zh"),
        ("ja", "x", "zh"),
        ("de", "x", "en"),
        ("auto", "高中", "zh"),
        ("auto", "Paris", "en"),
        (None, "高中", "zh"),
    ],
)
def test_resolve_language(language: str | None, text: str, expected: str) -> None:
    assert resolve_language(language, text) == expected


def test_token_spans_keep_offsets_and_case() -> None:
    text = "Washington, D.C. 高中。"
    spans = token_spans(text)
    assert [(s.text, s.kind) for s in spans] == [
        ("Washington", "word"),
        (",", "punct"),
        ("D", "word"),
        (".", "punct"),
        ("C", "word"),
        (".", "punct"),
        ("高", "cjk"),
        ("中", "cjk"),
        ("。", "punct"),
    ]
    assert all(text[s.start : s.end] == s.text for s in spans)
