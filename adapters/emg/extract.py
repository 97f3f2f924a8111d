"""Entities and relations from one memory: the graph layer's (subject, relation, value).

The seed extracts them with entity recognition and relation extraction models; offline
we use rules for short declarative English sentences, the shape of factual memories
("Roy Rogers is married to Dale Evans.", "The capital of Romania is Bucharest.",
"The univeristy where Joan Didion was educated is University of California, Berkeley.").
The value is always the sentence's last noun phrase, so two versions of one fact
differ only in it. Sentences the rules do not fit have no triple; they still live in
the memory tree and are found by retrieval. With an LLM configured, the
:class:`LLMExtractor` asks it for the triple instead.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from memplug.llm import LLM

#: words that end a relation phrase: the value follows one of them
FUNCTION_WORDS = frozenset("of in to by with as at for from on is are was were".split())
#: verbs and auxiliaries that end a subject
_AUX = frozenset("is are was were has have had does did do can will".split())
_VERB = re.compile(r"^[a-z]+(?:s|ed)$")
_COPULA = re.compile(r"\s(?:is|are|was|were)\s")
_LEFT_MARKER = re.compile(r"\s(where|that|which|whom|who)\s")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+")
_ARTICLES = ("the", "a", "an")
#: an initial before a final full stop ("Washington, D.C."): the stop is part of it
_INITIAL_END = re.compile(r"\b[A-Z]\.[A-Z]?\.?$")
_LATIN = re.compile(r"[A-Za-z]")


@attrs.frozen
class Triple:
    """A fact as (subject, relation, value); the value is the span an answer quotes."""

    subject: str
    relation: str
    value: str


@lru_cache(maxsize=1 << 18)  # the same relations and entities come back thousands of times
def normalise(text: str) -> str:
    """Lower-case words joined by single spaces, articles dropped: the key of an entity."""
    words = _WORD.findall(text.lower())
    return " ".join(w for w in words if w not in ("the", "a", "an"))


_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s+")


def _clean(sentence: str) -> str:
    # list markers ("310. ", "- ") number or bullet a fact; they are not part of it
    sentence = _LIST_MARKER.sub("", sentence.strip())
    if sentence.endswith(".") and not _INITIAL_END.search(sentence[:-1]):
        sentence = sentence[:-1]
    elif sentence.endswith(".."):
        sentence = sentence[:-1]
    return sentence.rstrip(" !?;")


def _is_name_word(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def _value_start(words: list[str], lo: int) -> int | None:
    """First index after a function word whose tail reads as one noun phrase.

    A tail qualifies when each lower-case function word in it sits between name words
    ("United States of America", "University of California, Berkeley"), so
    "a citizen of United States of America" yields "United States of America".

    One pass from the right finds the last function word that is not between name
    words; only function words from just before it on can start a tail that qualifies
    (the word right after the start must not be a function word either), so each tail
    is not checked word by word again (the same index as testing every tail in turn).
    """
    n = len(words)
    first = lo
    for k in range(n - 1, lo + 1, -1):
        if words[k] in FUNCTION_WORDS and not (
            k < n - 1 and _is_name_word(words[k - 1]) and _is_name_word(words[k + 1])
        ):
            first = k - 1
            break
    for i in range(first, n - 1):
        if (
            words[i] in FUNCTION_WORDS
            and words[i + 1] not in FUNCTION_WORDS
            and not (words[i + 1] in _ARTICLES and i + 2 < n and not _is_name_word(words[i + 2]))
        ):
            return i + 1
    return None


def _subject_end(words: list[str]) -> int | None:
    """Index of the verb that ends the subject (first auxiliary or -s/-ed verb after it)."""
    for i, word in enumerate(words):
        if i == 0:
            continue
        if word in _AUX or (_VERB.match(word) and not _is_name_word(word) and words[i - 1] not in FUNCTION_WORDS):
            return i
    return None


def _strip_trailing_lowercase(words: list[str]) -> list[str]:
    while len(words) > 1 and not _is_name_word(words[-1]):
        words = words[:-1]
    return words


def extract_triple(sentence: str) -> Triple | None:
    """(subject, relation, value) of a simple English fact, or None."""
    text = _clean(sentence)
    if not text or not text.isascii() and not _LATIN.search(text):
        return None
    first_words = text.split(maxsplit=2)
    if len(first_words) > 1 and first_words[0].lower() == "the" and not _is_name_word(first_words[1]):
        copula = list(_COPULA.finditer(text))
        if copula:
            # "The R of S is V" / "The R where S was educated is V"
            split = copula[-1]
            left, right = text[4 : split.start()], text[split.end() :]
            marker = _LEFT_MARKER.search(left)
            if marker:
                rel_head, rest = left[: marker.start()], left[marker.end() :].split()
                names = [i for i, w in enumerate(rest) if _is_name_word(w)]
                lo, hi = (names[0], names[-1] + 1) if names else (0, len(_strip_trailing_lowercase(rest)))
                subject_words = rest[lo:hi]
                relation = " ".join([rel_head, marker.group(1), *rest[:lo], *rest[hi:]])
            else:
                rel_head, of, subject = left.partition(" of ")
                if not of:
                    return None
                subject_words, relation = subject.split(), rel_head
            right_words = right.split()
            at = 0 if right_words and _is_name_word(right_words[0]) else (_value_start(right_words, 0) or 0)
            if not subject_words or at >= len(right_words):
                return None
            relation = " ".join([relation, split.group().strip(), *right_words[:at]])
            return Triple(" ".join(subject_words), relation, " ".join(right_words[at:]))
    words = text.split()
    end = _subject_end(words)
    if end is None:
        return None
    start = _value_start(words, end)
    if start is None:
        return None
    subject, relation = " ".join(words[:end]), " ".join(words[end:start])
    owner, possessive, owned = subject.partition("'s ")
    if possessive and owner and owned:  # "Barack Obama's child is ..." -> (Barack Obama, child is, ...)
        subject, relation = owner, f"{owned} {relation}"
    return Triple(subject, relation, " ".join(words[start:]))


class LLMExtractor:
    """Asks the run's LLM for the triple (one call per memory, cached by the LLM layer)."""

    PROMPT = (
        "Extract the main fact of the memory below as JSON with keys "
        '"subject", "relation" and "value" (the value is the shortest span that answers a '
        "question about the subject and relation). Reply with JSON only, or {{}} if there is no fact.\n\n"
        "Memory: {memory}"
    )

    def __init__(self, llm: "LLM") -> None:
        self.llm = llm

    def __call__(self, sentence: str) -> Triple | None:
        reply = self.llm.complete([{"role": "user", "content": self.PROMPT.format(memory=sentence)}]).text
        match = re.search(r"\{.*\}", reply, re.DOTALL)
        try:
            data = json.loads(match.group()) if match else {}
        except json.JSONDecodeError:
            return None
        parts = [str(data.get(k, "")).strip() for k in ("subject", "relation", "value")]
        return Triple(*parts) if all(parts) else None
