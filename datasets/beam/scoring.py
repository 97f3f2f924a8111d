"""BEAM's official scoring, as ``src/evaluation/compute_metrics.py`` computes it.

github mohammadtavakoli78/BEAM @ b2a3ee8 (:data:`COMMIT`):

- a rubric question (nine abilities): the judge model scores each rubric item with
  ``unified_llm_judge_base_prompt`` (0, 0.5 or 1 in a JSON reply); the question's score is
  ``sum(int(score)) / len(rubric)`` (:func:`rubric_mean`). ``int()`` truncates, so the
  official code counts a partial 0.5 as 0 in these nine abilities (only event ordering's
  own rubric mean uses ``float``): memplug keeps that.
- event ordering: the reply is split on "\\n"; each line is matched to the first unmatched
  reference event (the rubric) that the judge model calls the same event
  (``align_with_llm``/``llm_equivalence``); precision, recall and F1 of the matched events,
  Kendall's tau-b between the reference order and the reply's order over the union of
  both lists (an event missing from a list ranked last, tied), normalised to [0, 1];
  ``final_score = tau_norm * F1`` (:func:`event_ordering_score`). ``report_results.py``'s
  table averages ``tau_norm`` instead: metric ``beam_tau``.

scipy is not a memplug dependency: :func:`kendall_tau_b` is the tau-b formula that
``scipy.stats.kendalltau(variant="b")`` computes (the conformance test holds figures that
scipy and the official ``event_ordering_score`` printed on fixed lists).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Awaitable, Callable, Sequence

from memplug.protocols import MetricConfig, ScoreContext

COMMIT = "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"
SOURCE = f"github mohammadtavakoli78/BEAM@{COMMIT} src/evaluation/compute_metrics.py"

#: an async "are these the same event?" (reference event, reply line)
Equivalent = Callable[[str, str], Awaitable[bool]]


def parse_json_response(response: str) -> Any:
    """compute_metrics.py ``parse_json_response``: a ```json fence's inside, else the whole
    reply, else the first (non-greedy) {...} or [...] in it; ValueError when none parses."""
    response = response.strip()
    if response.startswith("```"):
        match = re.search(r"```(?:json)?\s*(\[.*\]|\{.*\})\s*```", response, re.DOTALL)
        if match:
            response = match.group(1).strip()
    try:
        return json.loads(response)
    except json.JSONDecodeError:
        pass
    match = re.search(r"(\{.*?\}|\[.*?\])", response, re.DOTALL)
    if match:
        try:
            return json.loads(match.group(1))
        except ValueError as exc:
            raise ValueError(f"Found possible JSON but failed to parse it: {exc}") from None
    raise ValueError("No valid JSON found in response.")


def rubric_item_score(reply: str) -> int | None:
    """``int(parse_json_response(reply)['score'])``; None where the official script would fall
    back to json_repair or crash (memplug leaves such a question unscored, logged)."""
    try:
        parsed = parse_json_response(reply)
        return int(parsed["score"])
    except (ValueError, TypeError, KeyError, IndexError):
        return None


def rubric_mean(scores: Sequence[int]) -> float:
    return sum(scores) / len(scores)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two rankings with ties; None where scipy returns NaN (fewer than
    two items, or a constant ranking)."""
    concordant = discordant = ties_x = ties_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue  # tied in both: counted in neither denominator term's pairs
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator else None


async def align(reference: Sequence[str], system: Sequence[str], equivalent: Equivalent) -> list[str]:
    """``align_with_llm``: each system item becomes the first unused reference item it is
    equivalent to (asked in reference order), or stays as it is."""
    used: set[int] = set()
    out: list[str] = []
    for s in system:
        matched = None
        for index, r in enumerate(reference):
            if index not in used and await equivalent(r, s):
                matched = index
                break
        if matched is None:
            out.append(s)
        else:
            out.append(reference[matched])
            used.add(matched)
    return out


def event_ordering_score(reference: Sequence[str], system_canon: Sequence[str]) -> dict[str, float | None]:
    """``event_ordering_score`` after alignment: precision, recall, f1, tau_norm and
    final_score (tau_norm x f1); tau_norm and final_score are None where tau-b is NaN."""
    reference, system_canon = list(reference), list(system_canon)
    tp = len(set(reference) & set(system_canon))
    fp = len([x for x in system_canon if x not in reference])
    fn = len([x for x in reference if x not in system_canon])
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    union = list(dict.fromkeys(reference + system_canon))
    tie_rank = len(union) + 1

    def to_rank(seq: list[str]) -> list[float]:
        rank = {item: i + 1 for i, item in enumerate(seq)}
        return [float(rank.get(u, tie_rank)) for u in union]

    tau = kendall_tau_b(to_rank(reference), to_rank(system_canon))
    tau_norm = None if tau is None else (tau + 1) / 2
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tau_norm": tau_norm,
        "final_score": None if tau_norm is None else tau_norm * f1,
    }


def system_events(response: str) -> list[str]:
    """``evaluate_event_ordering``: ``llm_response.split("\\n")``, every line, empty ones
    included (the LLM fact extraction it calls first is overwritten by this line, so
    memplug does not make that call)."""
    return response.split("\n")


# -- offline: a recorded variation, never the official score ---------------------------

_STOP = frozenset(
    "a an the and or of to in on for with by at from as is are was were be been my your our their "
    "its it this that these those i you we they he she about into over after before then".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")
#: share of a reference event's content words a reply line must hold to count as that event
LEXICAL_SHARE = 0.5


def _stems(text: str) -> set[str]:
    """Content words cut to five characters (a crude stem: "handling" and "handle" meet)."""
    return {t[:5] for t in _TOKEN.findall(text.lower()) if t not in _STOP}


def lexically_equivalent(reference: str, line: str) -> bool:
    """memplug's offline stand-in for ``llm_equivalence``: the line holds at least half of
    the reference event's content words (first five characters)."""
    ref = _stems(reference)
    return bool(ref) and len(ref & _stems(line)) >= LEXICAL_SHARE * len(ref)


class BeamOrderLexical:
    """Event ordering scored offline: compute_metrics.py's tau_norm x F1 with the judge's
    equivalence replaced by :func:`lexically_equivalent`. A variation, named apart from the
    official ``judge`` score so that no table mixes them; None for other abilities."""

    name = "beam_order_lexical"
    version = "1"
    reads_answer = True

    def __init__(self, config: MetricConfig | None = None) -> None:
        self.config = config or MetricConfig()

    async def score(self, ctx: ScoreContext) -> float | None:
        if ctx.question.category != "event_ordering":
            return None
        rubric = list(ctx.question.meta.get("rubric") or ())

        async def same(r: str, s: str) -> bool:
            return lexically_equivalent(r, s)

        canon = await align(rubric, system_events(ctx.prediction), same)
        return event_ordering_score(rubric, canon)["final_score"]
