"""The ``beam`` judge: BEAM's official LLM judge, one call per rubric item.

github mohammadtavakoli78/BEAM @ b2a3ee8: ``src/prompts.py`` (``unified_llm_judge_base_prompt``,
verbatim) and ``src/evaluation/compute_metrics.py`` (``llm_equivalence``'s system and user
messages, verbatim; the ``evaluate_*`` functions and ``event_ordering_score``). The official
judge model is gpt-4.1-mini at temperature 0 (``src/llm.py``); memplug's ``--judge`` names
the model, the call is at temperature 0 with memplug's fixed seed.

Filled as the official code fills them: the rubric prompt by
``.replace("<rubric_item>", item).replace("<llm_response>", response)`` only. Its
``<question>`` slot is never filled by the official code, so the judge sees the literal
"<question>"; memplug sends the same text (docs/datasets/beam.md, "Differences").

The ``judge`` metric on a BEAM question is this judge's :func:`score`: the rubric mean for
nine abilities, tau_norm x F1 for event ordering (:mod:`memplug.datasets.beam.scoring`).
``beam_tau`` (:class:`BeamTau`) is event ordering's tau_norm, the column
``report_results.py`` averages.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from memplug.datasets.beam.scoring import (
    COMMIT,
    align,
    event_ordering_score,
    rubric_item_score,
    rubric_mean,
    system_events,
)
from memplug.errors import MemplugError
from memplug.judge import JUDGE_SEED, JudgePrompt, JudgeSet
from memplug.models import Question
from memplug.protocols import MetricConfig, ScoreContext

if TYPE_CHECKING:
    from memplug.llm import LLM

log = logging.getLogger(__name__)

SOURCE = f"github mohammadtavakoli78/BEAM@{COMMIT} src/prompts.py, src/evaluation/compute_metrics.py"

#: src/prompts.py ``unified_llm_judge_base_prompt``, verbatim
RUBRIC_PROMPT = """
You are an expert evaluator tasked with judging whether the LLM's response demonstrates compliance with the specified RUBRIC CRITERION.

## EVALUATION INPUTS
- QUESTION (what the user asked): <question>
- RUBRIC CRITERION (what to check): <rubric_item>
- RESPONSE TO EVALUATE: <llm_response>

## EVALUATION RUBRIC:
The rubric defines a specific requirement, constraint, or expected behavior that the LLM response should demonstrate. 

**IMPORTANT**: Pay careful attention to whether the rubric specifies:
- **Positive requirements** (things the response SHOULD include/do)
- **Negative constraints** (things the response SHOULD NOT include/do, often indicated by "no", "not", "avoid", "absent")

## RESPONSIVENESS REQUIREMENT (anchored to the QUESTION)
A compliant response must be **on-topic with respect to the QUESTION** and attempt to answer it.
- If the response does not address the QUESTION, score **0.0** and stop.
- For negative constraints, both must hold: (a) the response is responsive to the QUESTION, and (b) the prohibited element is absent.

## SEMANTIC TOLERANCE RULES:
Judge by meaning, not exact wording.
- Accept **paraphrases** and **synonyms** that preserve intent.
- **Case/punctuation/whitespace** differences must be ignored.
- **Numbers/currencies/dates** may appear in equivalent forms (e.g., “$68,000”, “68k”, “68,000 USD”, or “sixty-eight thousand dollars”). Treat them as equal when numerically equivalent.
- If the rubric expects a number or duration, prefer **normalized comparison** (extract and compare values) over string matching.

## STYLE NEUTRALITY (prevents style contamination):
Ignore tone, politeness, length, and flourish unless the rubric explicitly requires a format/structure (e.g., “itemized list”, “no citations”, “one sentence”).
- Do **not** penalize hedging, voice, or verbosity if content satisfies the rubric.
- Only evaluate format when the rubric **explicitly** mandates it.

## SCORING SCALE:
- **1.0 (Complete Compliance)**: Fully complies with the rubric criterion.
  - Positive: required element present, accurate, properly executed (allowing semantic equivalents).
  - Negative: prohibited element **absent** AND response is **responsive**.
  
- **0.5 (Partial Compliance)**: Partially complies.
  - Positive: element present but minor inaccuracies/incomplete execution.
  - Negative: generally responsive and mostly avoids the prohibited element but with minor/edge violations.
  
- **0.0 (No Compliance)**: Fails to comply.
  - Positive: required element missing or incorrect.
  - Negative: prohibited element present **or** response is non-responsive/evasive even if the element is absent.

## EVALUATION INSTRUCTIONS:
1. **Understand the Requirement**: Determine if the rubric is asking for something to be present (positive) or absent (negative/constraint).

2. **Parse Compound Statements**: If the rubric contains multiple elements connected by "and" or commas, evaluate whether:
   - **All elements** must be present for full compliance (1.0)
   - **Some elements** present indicates partial compliance (0.5)
   - **No elements** present indicates no compliance (0.0)
   
3. **Check Compliance**: 
   - For positive requirements: Look for the presence and quality of the required element
   - For negative constraints: Look for the absence of the prohibited element

4. **Assign Score**: Based on compliance with the specific rubric criterion according to the scoring scale above.

5. **Provide Reasoning**: Explain whether the rubric criterion was satisfied and justify the score.

## OUTPUT FORMAT:
Return your evaluation in JSON format with two fields:

{
   "score": [your score: 1.0, 0.5, or 0.0],
   "reason": "[detailed explanation of whether the rubric criterion was satisfied and why this justified the assigned score]"
}

NOTE: ONLY output the json object, without any explanation before or after that
"""

#: compute_metrics.py ``llm_equivalence``: the system message and the user message (an
#: f-string there; ``str.format`` here, which inserts the snippets as they are)
EQUIVALENCE_SYSTEM = """
            You are a binary classifier.
            If the TWO snippets describe the SAME event/fact, reply **YES**
            Otherwise reply **NO**. No extra words.
            DO NOT provide any exaplanation.
        """
EQUIVALENCE_USER = """First snippet: {first_paragraph} \n
                       Second snippet: {second_paragraph}
                    """


def rubric_prompt(item: str, response: str) -> str:
    return RUBRIC_PROMPT.replace("<rubric_item>", item).replace("<llm_response>", response)


async def _ask(llm: "LLM", messages: list[dict[str, str]]) -> str:
    completion = await llm.acomplete(messages, temperature=0, seed=JUDGE_SEED)
    return completion.text


async def rubric_score(llm: "LLM", question: Question, response: str) -> float | None:
    """compute_metrics.py ``evaluate_<ability>``: every rubric item judged on its own, the
    mean of ``int(score)``; None (logged) when a reply has no readable score."""
    rubric = list(question.meta.get("rubric") or ())
    replies = await asyncio.gather(
        *(_ask(llm, [{"role": "user", "content": rubric_prompt(item, response)}]) for item in rubric)
    )
    scores = [rubric_item_score(r) for r in replies]
    if any(s is None for s in scores):
        bad = next(r for r, s in zip(replies, scores) if s is None)
        log.warning("beam judge reply for question %s has no readable score: %r", question.id, bad[:200])
        return None
    return rubric_mean([s for s in scores if s is not None])


async def equivalent(llm: "LLM", first: str, second: str) -> bool:
    """``llm_equivalence``: the judge says YES ("yes" anywhere in the lower-cased reply)."""
    reply = await _ask(
        llm,
        [
            {"role": "system", "content": EQUIVALENCE_SYSTEM},
            {"role": "user", "content": EQUIVALENCE_USER.format(first_paragraph=first, second_paragraph=second)},
        ],
    )
    return "yes" in reply.lower()


async def event_ordering(llm: "LLM", question: Question, response: str) -> dict[str, float | None]:
    """``evaluate_event_ordering`` (its score part): the reply's lines aligned to the rubric's
    events by the judge, then ``event_ordering_score``."""
    rubric = list(question.meta.get("rubric") or ())

    async def same(r: str, s: str) -> bool:
        return await equivalent(llm, r, s)

    return event_ordering_score(rubric, await align(rubric, system_events(response), same))


async def score(llm: "LLM", question: Question, response: str) -> float | None:
    """The official score of one BEAM question (the ``judge`` metric's value)."""
    if question.category == "event_ordering":
        return (await event_ordering(llm, question, response))["final_score"]
    return await rubric_score(llm, question, response)


def _choose(question: Question) -> str | None:
    if not question.meta.get("rubric"):
        return None
    return "equivalence" if question.category == "event_ordering" else "rubric"


def _gold(question: Question) -> str:
    return "\n".join(question.meta.get("rubric") or ())


BEAM = JudgeSet(
    name="beam",
    version="1",
    source=SOURCE,
    prompts=(
        JudgePrompt(
            name="rubric",
            version="1",
            source=SOURCE + " unified_llm_judge_base_prompt",
            template=RUBRIC_PROMPT,
            fields=("score",),
        ),
        JudgePrompt(
            name="equivalence-system",
            version="1",
            source=SOURCE + " llm_equivalence",
            template=EQUIVALENCE_SYSTEM,
            fields=("yes",),
        ),
        JudgePrompt(
            name="equivalence",
            version="1",
            source=SOURCE + " llm_equivalence",
            template=EQUIVALENCE_USER,
            fields=("yes",),
        ),
    ),
    choose=_choose,
    gold=_gold,
    scorer=score,
    description="BEAM's official judge: each rubric item scored 0/0.5/1 (mean of int()), event ordering "
    "tau_norm x F1 of the events the judge matches",
)


class BeamTau:
    """Event ordering's ``tau_norm`` alone, the column report_results.py averages for the
    paper's tables (the ``judge`` metric reports compute_metrics.py's tau_norm x F1); None
    for other abilities. Its judge calls are those of the ``judge`` metric (cached)."""

    name = "beam_tau"
    version = "1"
    reads_answer = True

    def __init__(self, config: MetricConfig) -> None:
        if config.judge is None:
            raise MemplugError("the beam_tau metric needs a judge model: pass --judge MODEL")
        self.llm: LLM = config.judge

    async def score(self, ctx: ScoreContext) -> float | None:
        if ctx.question.category != "event_ordering" or not ctx.question.meta.get("rubric"):
            return None
        return (await event_ordering(self.llm, ctx.question, ctx.prediction))["tau_norm"]
