"""Why a question was missed: the stage at which its evidence was lost (issue 29).

A score says which memory system is better; the next question is why the worse one
fails. memplug keeps per question the evidence (the target messages), what the agent
recalled and, for agents that list their store (``stored()``), what it held after
ingestion. Put together they place every scored question in one stage:

``correct``       the headline score is at least :data:`CORRECT_AT`
``not_stored``    no stored item holds the evidence: it never reached the store
``not_recalled``  a stored item holds it, but none of the K recalled items does
``misread``       a recalled item holds it (so it was stored), and the answer is wrong
``unknown``       the store cannot be seen (no ``stored()``) and the evidence was not
                  recalled, or the question has neither evidence nor a gold answer

Whether an item "holds" the evidence is decided by a rule, recorded per question:

``ids``      the item names its source messages (``message_ids``): it holds the evidence
             when one of them is a target message. Exact; used for every item that names
             its sources (memplug's native agents, Letta's passages, Cognee's chunks).
``overlap``  the item names no source (the system rewrote what it stored: Mem0 with an
             LLM, Graphiti's facts): it holds the evidence when it shares at least
             :data:`MIN_SHARED` content words with a target message and they are at least
             :data:`OVERLAP` of the shorter of the two (the overlap coefficient), or when
             it holds every content word of a gold answer and at least MIN_SHARED other
             content words of the question (the answer in the question's context, not
             anywhere: "Canada is located in North America" does not answer which
             continent Indonesia is in).
``judge``    with ``--judge``, in place of ``overlap``: the run's judge decides, with a
             pinned prompt (:data:`JUDGE_PROMPT`), for the recalled items and the stored
             items nearest the evidence (:func:`judged`).
``gold``     the question names no target message (FactConsolidation's release): the gold
             answer rule above, for every item.

``ids+overlap`` is written when the items of a question's store were of both kinds,
``empty`` when the agent stored and recalled nothing (no item to match), ``none`` when
the question has neither evidence nor a gold answer.
Content words are the metrics' tokens (:func:`memplug.text.tokens`: lowercased, no
punctuation, CJK by character) without :data:`FUNCTION_WORDS`, cut to a crude stem
(:func:`stem`: a final "s" dropped, then the first :data:`STEM` letters).

The stage is computed when the question is scored (:func:`diagnose`, from the agent's
full listing, not only the 200 items stored.jsonl keeps) and written in the record's
``diagnosis``; whether the evidence was stored and recalled does not depend on the
answer, so `memplug rescore` re-derives the stage from them with the new scores
(:func:`restage`). Runs from before diagnoses are diagnosed from their stored.jsonl
and recalled items by the ``ids`` and ``gold`` rules (the evidence texts were not kept).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import attrs

from memplug.sampling import apportion
from memplug.text import clip, tokens

if TYPE_CHECKING:
    from memplug.llm import LLM
    from memplug.record import QuestionRecord

#: a score at least this high is a correct answer: 1 of a 0/1 metric (accuracy, EM, a
#: judge's verdict); for graded ones (F1, ROUGE-L) an answer at least half right
CORRECT_AT = 0.5
#: overlap coefficient of content words from which an item without sources holds a message
OVERLAP = 0.5
#: content words an item must share with a message to hold it (one word is chance)
MIN_SHARED = 2
#: letters a word is cut to before words are compared (:func:`stem`)
STEM = 5
#: the stages, in the order they are reported; every stage but ``correct`` is a kind of wrong
STAGES = ("correct", "not_stored", "not_recalled", "misread", "unknown")
WRONG_STAGES = STAGES[1:]
#: evidence messages kept per record (for `report --why`), and characters of each
MAX_EVIDENCE = 5
MAX_EVIDENCE_CHARS = 500
#: stored items checked for support by the conversation (the precision of what was stored)
MAX_PRECISION_ITEMS = 2000
#: the Sample.meta key of a dataset's gold memory points: [{"text", "message_ids"}]
MEMORY_POINTS_KEY = "memory_points"
#: stored items kept per record: those holding the evidence, or the nearest to it
MAX_STORED_SHOWN = 3
MAX_STORED_CHARS = 300
#: the metric that decides a question when the run has a judge: the seeds' correctness measure
PREFERRED_HEADLINE = "judge"
#: question_meta keys of a question about a changed fact (FactConsolidation's generator): the
#: answer before the change, and the change itself ({"subject", "relation", "old", "new"})
STALE_KEY = "original_answer"
EDIT_KEY = "edit"
#: question_meta key of a dataset that knows whether the question's gold answer is in the
#: conversation's text (FactConsolidation's release loader): true, the gold rule's "no message
#: holds it" is a rule that cannot place it (a multi-hop question's last hop shares none of
#: the question's words), not an absence
GOLD_IN_CONTEXT_KEY = "gold_in_context"

#: what the run's judge (``--judge``) is asked about an item that names no source message,
#: in place of the overlap rule; pinned: its sha256 is in run.json (``resolved.diagnosis``)
JUDGE_PROMPT = """You check whether a memory system kept a fact it was told.

Question: {question}
Gold answer: {gold}
Evidence (the messages of the conversation that answer the question):
{evidence}

Memory item:
{item}

Does the memory item state the information of the evidence that answers the question,
in any wording? Reply with one word: yes or no."""
JUDGE_PROMPT_SHA256 = hashlib.sha256(JUDGE_PROMPT.encode("utf-8")).hexdigest()
#: stored items without sources the judge sees per question: the nearest to the evidence
JUDGE_STORED = 3

#: words too common to tell one message from another (English; CJK particles by character)
FUNCTION_WORDS = frozenset(
    """
i me my mine myself we us our ours you your yours he him his she her hers it its they them
their theirs this that these those am is are was were be been being have has had do does
did done will would shall should can could may might must to of in on at by for with from
about into over after before than then so as or and but if not no nor too very just also
there here what which who whom whose when where why how all any both each some such only
own same other again up down out off s t don now yes yeah oh hey hi ok okay really so
的 了 是 我 你 他 她 它 们 在 和 有 也 就 都 这 那 个 吗 呢 啊 吧 着 过 与 及
""".split()
)


def headline_metric(metrics: Sequence[str]) -> str | None:
    """The metric a run is judged by: the judge when present, else the dataset's first answer metric.

    recall@K scores retrieval, not the answer, so it heads the run only when it is all
    a run has.
    """
    if PREFERRED_HEADLINE in metrics:
        return PREFERRED_HEADLINE
    answer_metrics = [m for m in metrics if not m.startswith("recall@")]
    if answer_metrics:
        return answer_metrics[0]
    return metrics[0] if metrics else None


def deciding_metric(record: QuestionRecord, metrics: Sequence[str]) -> str | None:
    """The metric that decides one question: the run's headline (:func:`headline_metric`),
    or, where the record has no score for it (the judge's reply held no verdict, or it was
    not asked), the dataset's own answer metric (the first that is neither a judge's nor
    recall@K). A run whose judge read 1 verdict of 5 then still diagnoses its 5 answers,
    each by the metric its diagnosis names, instead of 1 (memplug eval --judge local)."""
    headline = headline_metric(metrics)
    if headline != PREFERRED_HEADLINE or record.scores.get(headline) is not None:
        return headline
    own = [m for m in metrics if not m.startswith(("judge", "recall@"))]
    return own[0] if own else headline


@functools.lru_cache(maxsize=1 << 14)
def content_words(text: str, language: str = "en") -> frozenset[str]:
    """The words of ``text`` that can tell it apart: its metric tokens less function words,
    each cut to its stem (:func:`stem`). Memoised: the same gold answers, questions and
    recalled items are matched again and again."""
    return frozenset(stem(w) for w in tokens(text, language) if w not in FUNCTION_WORDS)


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude stem: a final "s" dropped from a word of four letters or more (the metrics'
    tokens keep no apostrophe, so "sister's" is "sisters"), then a word of letters cut to
    its first :data:`STEM` ("citizenship" and "citizen" are one word, as "located" and
    "location"); numbers and CJK characters stay whole. Truncation is as good a stemmer as
    Porter's for matching English (and needs no word list), and errs towards matching.
    Memoised: each text's words are stemmed once per text, and texts that differ (a
    dataset's messages, diagnosed on every question) share most of their words; it was a
    fifth of a warm rerun's CPU (bench/eval_throughput.py, 64 side by side)."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:STEM] if word.isalpha() and word.isascii() else word


#: where a text splits into sentences, for the gold rule: after a full stop, question or
#: exclamation mark (Latin or CJK) followed by a space, and at each line break
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")


def sentences(text: str, language: str = "en") -> tuple[frozenset[str], ...]:
    """The content words of each sentence of ``text``: the gold rule looks for the answer and
    the question's words in one sentence, not anywhere in a 500-token chunk."""
    return tuple(w for part in _SENTENCE.split(text) if (w := content_words(part, language)))


def _overlaps(a: frozenset[str], b: frozenset[str]) -> bool:
    shared = len(a & b)
    return shared >= MIN_SHARED and shared >= OVERLAP * min(len(a), len(b))


class Evidence:
    """What a question's evidence looks like to the rules: its target message ids, their
    texts' content words (empty when the texts are unknown) and the gold answers'.

    The content words are worked out at first use: an item that names its sources is
    decided by its ids alone, so a question answered from such items never tokenises its
    evidence (half of a warm rerun's CPU was this tokenising, bench/eval_throughput.py)."""

    __slots__ = ("targets", "language", "_texts", "_gold", "_question", "_messages", "_golds", "_question_words")

    def __init__(
        self, targets: Iterable[str], texts: Iterable[str], gold: Iterable[str], question: str, language: str
    ) -> None:
        self.targets = frozenset(targets)
        self.language = language
        self._texts, self._gold, self._question = tuple(texts), tuple(gold), question
        self._messages: tuple[frozenset[str], ...] | None = None
        self._golds: tuple[frozenset[str], ...] | None = None
        self._question_words: frozenset[str] | None = None

    @classmethod
    def of(
        cls, targets: Iterable[str], texts: Iterable[str], gold: Iterable[str], question: str, language: str
    ) -> "Evidence":
        return cls(targets, texts, gold, question, language)

    @property
    def messages(self) -> tuple[frozenset[str], ...]:
        """Content words of each target message whose text is known (and has some)."""
        if self._messages is None:
            self._messages = tuple(w for t in self._texts if (w := content_words(t, self.language)))
        return self._messages

    @property
    def golds(self) -> tuple[frozenset[str], ...]:
        """Content words of each gold answer that has some."""
        if self._golds is None:
            self._golds = tuple(w for g in self._gold if (w := content_words(g, self.language)))
        return self._golds

    @property
    def question(self) -> frozenset[str]:
        """Content words of the question."""
        if self._question_words is None:
            self._question_words = content_words(self._question, self.language)
        return self._question_words

    @property
    def exists(self) -> bool:
        """Whether any rule can apply: the question names target messages or has a gold answer with content."""
        return bool(self.targets or self.golds)

    def held_by(self, item: "Item") -> tuple[bool, str]:
        """Whether ``item`` holds the evidence, and by which rule."""
        if not self.targets:
            return self.holds_gold(item.parts), "gold"
        if item.message_ids:
            return not self.targets.isdisjoint(item.message_ids), "ids"
        return any(_overlaps(item.words, m) for m in self.messages) or self.holds_gold(item.parts), "overlap"

    def holds_gold(self, parts: Iterable[frozenset[str]]) -> bool:
        """Whether a sentence of ``parts`` holds a gold answer's words and MIN_SHARED of the question's."""
        return any(g <= part and len((self.question - g) & part) >= MIN_SHARED for part in parts for g in self.golds)

    def nearness(self, words: frozenset[str]) -> int:
        """Content words an item shares with the evidence (to show the nearest stored item of a miss)."""
        return max((len(words & m) for m in (*self.messages, *self.golds)), default=0)


class Item:
    """A stored or recalled item as the rules see it: its text, the messages it names, and
    (worked out at first use, once: the ``ids`` rule never needs them) its content words,
    whole and by sentence."""

    __slots__ = ("text", "message_ids", "id", "language", "_words", "_parts")

    def __init__(self, text: str, message_ids: tuple[str, ...], language: str, id: str | None = None) -> None:
        self.text, self.message_ids, self.language, self.id = text, message_ids, language, id
        self._words: frozenset[str] | None = None
        self._parts: tuple[frozenset[str], ...] | None = None

    @classmethod
    def of(cls, text: str, message_ids: Iterable[str], language: str, id: str | None = None) -> "Item":
        return cls(text, tuple(map(str, message_ids)), language, id)

    @property
    def words(self) -> frozenset[str]:
        """The content words of the whole text (the overlap rule, nearness)."""
        if self._words is None:
            self._words = content_words(self.text, self.language)
        return self._words

    @property
    def parts(self) -> tuple[frozenset[str], ...]:
        """The content words of each sentence (the gold rule)."""
        if self._parts is None:
            self._parts = sentences(self.text, self.language)
        return self._parts

    def shown(self) -> dict[str, Any]:
        """The item as a diagnosis keeps it: text clipped to MAX_STORED_CHARS."""
        return {"text": clip(self.text, MAX_STORED_CHARS), "id": self.id, "message_ids": list(self.message_ids)}


@attrs.frozen
class Store:
    """What the agent listed for a sample (``stored()``); ``complete``: every listed item is
    here (False for a stored.jsonl that kept only the first MAX_ITEMS of more)."""

    items: tuple[Item, ...]
    complete: bool = True

    @classmethod
    def of(cls, listed: Iterable[Mapping[str, Any]], language: str, total: int | None = None) -> "Store":
        """From items as stored.jsonl writes them ({"text", "id", "message_ids"}); ``total``: how
        many the agent listed, when more than these."""
        items = tuple(
            Item.of(
                str(i.get("text", "")),
                i.get("message_ids") or (),
                language,
                None if i.get("id") is None else str(i.get("id")),
            )
            for i in listed
        )
        return cls(items, total is None or total <= len(items))


@attrs.define(slots=True)
class Diagnosis:
    """A record's ``diagnosis``: its stage, the rule and the facts that decided it.

    ``stored`` and ``recalled`` (None: not known) do not depend on the answer, so a
    rescore re-derives ``stage`` from them and the new ``score``.
    """

    stage: str
    #: ids, overlap, ids+overlap, gold, empty (nothing stored or recalled), or none (no rule could apply)
    rule: str
    #: the metric that decided correctness, and the question's score
    metric: str
    score: float
    stored: bool | None = None
    recalled: bool | None = None
    #: why it is not known whether the evidence was stored or recalled (shown for an
    #: ``unknown`` stage); None when both are known
    why: str | None = None
    #: the target messages ({"id", "text"}, the first MAX_EVIDENCE, clipped), as the run saw them
    evidence: list[dict[str, str]] = attrs.Factory(list)
    #: stored items holding the evidence, or (not stored) the nearest one; clipped
    stored_items: list[dict[str, Any]] = attrs.Factory(list)
    #: how many items the agent listed; None when it lists none
    n_stored: int | None = None
    #: a question about a fact that changed (:func:`update_of`): which value the answer used
    #: ("new", "stale", "other") and whether the store still holds the stale one; None otherwise
    update: dict[str, Any] | None = None
    #: the sample's store measured as memory (:func:`sample_points`), repeated on each of its records
    points: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "stage": self.stage,
            "rule": self.rule,
            "metric": self.metric,
            "score": self.score,
            "stored": self.stored,
            "recalled": self.recalled,
            "why": self.why,
            "evidence": self.evidence,
            "stored_items": self.stored_items,
            "n_stored": self.n_stored,
        }
        if self.update is not None:
            out["update"] = self.update
        if self.points is not None:
            out["points"] = self.points
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Diagnosis":
        return cls(
            str(obj["stage"]),
            str(obj.get("rule") or "none"),
            str(obj.get("metric") or ""),
            float(obj.get("score") or 0.0),
            obj.get("stored"),
            obj.get("recalled"),
            obj.get("why"),
            list(obj.get("evidence") or []),
            list(obj.get("stored_items") or []),
            obj.get("n_stored"),
            obj.get("update"),
            obj.get("points"),
        )


def stage_of(correct: bool, stored: bool | None, recalled: bool | None) -> str:
    """The stage. Recalled evidence was stored, whatever the listing says (a listing may be
    cut at the system's limit)."""
    if correct:
        return "correct"
    if recalled:
        return "misread"
    if stored is False:
        return "not_stored"
    if stored is None or recalled is None:
        return "unknown"
    return "not_recalled"


def stale_value(record: QuestionRecord) -> str | None:
    """The value the asked fact had before it changed, where the dataset says
    (``question_meta[STALE_KEY]``: FactConsolidation's generator), when it differs from the gold."""
    value = record.question_meta.get(STALE_KEY)
    if not isinstance(value, str) or not value.strip() or value in record.gold:
        return None
    return value


def answer_value(record: QuestionRecord, correct: bool, stale: str, language: str) -> str:
    """Which value an answer to a changed fact used: "new" (it is correct), "stale" (it holds
    every content word of the old value), else "other"."""
    if correct:
        return "new"
    old = content_words(stale, language)
    return "stale" if old and old <= content_words(record.prediction or "", language) else "other"


def _holds_stale(record: QuestionRecord, stale: str, store: Store, language: str) -> bool:
    """Whether a stored sentence still states the changed fact's old value: every content word
    of the old value and of its subject (``question_meta["edit"]``: {"subject", "old"}, the
    changed hop of a multi-hop question), else the old answer beside two words of the question."""
    edit = record.question_meta.get(EDIT_KEY)
    if isinstance(edit, Mapping) and isinstance(edit.get("subject"), str) and isinstance(edit.get("old"), str):
        fact = content_words(edit["subject"], language) | content_words(edit["old"], language)
        return any(fact <= part for item in store.items for part in item.parts)
    old = Evidence.of((), (), (stale,), record.question, language)
    return any(old.holds_gold(item.parts) for item in store.items)


def update_of(record: QuestionRecord, correct: bool, store: Store | None, language: str) -> dict[str, Any] | None:
    """For a question about a fact that changed: which value the answer used, and whether the
    store still holds the old value (:func:`_holds_stale`; None when the agent lists nothing).
    None for other questions."""
    stale = stale_value(record)
    if stale is None:
        return None
    stale_stored = _holds_stale(record, stale, store, language) if store is not None else None
    return {"answer": answer_value(record, correct, stale, language), "stale_stored": stale_stored}


class Conversation:
    """A sample's messages as the rules see them: text by id (the evidence texts) and, each
    made once and only when first needed, the content words of every sentence (is a gold
    answer in the conversation at all?) and an index of the messages by word (does the
    conversation support a stored item?)."""

    def __init__(self, texts: Mapping[str, str], language: str) -> None:
        self.texts, self.language = texts, language
        self._parts: list[frozenset[str]] | None = None
        self._postings: dict[str, list[int]] | None = None
        self._sizes: list[int] = []

    def supports(self, item: Item) -> bool:
        """Whether the conversation supports a stored item: one of its message ids is a message
        here, or (an item naming no message) it overlaps a message as the overlap rule says.
        Messages are found through an index of their words, not by a scan per item."""
        if item.message_ids:
            return any(i in self.texts for i in item.message_ids)
        if self._postings is None:
            self._postings = defaultdict(list)
            for n, text in enumerate(self.texts.values()):
                words = content_words(text, self.language)
                self._sizes.append(len(words))
                for w in words:
                    self._postings[w].append(n)
        shared: Counter[int] = Counter(n for w in item.words for n in self._postings.get(w, ()))
        return any(k >= MIN_SHARED and k >= OVERLAP * min(len(item.words), self._sizes[n]) for n, k in shared.items())

    @property
    def parts(self) -> list[frozenset[str]]:
        if self._parts is None:
            self._parts = [p for text in self.texts.values() for p in sentences(text, self.language)]
        return self._parts


def _point_held(ids: Sequence[str], text: str, named: set[str], candidates: Sequence[Item], language: str) -> bool:
    """Whether a stored item holds a gold memory point: by ids where both name messages
    (``named``: every message the store's items name), else by overlap with one of the
    ``candidates`` (the items naming no message, or every item for a point naming none; the
    point's content words worked out only then)."""
    if any(i in named for i in ids):
        return True
    if not candidates:
        return False
    words = content_words(text, language)
    return any(_overlaps(item.words, words) for item in candidates)


def sample_points(points: Any, store: Store | None, conversation: Conversation) -> dict[str, int] | None:
    """A sample's store measured as memory, before any question (HaluMem's extraction):

    ``points``/``held``  the dataset's gold memory points (``Sample.meta["memory_points"]``:
                         {"text", "message_ids"}; LoCoMo's observations) and how many a stored
                         item holds (by ids where both name messages, else by overlap)
    ``items``/``supported``  the stored items (the first :data:`MAX_PRECISION_ITEMS`) and how
                         many the conversation supports: their message ids are its messages, or
                         they overlap one of its messages

    None when the agent lists nothing.
    """
    if store is None:
        return None
    language = conversation.language
    out: dict[str, int] = {}
    items = store.items
    # looked up once per sample, not item by item per point (a tenth of a warm rerun)
    named = {i for item in items for i in item.message_ids}
    unnamed = [item for item in items if not item.message_ids]
    n_points = held = 0
    for p in points or ():
        if isinstance(p, dict) or isinstance(p, Mapping):  # dict first: no ABC check
            ids = [str(i) for i in p.get("message_ids") or ()]
            n_points += 1
            held += _point_held(ids, str(p.get("text", "")), named, unnamed if ids else items, language)
    if n_points:
        out["points"] = n_points
        out["held"] = held
    checked = store.items[:MAX_PRECISION_ITEMS]
    out["items"] = len(checked)
    out["supported"] = sum(conversation.supports(item) for item in checked)
    return out


def diagnose(
    record: QuestionRecord,
    metric: str | None,
    conversation: Conversation | None,
    store: Store | None,
    language: str,
    points: dict[str, int] | None = None,
) -> Diagnosis | None:
    """The diagnosis of a scored record, or None when it has no ``metric`` score (an error,
    a question the reader could not answer).

    ``conversation``: the sample's messages (None when unknown: a rescore of a run from before
    diagnoses); ``store``: what the agent listed, None when it lists nothing.
    """
    score = record.scores.get(metric) if metric and not record.error else None
    if score is None:
        return None
    messages = conversation.texts if conversation is not None else {}
    texts = [messages[t] for t in record.targets if t in messages]
    evidence = Evidence.of(record.targets, texts, record.gold, record.question, language)
    shown_evidence = [
        {"id": str(t), "text": clip(messages[t], MAX_EVIDENCE_CHARS)}
        for t in record.targets[:MAX_EVIDENCE]
        if t in messages
    ]
    rules: set[str] = set()
    stored: bool | None = None
    recalled: bool | None = None
    stored_items: list[dict[str, Any]] = []
    if evidence.exists:
        if store is not None:
            holding = []
            for item in store.items:
                held, rule = evidence.held_by(item)
                rules.add(rule)
                if held:
                    holding.append(item)
            stored = True if holding else (False if store.complete else None)
            nearest = holding
            if not holding:  # the first of the items sharing the most words with the evidence, if one shares any
                near = max(store.items, key=lambda i: evidence.nearness(i.words), default=None)
                nearest = [near] if near is not None and evidence.nearness(near.words) else []
            stored_items = [i.shown() for i in nearest[:MAX_STORED_SHOWN]]
        if record.recalled:
            recalled = False
            for r in record.recalled:
                held, rule = evidence.held_by(Item.of(r.text, r.message_ids, language))
                rules.add(rule)
                recalled = recalled or held
        elif not record.agent_answered:
            recalled = False  # nothing recalled: the reader had nothing to go on
    why: str | None = None
    if not evidence.exists:
        why = "the question names no evidence and has no gold answer to look for"
    elif (
        not evidence.targets
        and conversation is not None
        and conversation.texts
        and not evidence.holds_gold(conversation.parts)
    ):
        # FactConsolidation's release has questions whose answer the context never states: whether
        # a store holds it says nothing, and the question is left out of the memory measures
        stored = recalled = None
        why = (
            "the gold answer is in the conversation (the dataset says), but in no sentence that shares "
            f"{MIN_SHARED} words with the question (a multi-hop question): the gold rule cannot place it"
            if record.question_meta.get(GOLD_IN_CONTEXT_KEY) is True
            else "no message of the conversation holds the gold answer (gold rule)"
        )
    elif recalled:
        pass  # recalled, so stored: both known
    elif stored is None:
        why = (
            "the evidence is not among the stored items kept, and the agent listed more"
            if store is not None
            else "the agent does not list what it stored, and the evidence was not recalled"
        )
    elif recalled is None:
        why = "the agent answered itself without returning what it recalled"
    if not rules and store is not None and not store.items:
        rules.add("empty")  # nothing stored, nothing recalled: no item to match
    return Diagnosis(
        stage_of(score >= CORRECT_AT, stored, recalled),
        "+".join(sorted(rules)) or "none",
        metric or "",
        float(score),
        stored,
        recalled,
        why,
        shown_evidence,
        stored_items,
        len(store.items) if store is not None else None,
        update_of(record, score >= CORRECT_AT, store, language),
        points,
    )


async def judged(
    record: QuestionRecord, conversation: Conversation, store: Store | None, llm: LLM, language: str
) -> Diagnosis | None:
    """The record's diagnosis with the judge deciding, for every item that names no source
    message, whether it holds the evidence (:data:`JUDGE_PROMPT`, at temperature 0) instead
    of the overlap rule: the recalled items, and the :data:`JUDGE_STORED` stored items
    nearest the evidence (the judge does not read a store of thousands). Items naming their
    sources keep the ``ids`` rule. The rule becomes ``judge`` (``ids+judge`` for a mix)."""
    d = record.diagnosis
    if d is None or "overlap" not in d.rule:
        return d
    texts = [conversation.texts[t] for t in record.targets if t in conversation.texts]
    evidence = Evidence.of(record.targets, texts, record.gold, record.question, language)
    shown = "\n".join(texts) or "(none named: look for the gold answer)"

    async def holds(item: Item) -> bool:
        if item.message_ids:
            return evidence.held_by(item)[0]
        prompt = JUDGE_PROMPT.format(
            question=record.question, gold=" | ".join(record.gold), evidence=shown, item=item.text
        )
        reply = await llm.acomplete([{"role": "user", "content": prompt}], temperature=0)
        return reply.text.strip().lower().startswith("yes")

    stored, stored_items = d.stored, d.stored_items
    if store is not None and store.items:
        by_ids = [i for i in store.items if i.message_ids and evidence.held_by(i)[0]]
        candidates = sorted((i for i in store.items if not i.message_ids), key=lambda i: -evidence.nearness(i.words))[
            :JUDGE_STORED
        ]
        verdicts = await asyncio.gather(*(holds(i) for i in candidates))
        holding = [*by_ids, *(i for i, v in zip(candidates, verdicts) if v)]
        stored = bool(holding)
        stored_items = [i.shown() for i in (holding or candidates[:1])[:MAX_STORED_SHOWN]]
    recalled = d.recalled
    if record.recalled:
        items = [Item.of(r.text, r.message_ids, language) for r in record.recalled]
        recalled = any(await asyncio.gather(*(holds(i) for i in items)))
    rule = "+".join(sorted({r if r != "overlap" else "judge" for r in d.rule.split("+")}))
    return attrs.evolve(
        d,
        stage=stage_of(d.score >= CORRECT_AT, stored, recalled),
        rule=rule,
        stored=stored,
        recalled=recalled,
        stored_items=stored_items,
        why=None if recalled or (stored is not None and recalled is not None) else d.why,
    )


def carried(d: Diagnosis | None, source: Diagnosis | None) -> Diagnosis | None:
    """A replayed run's diagnosis (``eval --from RUN``: the source's recalled items answered
    again, no agent built) with what the source's agent stored: whether it held the evidence,
    the items shown, the store's measures; the stage re-derived."""
    if d is None or source is None:
        return d
    stored = True if d.recalled else source.stored
    update = d.update
    if update is not None and source.update is not None:
        update = {**update, "stale_stored": source.update.get("stale_stored")}
    rule = "+".join(sorted((set(d.rule.split("+")) | set(source.rule.split("+"))) - {"none"})) or "none"
    known = d.recalled or (stored is not None and d.recalled is not None)
    return attrs.evolve(
        d,
        stage=stage_of(d.score >= CORRECT_AT, stored, d.recalled),
        rule=rule,
        stored=stored,
        stored_items=source.stored_items,
        n_stored=source.n_stored,
        points=source.points,
        update=update,
        why=None if known else source.why or d.why,
    )


def restage(record: QuestionRecord, metric: str | None, store: Store | None, language: str) -> Diagnosis | None:
    """The diagnosis of a record after a rescore: its stored and recalled facts kept, its
    stage re-derived from the new score; a record without one (a run from before diagnoses)
    is diagnosed from ``store`` (its stored.jsonl) with the rules that need no evidence text."""
    old: Diagnosis | None = record.diagnosis
    if old is None:
        return diagnose(record, metric, None, store, language)
    score = record.scores.get(metric) if metric and not record.error else None
    if score is None:
        return None
    update = old.update
    if update is not None and (stale := stale_value(record)) is not None:
        update = {**update, "answer": answer_value(record, score >= CORRECT_AT, stale, language)}
    return attrs.evolve(
        old,
        stage=stage_of(score >= CORRECT_AT, old.stored, old.recalled),
        metric=metric or "",
        score=float(score),
        update=update,
    )


def _measures(records: Sequence[QuestionRecord], level: float, resamples: int) -> dict[str, dict[str, Any]]:
    """The memory measures, each a mean over the questions it applies to with its interval
    (a percentile bootstrap over samples, as summary.json's metrics; ``ci`` None and ``na``
    the reason where none can be estimated):

    ``extraction``  questions whose evidence reached the store (recalled evidence counts)
    ``retrieval``   of those, questions whose evidence was recalled
    ``reading``     of those, questions answered correctly
    ``points_recall``  the dataset's gold memory points a stored item holds (:func:`sample_points`)
    ``store_precision``  stored items the conversation supports
    ``update_accuracy``  questions about a changed fact answered with the new value, its
                    evidence in the store (FactConsolidation's generator says which changed)
    ``stale_answer``  of those, answers that hold the old value
    ``stale_kept``  of those, stores that still hold the old value
    """
    from memplug import stats

    rows: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for r in records:
        d = r.diagnosis
        if d is None:
            continue
        held = True if d.recalled else d.stored
        if held is not None:
            rows["extraction"].append((float(held), r.sample_id))
        if held and d.recalled is not None:
            rows["retrieval"].append((float(d.recalled), r.sample_id))
        if d.recalled:
            rows["reading"].append((float(d.stage == "correct"), r.sample_id))
        if d.update is not None:
            rows["update_accuracy"].append((float(d.update["answer"] == "new" and held is not False), r.sample_id))
            rows["stale_answer"].append((float(d.update["answer"] == "stale"), r.sample_id))
            if d.update.get("stale_stored") is not None:
                rows["stale_kept"].append((float(d.update["stale_stored"]), r.sample_id))
    seen: set[str] = set()
    for r in records:  # the sample's store, once per sample: a value per gold point, per stored item
        p = r.diagnosis.points if r.diagnosis is not None else None
        if p is None or r.sample_id in seen:
            continue
        seen.add(r.sample_id)
        if p.get("points"):
            rows["points_recall"] += [(1.0, r.sample_id)] * p["held"] + [(0.0, r.sample_id)] * (p["points"] - p["held"])
        if p.get("items"):
            rows["store_precision"] += [(1.0, r.sample_id)] * p["supported"] + [(0.0, r.sample_id)] * (
                p["items"] - p["supported"]
            )
    out: dict[str, dict[str, Any]] = {}
    for name in (
        "extraction",
        "retrieval",
        "reading",
        "points_recall",
        "store_precision",
        "update_accuracy",
        "stale_answer",
        "stale_kept",
    ):
        pairs = rows.get(name)
        if not pairs:
            continue
        values, clusters = [v for v, _ in pairs], [c for _, c in pairs]
        entry: dict[str, Any] = {"value": round(sum(values) / len(values), 6), "n": len(values), "ci": None}
        try:
            low, high = stats.bootstrap_ci(values, clusters, level=level, resamples=resamples)
            entry["ci"] = [round(low, 6), round(high, 6)]
        except stats.NotEstimable as exc:
            entry["na"] = exc.reason
        out[name] = entry
    return out


def tally(records: Iterable[QuestionRecord], level: float = 0.95, resamples: int = 1000) -> dict[str, Any] | None:
    """summary.json's ``diagnosis``: questions per stage, overall and by category, the metric
    that decided them, the rules used, and the memory measures (:func:`_measures`); None when
    no record has a diagnosis."""
    overall: Counter[str] = Counter()
    by_category: dict[str, Counter[str]] = defaultdict(Counter)
    metrics: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    diagnosed = []
    for r in records:
        d: Diagnosis | None = r.diagnosis
        if d is None:
            continue
        diagnosed.append(r)
        overall[d.stage] += 1
        by_category[r.category][d.stage] += 1
        metrics[d.metric] += 1
        rules[d.rule] += 1
    if not overall:
        return None

    def counts(c: Counter[str]) -> dict[str, int]:
        return {s: c[s] for s in STAGES}

    return {
        "metric": metrics.most_common(1)[0][0],
        # questions per deciding metric, where more than one decided (deciding_metric)
        **({"decided_by": dict(metrics.most_common())} if len(metrics) > 1 else {}),
        "correct_at": CORRECT_AT,
        "rules": dict(rules.most_common()),
        "overall": counts(overall),
        "by_category": {k: counts(v) for k, v in sorted(by_category.items())},
        "memory": _measures(diagnosed, level, resamples),
    }


def memory_line(tallied: Mapping[str, Any]) -> str | None:
    """The memory measures of a run as one line: "memory: extraction 0.980 [0.95, 1.00] (n 150),
    retrieval 0.520 [...]", or, where no measure has an interval for one reason, "memory (no
    interval: 1 sample): extraction 1.000 (n 151), ..."; None when it has none."""
    measures = tallied.get("memory") or {}
    if not measures:
        return None
    reasons = {m.get("na") for m in measures.values() if not m.get("ci")}
    one = next(iter(reasons)) if len(reasons) == 1 and all(not m.get("ci") for m in measures.values()) else None
    parts = []
    for name, m in measures.items():
        ci = (
            f" [{m['ci'][0]:.2f}, {m['ci'][1]:.2f}]"
            if m.get("ci")
            else f" n/a ({m['na']})"
            if m.get("na") and one is None
            else ""
        )
        parts.append(f"{name.replace('_', ' ')} {m['value']:.3f}{ci} (n {m['n']})")
    return f"memory{f' (no interval: {one})' if one else ''}: " + ", ".join(parts)


def wrong_line(tallied: Mapping[str, Any]) -> str | None:
    """The line a run's stage counts (summary.json's ``diagnosis``) print as:
    "wrong: 41% not stored, 33% not recalled, 26% misread (27 of 80 answers by accuracy)",
    shares of the wrong answers, a stage with none left out; None when none was wrong.
    The shares are rounded by largest remainder, so they add up to 100 (rounding each
    alone printed 52% + 48% + 1% for 99, 92 and 1 of 192 wrong answers)."""
    counts = tallied.get("overall") or {}
    wrong = sum(counts.get(s, 0) for s in WRONG_STAGES)
    if not wrong:
        return None
    shares = apportion({s: counts[s] for s in WRONG_STAGES if counts.get(s)}, 100)
    parts = [f"{share}% {s.replace('_', ' ')}" for s, share in shares.items()]
    total = sum(counts.get(s, 0) for s in STAGES)
    # questions the judge gave no verdict for were decided by the dataset's metric (deciding_metric)
    by = ", ".join(f"{n} by {m}" for m, n in (tallied.get("decided_by") or {}).items())
    return f"wrong: {', '.join(parts)} ({wrong} of {total} answers{'; decided ' + by if by else ' by ' + str(tallied.get('metric'))})"
