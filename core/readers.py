"""Readers: turn an agent's recalled items into an answer when the agent wrote none.

``extractive`` is the offline default and what native agents are scored with, so it
must neither need an LLM nor be gameable: for a multiple-choice question it returns
the letter of the choice best supported by the recalled items; for an open question
it returns the shortest phrase of the best-matching recalled sentence that is *not*
already in the question ("The capital of X is Paris." -> "Paris"), never a whole
item, so that substring metrics reward finding the answer, not recalling a lot.
The answer comes from what a message says, not from the frame a dataset or memplug puts
before it (LoCoMo's ``1:56 pm on 8 May, 2023: Caroline said, "..."``, ``[time] Ana: ...``):
the frame is evidence, but its time is an answer only to a when-question and its speaker
only to a who-question, and "said" never (see :func:`_roles`).
It handles English and Chinese in one pass: Latin words are compared as lower-cased
words, CJK text as character bigrams (single characters would match 学 in 学校 and
学历), so mixed text needs no language switch.

``llm`` fills the dataset's answer prompt (from its seed paper) and asks the run's LLM.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import TYPE_CHECKING, AbstractSet, Any, Iterable, Mapping, Sequence, cast

import attrs

from memplug.errors import MemplugError
from memplug.models import AgentQuestion, DatasetInfo, Recalled
from memplug.protocols import ReaderConfig
from memplug.text import Span, token_spans

if TYPE_CHECKING:
    from memplug.llm import LLM

#: an item at rank r weighs 1 / (1 + RANK_WEIGHT * ln(1 + r)): the agent's order breaks
#: near-ties (the newer of two conflicting facts, when the agent ranks it first) but does not
#: bury a better-matching item at rank 50 of a "full" agent that returns everything in order
RANK_WEIGHT = 0.1


def rank_weight(rank: int) -> float:
    """How much an item at 0-based ``rank`` counts: 1 / (1 + RANK_WEIGHT * ln(1 + rank))."""
    return 1.0 / (1.0 + RANK_WEIGHT * math.log1p(rank))


#: multiple choice: a sentence that shares nothing with the question still counts this much
FLOOR = 0.25
#: open questions: a phrase of the kind the question asks for (a number for "how many") counts this much more
TYPE_BONUS = 1.5
#: weight of a shared single CJK character relative to a shared bigram in sentence relevance
UNIGRAM_WEIGHT = 0.5

# Function words: never evidence, stripped from the edges of an extracted phrase.
_EN_STOP = frozenset(
    """a an the this that these those there here it its i me my mine we us our ours you your yours
    he him his she her hers they them their theirs one ones s t
    is are was were be been being am do does did done have has had having get got
    can could will would shall should may might must
    what which who whom whose when where why how
    of in on at to for from by with about as into onto over under between than then so
    and or but nor not if also too very just only now still ever""".split()
)
# Chinese function characters (particles, pronouns, copula, common prepositions).
_ZH_STOP = frozenset(
    "的了是在有就只都也很还和与及呢吗啊吧呀哦嘛么我你他她它们这那个其之被把让给对从到为而且又再才已经曾将要会能可以说着过地得啦什谁哪"
)
# Words that introduce an answer ("is named X", "the city of X", "名叫X", "she said X"):
# evidence, but trimmed off a phrase's edges, so a reporting verb is never a whole answer.
# Matched case-sensitively, so "New York City" keeps "City".
_EDGE = frozenset(
    """named called known city country town state continent place position sport language company
    said says told asked replied wrote
    名 叫 称 为""".split()
)
# Clause punctuation: a phrase never crosses it (except a comma inside a name, see _breaks).
_CLAUSE = frozenset(',;:()[]{}"“”‘’«»—–，、；：（）【】《》「」『』')
_SENTENCE_END = frozenset("!?。！？；")
_NUMERIC_ZH = frozenset("〇零一二三四五六七八九十百千万亿两年月日号点时分岁")
_NUMBER_WORDS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty
    hundred thousand million january february march april may june july august september october
    november december monday tuesday wednesday thursday friday saturday sunday""".split()
)
# What a question asks for: a number/date, or a name (capitalised words in English).
_ASKS_NUMBER = re.compile(
    r"\b(how (many|much|old|long|often|far|tall|big|large)|when|what (year|time|date|day|month)|"
    r"which (year|day|month|date))\b|几|多少|多大|多久|多长|多高|哪年|哪一年|什么时候|何时|哪天|日期|年龄|生日",
    re.IGNORECASE,
)
_ASKS_NAME = re.compile(r"\b(who|whom|whose|where)\b", re.IGNORECASE)
# What a message's frame may answer (see _roles): its time a when-question, its speaker a who-question.
_ASKS_DATE = re.compile(
    r"\b(when|what (year|time|date|day|month)|which (year|day|month|date))\b|哪年|哪一年|什么时候|何时|哪天|日期",
    re.IGNORECASE,
)
_ASKS_WHO = re.compile(r"\b(who|whom|whose)\b|谁", re.IGNORECASE)

# The frame before a line's message: a time stamp ("1:56 pm on 8 May, 2023: ", "[2024-03-02T10:00] ",
# checked by _is_stamp), then a speaker's lead-in ('Caroline said, "', "Ana: ").
_STAMP = re.compile(r"\[[^\]\n]{1,64}\][ \t]*|[^\n\"\[]{1,64}?:[ \t]+")
_LEAD_IN = re.compile(
    r"(?P<speaker>[^\W\d_][\w'.-]*(?: [^\W\d_][\w'.-]*){0,2})"
    r"(?P<lead> (?:said|says|asked|replied|wrote),?[ \t]+|:[ \t]+)"
)
#: what a stamp holds besides numbers (with _NUMBER_WORDS: month and day names in full)
_STAMP_WORDS = _NUMBER_WORDS | frozenset(
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun am pm on at utc gmt".split()
)


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """Snowball (Porter 2) stem of the lower-cased word: "worked" ~ "work", "years" ~ "year"."""
    return cast(str, _stemmer().stemWord(word.lower()))


@functools.cache
def _stemmer() -> Any:
    """Snowball's English stemmer, made at the first word: importing snowballstemmer (every
    language's tables) at import cost each command that loads the readers 10 ms."""
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def _is_stop(span: Span) -> bool:
    """Function words and punctuation: never evidence."""
    if span.kind == "cjk":
        return span.text in _ZH_STOP
    return span.kind == "punct" or span.text.lower() in _EN_STOP


# Time words that open or close a Chinese phrase without being part of the answer ("今年36岁").
_ZH_EDGE_WORDS = frozenset("今年 去年 明年 现在 目前 平时 一直 大概 大约 已经".split())


def _trim(spans: Sequence[Span], idx: list[int]) -> list[int]:
    """``idx`` without edge tokens and Chinese edge words at either end."""
    lo, hi = 0, len(idx)
    while True:
        before = (lo, hi)
        while lo < hi and _is_edge(spans[idx[lo]]):
            lo += 1
        while hi > lo and _is_edge(spans[idx[hi - 1]]):
            hi -= 1
        if hi - lo > 2 and "".join(spans[j].text for j in idx[lo : lo + 2]) in _ZH_EDGE_WORDS:
            lo += 2
        if hi - lo > 2 and "".join(spans[j].text for j in idx[hi - 2 : hi]) in _ZH_EDGE_WORDS:
            hi -= 2
        if (lo, hi) == before:
            return idx[lo:hi]


def _is_edge(span: Span) -> bool:
    """What a phrase is trimmed of at both ends: function words and answer introducers."""
    return _is_stop(span) or span.text in _EDGE


def _cjk_runs(spans: Sequence[Span]) -> Iterable[list[int]]:
    """Indices of maximal runs of adjacent CJK characters."""
    run: list[int] = []
    for i, s in enumerate(spans):
        if s.kind == "cjk" and run and spans[run[-1]].end == s.start:
            run.append(i)
            continue
        if run:
            yield run
        run = [i] if s.kind == "cjk" else []
    if run:
        yield run


def _cjk_keys(spans: Sequence[Span], run: list[int]) -> list[tuple[str, tuple[int, ...]]]:
    """(key, indices) for a CJK run: its bigrams that are not all function characters,
    or the lone character of a one-character run."""
    if len(run) == 1:
        i = run[0]
        return [] if _is_stop(spans[i]) else [(spans[i].text, (i,))]
    out: list[tuple[str, tuple[int, ...]]] = []
    for a, b in zip(run, run[1:]):
        if not (_is_stop(spans[a]) and _is_stop(spans[b])):
            out.append((spans[a].text + spans[b].text, (a, b)))
    return out


_DIGITS_OR_LETTERS = re.compile(r"\d+|\D+")


def _keyed(spans: Sequence[Span]) -> list[tuple[str, tuple[int, ...]]]:
    """Content keys of a text with the token indices each covers: stemmed words (split
    into digits and letters, so "161cm" shares "161" with "161厘米"), CJK bigrams."""
    out: list[tuple[str, tuple[int, ...]]] = [
        (_stem(part), (i,))
        for i, s in enumerate(spans)
        if s.kind == "word" and not _is_stop(s)
        for part in _DIGITS_OR_LETTERS.findall(s.text)
    ]
    for run in _cjk_runs(spans):
        out.extend(_cjk_keys(spans, run))
    return out


def content_keys(text: str) -> Counter[str]:
    """The content keys of ``text`` with their counts ("12月12日" holds "12" twice)."""
    return Counter(k for k, _ in _keyed(token_spans(text)))


@attrs.frozen
class _Evidence:
    """What a text offers as evidence: content keys, and its single CJK content characters,
    which only weigh in relevance (UNIGRAM_WEIGHT), never in cutting phrases."""

    counts: Counter[str]
    chars: frozenset[str]

    @classmethod
    def of(cls, spans: Sequence[Span]) -> "_Evidence":
        counts = Counter(k for k, _ in _keyed(spans))
        chars = frozenset(s.text for s in spans if s.kind == "cjk" and not _is_stop(s))
        return cls(counts, chars)

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.counts)

    def share_of(self, question: "_Evidence") -> float:
        """Weighted share of the question's keys and characters found here."""
        full = len(question.keys) + UNIGRAM_WEIGHT * len(question.chars)
        if full == 0:
            return 0.0
        found = len(question.keys & self.keys) + UNIGRAM_WEIGHT * len(question.chars & self.chars)
        return found / full


def _is_stamp(text: str) -> bool:
    """Whether ``text`` is only a time stamp: a number, and besides numbers only month and
    day names, am/pm and on/at ("1:56 pm on 8 May, 2023", "2024-03-02T10:00")."""
    words = [s.text.lower() for s in token_spans(text) if s.kind != "punct"]
    return any(w[:1].isdigit() for w in words) and all(
        any(c.isdigit() for c in w) or w in _STAMP_WORDS or w in _NUMERIC_ZH for w in words
    )


def _roles(text: str, spans: Sequence[Span]) -> list[str]:
    """Per token of ``text``: "" for what a message says, or its part of the frame before a
    line's message: "time" (a stamp, :func:`_is_stamp`), "speaker" (the name) and "lead"
    ("said,", ":").

    Datasets and memplug write each message after such a frame (LoCoMo's RAG line
    ``'1:56 pm on 8 May, 2023: Caroline said, "..."'``, ``[time] speaker:`` of
    :func:`memplug.adapters.external.message_text`), and a frame shares words with many
    questions (the speaker's name), so its tokens were chosen as answers: "said" to "What
    did Caroline research?", the session's time to "Which city do Ana and Ben fly to?".
    A frame stays evidence, for every sentence of its line, but answers only the question
    it can: its time a when-question (LoCoMo's temporal gold answers are often only there,
    as the session's date), its speaker a who-question, its lead-in none.
    """
    roles = [""] * len(spans)
    ranges: list[tuple[int, int, str]] = []
    for line in re.finditer(r"^", text, re.MULTILINE):
        pos = line.start()
        stamp = _STAMP.match(text, pos)
        if stamp and _is_stamp(stamp.group()):
            ranges.append((pos, stamp.end(), "time"))
            pos = stamp.end()
        lead_in = _LEAD_IN.match(text, pos)
        if lead_in:
            ranges.append((lead_in.start("speaker"), lead_in.end("speaker"), "speaker"))
            ranges.append((lead_in.start("lead"), lead_in.end("lead"), "lead"))
    k = 0
    for i, s in enumerate(spans):  # both in text order
        while k < len(ranges) and ranges[k][1] <= s.start:
            k += 1
        if k < len(ranges) and ranges[k][0] <= s.start:
            roles[i] = ranges[k][2]
    return roles


@attrs.frozen
class _Sentence:
    """A sentence of a recalled item; ``spans`` begin with its line's frame (``roles``
    names each token's part in it, "" for the message's own words)."""

    text: str
    spans: tuple[Span, ...]
    rank: int
    roles: tuple[str, ...] = ()

    @functools.cached_property
    def evidence(self) -> _Evidence:
        return _Evidence.of(self.spans)


def _sentences(items: Sequence[Recalled]) -> list[_Sentence]:
    """Every sentence of every item, with the item's rank, after its line's frame (:func:`_roles`).

    A sentence ends at "。！？!?；", at a line break, or at "." followed by a space and
    not by a lower-case word (so "D.C. is" and "Mr. smith" stay whole).
    """
    out: list[_Sentence] = []
    for rank, item in enumerate(items):
        spans = token_spans(item.text)
        roles = _roles(item.text, spans)
        frame: list[int] = []
        current: list[int] = []
        for i, s in enumerate(spans):
            nxt = spans[i + 1] if i + 1 < len(spans) else None
            gap = item.text[s.end : nxt.start] if nxt else ""
            if roles[i]:
                if i == 0 or not roles[i - 1] or "\n" in item.text[spans[i - 1].end : s.start]:
                    frame = []
                frame.append(i)
                if nxt is None or "\n" in gap:
                    frame = []  # a frame with no message after it
                continue
            if not current and frame and "\n" in item.text[spans[frame[-1]].end : s.start]:
                frame = []  # a line without a frame
            current.append(i)
            end = (
                nxt is None
                or "\n" in gap
                or s.text in _SENTENCE_END
                or (s.text == "." and gap.strip() == "" and gap != "" and not nxt.text[:1].islower())
            )
            if end:
                idx = frame + current
                out.append(_Sentence(item.text, tuple(spans[j] for j in idx), rank, tuple(roles[j] for j in idx)))
                current = []
    return out


@attrs.frozen
class _Phrase:
    text: str
    distance: int
    n_content: int
    numeric: bool
    named: bool


def _breaks(spans: Sequence[Span], i: int) -> bool:
    """Whether the punctuation at ``i`` ends a phrase. A comma between two capitalised or
    numeric tokens does not ("Washington, D.C.", "June 5, 2021", "Paris, France"), nor a
    colon written tight between two numbers ("1:56 pm", "3:2"): that is a time or a
    ratio, and cutting it left "56 pm" of LoCoMo's "1:56 pm on 8 May, 2023"."""
    s = spans[i]
    if s.text not in _CLAUSE:
        return False
    if s.text in ":：" and 0 < i < len(spans) - 1:
        left, right = spans[i - 1], spans[i + 1]
        if left.end == s.start and s.end == right.start and left.text[-1:].isdigit() and right.text[:1].isdigit():
            return False
    if s.text == "," and 0 < i < len(spans) - 1:
        before, after = spans[i - 1].text, spans[i + 1].text
        return not (before[:1].isupper() or before[:1].isdigit()) or not (after[:1].isupper() or after[:1].isdigit())
    return True


def _phrases(
    sentence: _Sentence, question_keys: frozenset[str], frame: AbstractSet[str] = frozenset()
) -> list[_Phrase]:
    """Maximal stretches of the sentence that share nothing with the question, cut at clause
    punctuation and at the edges of the frame's parts, trimmed of function words; each with
    its distance (content tokens) to the nearest question token. Of the frame, only the parts
    named in ``frame`` ("time", "speaker") give phrases."""
    spans = sentence.spans
    roles = sentence.roles or ("",) * len(spans)
    matched = [False] * len(spans)
    for key, idx in _keyed(spans):
        if key in question_keys:
            for i in idx:
                matched[i] = True
    anchors = [i for i, m in enumerate(matched) if m]
    content_before = [0]
    for s in spans:
        content_before.append(content_before[-1] + (not _is_stop(s)))

    def distance(lo: int, hi: int) -> int:
        gaps = [
            content_before[lo] - content_before[a + 1] if a < lo else content_before[a] - content_before[hi + 1]
            for a in anchors
        ]
        return min(gaps) if gaps else len(spans)

    out: list[_Phrase] = []

    def emit(stretch: list[int]) -> list[int]:
        """Adds the stretch's phrase to ``out`` (unless it is a frame part not asked for); returns []."""
        inner = _trim(spans, stretch)
        if inner and (not roles[inner[0]] or roles[inner[0]] in frame):
            lo, hi = inner[0], inner[-1]
            words = [spans[j] for j in range(lo, hi + 1)]
            out.append(
                _Phrase(
                    text=sentence.text[spans[lo].start : spans[hi].end],
                    distance=distance(lo, hi),
                    n_content=sum(not _is_stop(w) for w in words),
                    numeric=any(
                        w.text[:1].isdigit() or w.text in _NUMERIC_ZH or w.text.lower() in _NUMBER_WORDS for w in words
                    ),
                    named=any(w.kind == "word" and w.text[:1].isupper() and w.text != "I" for w in words),
                )
            )
        return []

    stretch: list[int] = []
    for i in range(len(spans) + 1):
        if i < len(spans) and stretch and roles[i] != roles[stretch[-1]]:
            stretch = emit(stretch)
        if i < len(spans) and not matched[i] and not _breaks(spans, i):
            stretch.append(i)
            continue
        stretch = emit(stretch)
    return out


def extract_answer(question: str, items: Sequence[Recalled]) -> str:
    """The shortest phrase of the best recalled sentence that answers ``question``, or "".

    Sentences are ranked by the share of the question's content keys they contain
    (single CJK characters count UNIGRAM_WEIGHT) times rank_weight(rank); within them,
    phrases by: kind asked for ("how many" -> a number, "who" -> a capitalised name;
    TYPE_BONUS), closeness to the question's words, fewest content tokens, earliest. A sentence sharing nothing with the question is no
    evidence: with none left the answer is "". A message's frame (:func:`_roles`) is
    evidence, but gives a phrase only where the question asks for it: its time to "when ...?",
    "what date ...?", its speaker to "who ...?".
    """
    spans = token_spans(question)
    q = _Evidence.of(spans)
    if not q.keys:
        return ""
    asks_number = bool(_ASKS_NUMBER.search(question))
    asks_name = bool(_ASKS_NAME.search(question))
    frame = {"time"} if _ASKS_DATE.search(question) else set()
    if _ASKS_WHO.search(question):
        frame.add("speaker")
    best: tuple[tuple[float, int, int, int], str] | None = None
    seq = 0
    for sentence in _sentences(items):
        coverage = sentence.evidence.share_of(q)
        if coverage == 0:
            continue
        relevance = coverage * rank_weight(sentence.rank)
        for phrase in _phrases(sentence, q.keys, frame):
            typed = (asks_number and phrase.numeric) or (asks_name and phrase.named)
            key = (relevance * (TYPE_BONUS if typed else 1.0), -phrase.distance, -phrase.n_content, -seq)
            seq += 1
            if best is None or key > best[0]:
                best = (key, phrase.text)
    return best[1] if best else ""


def choose(question: str, choices: Mapping[str, str], items: Sequence[Recalled]) -> str:
    """The letter of the choice best supported by the recalled sentences, or "" without evidence.

    A choice's keys are weighted by log(n_choices / number of choices that have the key),
    so words every choice shares ("years old") carry no weight and the distinguishing
    ones ("36") carry it all. Support of a choice in a sentence = weighted share of its
    keys found there (as a multiset: "12月12日" needs "12" twice), times the sentence's relevance (FLOOR + (1 - FLOOR) * share of
    the question's keys it holds) times rank_weight(rank). A choice scores its best support;
    ties go to the larger summed support, then to the earlier letter.
    """
    keys = {letter: content_keys(text) for letter, text in choices.items()}
    df: dict[str, int] = {}
    for ks in keys.values():
        for k in ks:
            df[k] = df.get(k, 0) + 1
    weight = {k: math.log(len(choices) / n) for k, n in df.items()}
    q = _Evidence.of(token_spans(question))
    best = {letter: 0.0 for letter in choices}
    total = {letter: 0.0 for letter in choices}
    full = {letter: sum(weight[k] * n for k, n in ks.items()) for letter, ks in keys.items()}
    for sentence in _sentences(items):
        found = sentence.evidence.counts
        relevance = (FLOOR + (1 - FLOOR) * sentence.evidence.share_of(q)) * rank_weight(sentence.rank)
        for letter, ks in keys.items():
            if full[letter] == 0:
                continue
            support = sum(weight[k] * min(n, found[k]) for k, n in ks.items()) / full[letter] * relevance
            best[letter] = max(best[letter], support)
            total[letter] += support
    order = {letter: i for i, letter in enumerate(choices)}
    winner = max(choices, key=lambda c: (best[c], total[c], -order[c]))
    return winner if best[winner] > 0 else ""


class ExtractiveReader:
    """Offline, deterministic: the best-supported choice letter, or the shortest answering phrase.

    It picks what one recalled sentence supports; it cannot count or compare across
    sentences. A question whose category needs that (``DatasetInfo.needs``, e.g. MemSim's
    aggregative "how many of my relatives ...") is left unanswered and reported as such,
    rather than scored 0 for an answer the reader never could give.
    """

    #: abilities this reader lacks (see DatasetInfo.needs)
    cannot = frozenset({"counting"})
    #: recorded in run.json (``versions.reader``). 2: a message's framing (its time stamp,
    #: "Caroline said,") is no answer, bar a date asked for or a speaker asked about
    version = "2"

    def __init__(self, config: ReaderConfig | None = None) -> None:
        self.config = config or ReaderConfig()

    async def answer(self, question: AgentQuestion, items: tuple[Recalled, ...], info: DatasetInfo) -> str:
        if not items:
            return ""
        if question.choices:
            return choose(question.text, question.choices, items)
        return extract_answer(question.text, items)


def format_choices(choices: Mapping[str, str] | None) -> str:
    """ "A. text" one per line; "" for an open question (how the judge shows choices)."""
    return "\n".join(f"{letter}. {text}" for letter, text in (choices or {}).items())


class LLMReader:
    """The run's LLM answers with the dataset's answer protocol (its official prompt): the
    raw reply is returned, and the runner parses it as the protocol says."""

    #: protocols.PromptsWithProtocol: a category's own parser (a two-way choice) applies
    prompts_with_protocol = True

    def __init__(self, config: ReaderConfig) -> None:
        if config.llm is None:
            raise MemplugError("the llm reader needs a model: pass --llm MODEL (or set MEMPLUG_LLM)")
        self.llm: LLM = config.llm

    async def answer(self, question: AgentQuestion, items: tuple[Recalled, ...], info: DatasetInfo) -> str:
        from memplug.answering import protocol_of

        completion = await self.llm.acomplete(protocol_of(info).messages(question, items), temperature=0)
        return completion.text
