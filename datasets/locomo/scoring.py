"""LoCoMo's official QA scoring, as in snap-research/LoCoMo ``task_eval/evaluation.py``.

Source: https://github.com/snap-research/LoCoMo, commit
3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376 (2024-08-12), file ``task_eval/evaluation.py``:
``normalize_answer``, ``f1_score``, ``f1`` and the per-category branch of
``eval_question_answering``. The functions below follow that code line by line:

- answers are normalised by deleting commas, lower-casing, deleting ASCII punctuation,
  deleting the words *a, an, the, and* and squeezing whitespace, then each word is
  stemmed with NLTK's ``PorterStemmer()`` (its default NLTK_EXTENSIONS mode;
  snowballstemmer's "porter" differs on 68 of the 1,656 words of conv-26, e.g. "one" ->
  "on", so NLTK it is);
- token F1 of the stemmed bags (``f1_score``);
- category 1 (multi-hop): both sides split at commas, each gold part scored by its best
  predicted part, averaged over gold parts (``f1``);
- category 3 (open-domain): the gold answer up to its first ";";
- categories 2 and 4: ``f1_score`` of the whole strings;
- category 5 (adversarial): 1 when the lower-cased reply contains "no information
  available" or "not mentioned", else 0.

The official script rounds each question's score to 3 decimals before averaging
(``evaluate_qa.py``); memplug keeps the unrounded score, the value
``eval_question_answering`` itself returns.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from typing import cast

from memplug.metrics import _Metric
from memplug.protocols import ScoreContext

SOURCE = (
    "snap-research/LoCoMo@3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376 task_eval/evaluation.py "
    "(normalize_answer, f1_score, f1, eval_question_answering)"
)

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem.porter import PorterStemmer  # imported on first use: nltk takes 0.3 s to import

    return PorterStemmer()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """NLTK's Porter stem of one word (the official ``ps.stem``)."""
    return cast(str, _stemmer().stem(word))


def normalize_answer(s: str) -> str:
    """The official ``normalize_answer``: commas out, lower case, punctuation out,
    a/an/the/and out, whitespace squeezed."""
    s = s.replace(",", "")
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def f1_score(prediction: str, ground_truth: str) -> float:
    """The official ``f1_score``: token F1 of the Porter-stemmed normalised answers."""
    pred = [stem(w) for w in normalize_answer(prediction).split()]
    gold = [stem(w) for w in normalize_answer(ground_truth).split()]
    left: dict[str, int] = {}
    for token in gold:
        left[token] = left.get(token, 0) + 1
    same = 0
    for token in pred:
        if left.get(token):
            left[token] -= 1
            same += 1
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, ground_truth: str) -> float:
    """The official ``f1`` (multi-answer): mean over comma-separated gold parts of the best
    ``f1_score`` against any comma-separated predicted part."""
    predictions = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in ground_truth.split(",")]
    return sum(max(f1_score(p, g) for p in predictions) for g in golds) / len(golds)


def says_not_available(prediction: str) -> bool:
    """The official category-5 rule: the reply says the information is not there."""
    low = prediction.lower()
    return "no information available" in low or "not mentioned" in low


def locomo_score(prediction: str, answer: str, category: int) -> float:
    """One question's score, by the branch of ``eval_question_answering`` for its category."""
    if category == 3:
        answer = answer.split(";")[0].strip()
    if category in (2, 3, 4):
        return f1_score(prediction, answer)
    if category == 1:
        return multi_answer_f1(prediction, answer)
    if category == 5:
        return float(says_not_available(prediction))
    raise ValueError(f"LoCoMo category {category!r} is not one of 1-5")


def _category(ctx: ScoreContext) -> int | None:
    value = ctx.question.meta.get("locomo_category")
    return int(value) if value is not None else None


class LoCoMoF1(_Metric):
    """LoCoMo's official score for every category, 5 (adversarial) included: its overall
    mean is the official "Overall accuracy" (``evaluation_stats.analyze_aggr_acc``)."""

    name = "locomo_f1"
    version = "1"
    source = SOURCE

    def score(self, ctx: ScoreContext) -> float | None:
        category = _category(ctx)
        if category is None or not ctx.question.answers:
            return None  # not a LoCoMo question
        return locomo_score(ctx.prediction or "", ctx.question.answers[0], category)


class LoCoMoF1NoAdversarial(LoCoMoF1):
    """The same score with category 5 left out (None), so the overall mean covers categories
    1-4, the figure most LoCoMo tables report."""

    name = "locomo_f1_no_adv"

    def score(self, ctx: ScoreContext) -> float | None:
        return None if _category(ctx) == 5 else super().score(ctx)
