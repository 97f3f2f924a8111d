"""Answer normalisation and tokenisation shared by the metrics and the extractive reader.

English follows the SQuAD evaluation script (lowercase, drop punctuation, drop the
articles a/an/the, squeeze whitespace), which MemoryAgentBench (seed 002) reuses for
EM, SubEM and F1. Chinese (and other CJK text) has no spaces and no articles, so it is
tokenised the way the CMRC 2018 evaluation does ("mixed segmentation"): every CJK
character is a token, runs of Latin letters or digits stay whole words, punctuation
(full-width included) is dropped. Other languages use the English rules.

``language`` is "en", "zh" (or any CJK code: "ja", "ko", "zh-cn") or "auto", which
looks at the share of CJK characters among the word tokens of the text.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from typing import Literal

import attrs

Mode = Literal["en", "zh"]

# CJK ideographs (+ extension A and compatibility), kana and hangul: scripts written
# without spaces between words, where one character is the natural token.
_CJK_CLASS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0002ebef"  # CJK extensions B-F
)
#: one CJK character, a run of other letters/digits, or one punctuation/symbol character
_TOKEN = re.compile(f"([{_CJK_CLASS}])|((?:(?![{_CJK_CLASS}])[^\\W_])+)|([^\\w\\s]|_)")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCT = frozenset(string.punctuation)
_CJK_LANGS = ("zh", "ja", "ko", "cjk")
#: share of CJK tokens (characters) among all word tokens from which "auto" means CJK rules
CJK_SHARE = 0.5


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, its last one "…" when anything was cut: the
    one way memplug shortens a text it keeps or shows (a diagnosis's evidence, a stored
    item, a report's example, a plugin's error)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_punct(char: str) -> bool:
    """SQuAD's ASCII punctuation set plus every Unicode punctuation character.

    SQuAD only drops ``string.punctuation``; we also drop curly quotes, dashes and
    full-width marks ("。", "，", "？") because Chinese answers are full of them.
    """
    return char in _ASCII_PUNCT or unicodedata.category(char).startswith("P")


def cjk_share(text: str) -> float:
    """Share of CJK characters among the word tokens of ``text`` (0 when it has none).

    Tokens, not characters, are counted: a Latin word is one token like a CJK character,
    so an e-mail address inside a Chinese sentence does not outweigh the sentence.
    """
    kinds = [s.kind for s in token_spans(text) if s.kind != "punct"]
    if not kinds:
        return 0.0
    return kinds.count("cjk") / len(kinds)


def detect_language(text: str) -> Mode:
    """ "zh" when at least :data:`CJK_SHARE` of the word tokens are CJK characters, else "en"."""
    return "zh" if cjk_share(text) >= CJK_SHARE else "en"


def resolve_language(language: str | None, *texts: str) -> Mode:
    """The rule set for ``language``; "auto" (or empty) detects it from ``texts`` together."""
    lang = (language or "auto").lower()
    if lang == "auto":
        return detect_language(" ".join(texts))
    return "zh" if lang.startswith(_CJK_LANGS) else "en"


class _PunctTable(dict[int, int | None]):
    """str.translate table that deletes punctuation, filled in as characters are seen.

    Scoring normalises every prediction and gold answer; a per-character Python loop
    over unicodedata was the run's hottest function, translate() runs in C.
    """

    def __missing__(self, code: int) -> int | None:
        value = None if is_punct(chr(code)) else code
        self[code] = value
        return value


_PUNCT_TABLE = _PunctTable()


def _drop_punct(text: str) -> str:
    return text.translate(_PUNCT_TABLE)


@functools.lru_cache(maxsize=1 << 14)
def normalize_answer(text: str, language: str = "en") -> str:
    """Normalised answer string; tokens are separated by single spaces.

    English: SQuAD's ``normalize_answer`` (lower, drop punctuation, drop articles,
    squeeze whitespace). CJK: lower, drop punctuation, then CJK characters and Latin
    words joined by spaces ("我的上司, iPhone 15" -> "我 的 上 司 iphone 15"), so that
    exact match and substring tests on the normalised strings work character-wise.

    Memoised: gold answers and choices repeat across questions (MemSim draws them from
    small value sets), and every choice of every question is normalised for accuracy.
    """
    mode = resolve_language(language, text)
    lowered = _drop_punct(text.lower())
    if mode == "en":
        return " ".join(_ARTICLES.sub(" ", lowered).split())
    return " ".join(m.group(0) for m in _TOKEN.finditer(lowered) if not m.group(3))


def tokens(text: str, language: str = "en") -> list[str]:
    """The tokens F1, ROUGE-L and BLEU count: words (English) or characters and words (CJK)."""
    return normalize_answer(text, language).split()


@attrs.frozen
class Span:
    """One token of a text with its place in the original string (for extracting spans)."""

    text: str
    start: int
    end: int
    #: "cjk" (one CJK character), "word" (letters/digits) or "punct"
    kind: Literal["cjk", "word", "punct"]


def token_spans(text: str) -> list[Span]:
    """Every CJK character, word and punctuation mark of ``text`` with its offsets.

    Unlike :func:`tokens` nothing is dropped or lowercased, so a reader can cut the
    original text between two tokens.
    """
    out: list[Span] = []
    for m in _TOKEN.finditer(text):
        kind: Literal["cjk", "word", "punct"] = "cjk" if m.group(1) else "word" if m.group(2) else "punct"
        out.append(Span(m.group(0), m.start(), m.end(), kind))
    return out
