"""MemoryAgentBench's own metrics: EventQA and RULER recall, ReDial recall@K.

Each follows ``utils/eval_other_utils.py`` @ 455306d (github HUST-AI-HYZ/MemoryAgentBench);
the question-answering metrics (``substring_exact_match``, ``exact_match``, ``f1``) are
memplug's ``subem``, ``em`` and ``f1``, which follow the same SQuAD rules (see
docs/datasets/mab.md for the two corner cases where they differ).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from memplug.errors import MemplugError
from memplug.metrics import _Metric
from memplug.protocols import ScoreContext


def _reply(ctx: ScoreContext) -> str:
    """The raw reply when the runner gave it, else the prediction."""
    return ctx.reply if ctx.reply is not None else ctx.prediction


def contained_share(reply: str, answers: Sequence[str]) -> float:
    """Share of the answer elements found (lower-cased) in the reply."""
    low = reply.lower()
    return sum(a.lower() in low for a in answers) / len(answers)


class EventQARecall(_Metric):
    """``_process_eventqa_dataset``: 1 when every answer element occurs in the raw reply
    (lower-cased), else 0 (``int(recall_score == 1)``)."""

    name = "eventqa_recall"

    def score(self, ctx: ScoreContext) -> float | None:
        answers = ctx.question.answers
        return float(contained_share(_reply(ctx), answers) == 1) if answers else None


class RulerRecall(_Metric):
    """``_process_ruler_memory_merging_dataset`` for ``ruler_niah``: the share of the answer
    values occurring in the raw reply (lower-cased)."""

    name = "ruler_recall"

    def score(self, ctx: ScoreContext) -> float | None:
        answers = ctx.question.answers
        return contained_share(_reply(ctx), answers) if answers else None


# --- ReDial ------------------------------------------------------------------------------

_PARENS = re.compile(r"\([^()]*\)")
_NUMBERING = re.compile(r"^(?:\d+[\.\)、]?\s*[\-\—\–]?\s*)?")
_SPACE = re.compile(r"\s+")


def clean_text_elements(text: str) -> str:
    """``clean_text_elements``: parentheses, leading numbering and surplus white space removed."""
    text = _PARENS.sub("", text)
    text = _NUMBERING.sub("", text)
    return _SPACE.sub(" ", text).strip()


def extract_movie_name(text: str) -> str:
    """``extract_movie_name``: an entity2id.json key (a DBpedia URI) as a title."""
    name = text.split("/")[-1].replace("_", " ").replace("-", " ").replace(">", " ")
    return _SPACE.sub(" ", _PARENS.sub("", name)).strip()


def recommendations(reply: str) -> list[str]:
    """``extract_recommendation_list``'s items before matching: the text after the first
    "1." split on lines (the whole reply split on commas and lines when there is no "1.")."""
    if "1." in reply:
        listed = reply.split("1.", 1)[1]
    else:
        listed = reply.replace(",", "\n")
    return [clean_text_elements(item.strip()) for item in listed.split("\n")]


class Titles:
    """The release's entity2id.json as ``_process_recsys_dataset`` reads it: id -> title, and
    the nearest title to a recommended one by edit distance (lower-cased)."""

    def __init__(self, path: Path) -> None:
        try:
            name_to_id = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise MemplugError(f"{path}: cannot read the ReDial entity map ({exc})") from None
        if not isinstance(name_to_id, dict):
            raise MemplugError(f"{path}: the ReDial entity map must be a JSON object of name -> id")
        self.title_of = {int(i): extract_movie_name(name) for name, i in name_to_id.items()}
        # list(set(...)) there; sorted here so that ties break the same way on every run
        self.candidates = sorted(set(self.title_of.values()))
        lowered = [c.lower() for c in self.candidates]
        width = max((len(c) for c in lowered), default=0)
        self.codes = np.zeros((len(lowered), width), dtype=np.int32)
        for i, c in enumerate(lowered):
            self.codes[i, : len(c)] = [ord(ch) for ch in c]
        self.lengths = np.array([len(c) for c in lowered], dtype=np.int64)

    @functools.lru_cache(maxsize=4096)
    def nearest(self, title: str) -> str:
        """The candidate with the least Levenshtein distance to ``title`` (lower-cased), the
        first in sorted order among equals: every candidate's dynamic-programming table is
        filled at once, one row per character of ``title``."""
        target = title.lower()
        n, width = self.codes.shape
        prev = np.tile(np.arange(width + 1, dtype=np.int64), (n, 1))
        for i, ch in enumerate(target, start=1):
            cur = np.empty_like(prev)
            cur[:, 0] = i
            substitute = prev[:, :-1] + (self.codes != ord(ch))
            best = np.minimum(prev[:, 1:] + 1, substitute)
            for j in range(1, width + 1):
                cur[:, j] = np.minimum(best[:, j - 1], cur[:, j - 1] + 1)
            prev = cur
        distances = prev[np.arange(n), self.lengths]
        return self.candidates[int(np.argmin(distances))]


@functools.cache
def titles(path: Path) -> Titles:
    return Titles(path)


class RecsysRecall(_Metric):
    """``_process_recsys_dataset``: the share of the gold movies (entity ids mapped to titles)
    among the first K recommended titles, each matched to its nearest title of the entity map.
    The map's path is the question's ``meta["entity_map"]`` (the dataset's ``-o entity_map``)."""

    name = "recsys_recall@5"
    k = 5

    def score(self, ctx: ScoreContext) -> float | None:
        path = ctx.question.meta.get("entity_map")
        if not path or not ctx.question.answers:
            return None
        table = titles(Path(str(path)))
        try:
            gold = [table.title_of[int(a.strip())] for a in ctx.question.answers]
        except (KeyError, ValueError) as exc:
            raise MemplugError(f"question {ctx.question.id}: gold movie id {exc} is not in {path}") from None
        predicted = [table.nearest(item) for item in recommendations(_reply(ctx))][: self.k]
        return sum(movie in predicted for movie in gold) / len(gold)


class RecsysRecall1(RecsysRecall):
    name = "recsys_recall@1"
    k = 1


class RecsysRecall10(RecsysRecall):
    name = "recsys_recall@10"
    k = 10
