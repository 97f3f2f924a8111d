"""memplug's built-in metrics: one class per metric key, registered in :mod:`memplug.builtins`.

Each class is built as ``Metric(config: MetricConfig)`` and scores one answered
question; ``None`` means "not applicable" (no gold answer, no choices, no targets,
no anchors) and is left out of means. Every metric has a ``version`` that goes into
run.json: bump it whenever the definition changes, so that scores from different
releases are never compared silently.

Definitions and sources are in docs/metrics.md. Answer metrics take the maximum over
the gold answers (SQuAD convention, kept by MemoryAgentBench).
"""

from __future__ import annotations

import inspect
import math
import re
from collections import Counter
from typing import Callable, Iterable, Mapping, Sequence

import attrs

from memplug.protocols import Metric, MetricConfig, ScoreContext, reads_answer
from memplug.text import normalize_answer, resolve_language, tokens


async def score_metric(metric: Metric, ctx: ScoreContext) -> float | None:
    """``metric.score(ctx)`` as a float, awaited when the metric is async (the judge);
    None (not applicable) stays None. The runner and `memplug rescore` both score this way."""
    value = metric.score(ctx)
    if not isinstance(value, (float, int)) and inspect.isawaitable(value):  # numbers skip the ABC check
        value = await value
    return None if value is None else float(value)


async def score_with(metric: Metric, ctx: ScoreContext, raw_reply: str | None = None) -> float | None:
    """``score_metric``, and with ``raw_reply`` (a protocol that scores the raw reply too) the
    better of the parsed and the raw reply, as MemoryAgentBench's ``default_post_process``
    keeps the max of both for each metric."""
    score = await score_metric(metric, ctx)
    if raw_reply is None or raw_reply == ctx.prediction or not reads_answer(metric):
        return score
    raw = await score_metric(metric, attrs.evolve(ctx, prediction=raw_reply))
    return raw if score is None else score if raw is None else max(score, raw)


def _language(ctx: ScoreContext) -> str:
    """The rule set for this question: "auto" is decided by the gold answers, not the prediction."""
    return resolve_language(ctx.language, *ctx.question.answers)


def _max_over_golds(ctx: ScoreContext, fn: Callable[[str, str, str], float]) -> float | None:
    """max over gold answers of fn(prediction, gold, language).

    A gold answer that normalises to "" (e.g. "The", "。") is skipped: it would make
    any prediction a substring match. None when no gold answer is left.
    """
    lang = _language(ctx)
    golds = [g for g in ctx.question.answers if normalize_answer(g, lang)]
    return max(fn(ctx.prediction, g, lang) for g in golds) if golds else None


class _Metric:
    """Base of the built-in metrics: built from a MetricConfig (the default one when none is given)."""

    name: str
    version = "1"
    #: False for metrics of what was recalled, not of the answer (recall@K): they are scored
    #: even for a question the reader cannot answer (see memplug.readers.ExtractiveReader.cannot)
    reads_answer = True

    def __init__(self, config: MetricConfig | None = None) -> None:
        self.config = config or MetricConfig()


class _AnswerMetric(_Metric):
    """Base for metrics that compare the prediction with each gold answer and keep the best."""

    #: (prediction, gold, language) -> score in [0, 1]
    compare: Callable[[str, str, str], float]

    def score(self, ctx: ScoreContext) -> float | None:
        return _max_over_golds(ctx, self.compare)


class ExactMatch(_AnswerMetric):
    """1.0 when the normalised prediction equals a normalised gold answer (SQuAD EM)."""

    name = "em"

    @staticmethod
    def compare(prediction: str, gold: str, language: str) -> float:
        return float(normalize_answer(prediction, language) == normalize_answer(gold, language))


class SubstringExactMatch(_AnswerMetric):
    """1.0 when a normalised gold answer occurs in the normalised prediction.

    MemoryAgentBench's ``substring_exact_match_score``: ``normalize(gold) in
    normalize(pred)``, one direction only (a prediction inside the gold does not count).
    """

    name = "subem"

    @staticmethod
    def compare(prediction: str, gold: str, language: str) -> float:
        return float(normalize_answer(gold, language) in normalize_answer(prediction, language))


def token_f1(prediction: Sequence[str], gold: Sequence[str]) -> float:
    """SQuAD F1 of two token lists: harmonic mean of precision and recall of the shared bag."""
    if not prediction or not gold:
        return float(prediction == gold)
    # the size of the bags' intersection, counted with a plain dict: Counter's ``&`` took
    # five times as long, and even Counter() costs an ABC check per call, while the
    # accuracy metric computes this for every choice of every question
    left: dict[str, int] = {}
    for token in gold:
        left[token] = left.get(token, 0) + 1
    common = 0
    for token in prediction:
        n = left.get(token)
        if n:
            left[token] = n - 1
            common += 1
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction), common / len(gold)
    return 2 * precision * recall / (precision + recall)


class TokenF1(_AnswerMetric):
    """SQuAD token F1 (characters and Latin words for CJK), max over gold answers."""

    name = "f1"

    @staticmethod
    def compare(prediction: str, gold: str, language: str) -> float:
        return token_f1(tokens(prediction, language), tokens(gold, language))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (dynamic programming, one row of memory)."""
    if len(a) < len(b):
        a, b = b, a
    row = [0] * (len(b) + 1)
    for x in a:
        prev_diag = 0
        for j, y in enumerate(b, start=1):
            prev_diag, row[j] = row[j], prev_diag + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def rouge_l(prediction: Sequence[str], gold: Sequence[str]) -> float:
    """ROUGE-L F-measure (beta = 1, as rouge_score's ``fmeasure``) of two token lists."""
    lcs = lcs_length(prediction, gold)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(prediction), lcs / len(gold)
    return 2 * precision * recall / (precision + recall)


class RougeL(_AnswerMetric):
    """ROUGE-L F-measure over the same tokens as F1, max over gold answers.

    Hand-written (a dozen lines) rather than Google's rouge_score, whose tokenizer
    deletes every non-ASCII character and so scores Chinese as empty strings.
    """

    name = "rouge_l"

    @staticmethod
    def compare(prediction: str, gold: str, language: str) -> float:
        return rouge_l(tokens(prediction, language), tokens(gold, language))


def _ngrams(toks: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))


def sentence_bleu(prediction: Sequence[str], references: Iterable[Sequence[str]], max_order: int = 4) -> float:
    """Sentence BLEU-4 in [0, 1] with sacrebleu's sentence-level defaults.

    Smoothing "exp" (Chen & Cherry 2014, method 3, the NIST geometric sequence): an
    order with no matching n-gram gets precision 1 / (2^k * total), k counting such
    orders; *effective order*: orders longer than the prediction are left out of the
    geometric mean, so a one-word answer is not zero by construction. Brevity penalty
    against the closest reference length (ties: the shorter). Clipped counts are the
    maximum over references. No matching unigram at all gives 0 (sacrebleu 2.x). Written here to avoid sacrebleu's dependencies (lxml,
    portalocker, colorama) for forty lines; tests check it against sacrebleu's numbers.
    """
    refs = [list(r) for r in references]
    if not prediction or not refs:
        return 0.0
    hyp_len = len(prediction)
    ref_len = min((abs(len(r) - hyp_len), len(r)) for r in refs)[1]
    log_sum, order, smooth = 0.0, 0, 1.0
    for n in range(1, max_order + 1):
        hyp_counts = _ngrams(prediction, n)
        total = sum(hyp_counts.values())
        if total == 0:
            break
        max_ref: Counter[tuple[str, ...]] = Counter()
        for r in refs:
            max_ref |= _ngrams(r, n)
        correct = sum(min(c, max_ref[g]) for g, c in hyp_counts.items())
        if correct == 0:
            if n == 1:
                return 0.0
            smooth *= 2
            precision = 1.0 / (smooth * total)
        else:
            precision = correct / total
        log_sum += math.log(precision)
        order = n
    bp = 1.0 if hyp_len >= ref_len else math.exp(1 - ref_len / hyp_len)
    return bp * math.exp(log_sum / order)


class Bleu(_AnswerMetric):
    """Sentence BLEU-4 with exp smoothing, all gold answers as references (not a max)."""

    name = "bleu"

    def score(self, ctx: ScoreContext) -> float | None:
        lang = _language(ctx)
        refs = [t for gold in ctx.question.answers if (t := tokens(gold, lang))]
        if not refs:
            return None
        return sentence_bleu(tokens(ctx.prediction, lang), refs)


# A letter standing alone, possibly bracketed or followed by "." ")" ":" — "B", "(B)", "B.".
_BARE_LETTER = re.compile(r"^\s*[\(\[（【]?\s*([A-Za-z])\s*[\)\]）】]?\s*[.:：)、]?\s*$")
# "Answer: B", "The answer is (B).", "答案：B", "选项B" … A lower-case letter counts only
# before punctuation or the end ("answer: b."), so "the answer is a dog" is not "A".
_ANSWER_LETTER = re.compile(
    r"(?i:answer|choice|option)\s*(?i:is)?\s*[:：]?\s*|(?:答案|选项|选择)\s*(?:是|为|应为)?\s*[:：]?\s*"
)
_LETTER_AFTER = re.compile(r"[\(\[（【]?\s*(?:([A-Z])(?![A-Za-z])|([a-z])(?=\s*(?:$|[.)\]）】:：,，、。])))")
# A choice letter opening a longer reply: "B. 36 years old", "(B) 36", "b) …".
_LEADING_LETTER = re.compile(r"^\s*[\(\[（【]?\s*([A-Za-z])\s*[\)\]）】.:：、]")


def _letters(prediction: str) -> Iterable[str]:
    """Candidate choice letters in order of trust: bare letter, "Answer: X", leading "X."."""
    if m := _BARE_LETTER.match(prediction):
        yield m.group(1)
    for m in _ANSWER_LETTER.finditer(prediction):
        if after := _LETTER_AFTER.match(prediction, m.end()):
            yield after.group(1) or after.group(2)
    if m := _LEADING_LETTER.match(prediction):
        yield m.group(1)


def resolve_choice(prediction: str | None, choices: Mapping[str, str], language: str = "en") -> str | None:
    """The choice letter a prediction stands for, or None when it cannot be told.

    In order: a bare letter ("B", "B.", "(B)"); "Answer: B" and its variants; a letter
    opening the reply ("B. 36 years old"); text equal to one choice after
    normalisation; otherwise the choice whose text has the highest token F1 with the
    prediction, when that maximum is positive and unique. Letters are matched
    case-insensitively against the choice keys.
    """
    if not prediction or not choices:
        return None
    keys = {k.upper(): k for k in choices}
    for letter in _letters(prediction):
        if letter.upper() in keys:
            return keys[letter.upper()]
    lang = resolve_language(language, *choices.values())
    norm = normalize_answer(prediction, lang)
    normed = {k: normalize_answer(text, lang) for k, text in choices.items()}
    exact = [k for k, text in normed.items() if text == norm]
    if len(exact) == 1:
        return exact[0]
    pred_tokens = norm.split()  # what tokens() returns, without normalising again
    f1 = {k: token_f1(pred_tokens, text.split()) for k, text in normed.items()}
    best = max(f1.values())
    winners = [k for k, v in f1.items() if v == best]
    return winners[0] if best > 0 and len(winners) == 1 else None


class Accuracy(_Metric):
    """Multiple choice: 1.0 when the prediction resolves to the correct choice letter."""

    name = "accuracy"
    version = "1"

    def score(self, ctx: ScoreContext) -> float | None:
        q = ctx.question
        if not q.choices or q.correct_choice is None:
            return None
        if self.config.choices == "exact":  # the official code compares the letter itself (MemSim)
            return float(ctx.prediction == q.correct_choice)
        return float(resolve_choice(ctx.prediction, q.choices, ctx.language) == q.correct_choice)


class RecallAtK(_Metric):
    """Share of the question's target message ids among the message ids of the first K items.

    MemSim's Recall@5 (seed 000, §5.1): "the percentage of messages in retrieval target
    successfully retrieved within the top-5 relevant messages"; K is ``--top-k``.
    """

    #: 2: not applicable (None) when items exist but none carries message ids; 3: nor when the
    #: agent says it keeps no such link (:func:`keeps_no_sources`), even for an empty recall
    version = "3"
    reads_answer = False

    def __init__(self, config: MetricConfig | None = None) -> None:
        super().__init__(config)
        self.k = self.config.top_k
        self.name = f"recall@{self.k}"

    def score(self, ctx: ScoreContext) -> float | None:
        targets = set(ctx.question.targets)
        items = ctx.items[: self.k]
        if not targets or keeps_no_sources(ctx) or (items and not any(item.message_ids for item in items)):
            return None  # no targets, or a system that cannot say where its items came from
        found = {mid for item in items for mid in item.message_ids}
        return len(targets & found) / len(targets)


def keeps_no_sources(ctx: ScoreContext) -> bool:
    """Whether the agent says its items carry no link to the messages they came from: its
    ``Recall.meta["message_ids"]`` is the reason (a string) instead of ids (Mem0's fact
    extraction). Its recall of messages is then not applicable, an empty recall included:
    one read as 0.0 and put a Mem0 run's recall@5 at 0.000 (n=1) beside its None."""
    return isinstance((ctx.recall_meta or {}).get("message_ids"), str)


def session_of(message_id: str) -> str | None:
    """The session a message id names: its part before the last ":" ("D3:5" -> "D3",
    LoCoMo's dia_id), or None for an id without one."""
    session, sep, _ = message_id.rpartition(":")
    return session if sep and session else None


class SessionHitAtK(_Metric):
    """1.0 when any session of the question's targets is among the first K distinct sessions
    of the recalled items, in recall order; else 0.0.

    The session-level hit rate memory products advertise for LoCoMo (an item "finds" the
    session it came from). A message id names its session before its last ":" (LoCoMo's
    "D3:5" is in session "D3"); questions whose targets name no session, and recalls
    whose items carry no message ids, are not applicable.
    """

    #: 2: not applicable where the agent keeps no link to the messages (:func:`keeps_no_sources`)
    version = "2"

    def __init__(self, config: MetricConfig | None = None) -> None:
        super().__init__(config)
        self.k = self.config.top_k
        self.name = f"session_hit@{self.k}"

    reads_answer = False

    def score(self, ctx: ScoreContext) -> float | None:
        gold = {s for t in ctx.question.targets if (s := session_of(t))}
        if not gold or keeps_no_sources(ctx) or (ctx.items and not any(item.message_ids for item in ctx.items)):
            return None
        seen: dict[str, None] = {}
        for item in ctx.items:
            for mid in item.message_ids:
                if (s := session_of(mid)) is not None:
                    seen.setdefault(s)
            if len(seen) >= self.k:
                break
        return float(bool(gold & set(list(seen)[: self.k])))
