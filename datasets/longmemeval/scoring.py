"""memplug's offline abstention rule (the official score is the LLM judge's abstention prompt)."""

from __future__ import annotations

import re

from memplug.protocols import MetricConfig, ScoreContext

#: what an answer that declines says; LoCoMo's official category-5 rule accepts the first two
DECLINE = re.compile(
    r"not mentioned|no information|not (?:been )?(?:provided|available|specified|stated|given|discussed)|"
    r"(?:did|do|does|have|has)(?: not|n't) (?:mention|say|tell|provide|share|specify)|never mentioned|"
    r"(?:don't|do not|cannot|can't|can not) (?:know|tell|find|determine|answer|recall)|"
    r"no (?:record|mention|data|details?)|not enough information|insufficient information|unanswerable|"
    r"unable to (?:find|determine|answer)|not (?:in|part of) (?:the|our|my) (?:chat|conversation|history|memory)",
    re.IGNORECASE,
)


def declines(reply: str) -> bool:
    """Whether the reply says the information is not there."""
    return bool(DECLINE.search(reply or ""))


class Abstention:
    """1 when an abstention question's reply declines to answer, else 0; not applicable to
    other questions. Offline stand-in for the judge's abstention prompt (LongMemEval's
    evaluate_qa.py), which is the official score."""

    name = "abstention"
    version = "1"
    reads_answer = True

    def __init__(self, config: MetricConfig | None = None) -> None:
        self.config = config or MetricConfig()

    def score(self, ctx: ScoreContext) -> float | None:
        if not ctx.question.meta.get("abstention"):
            return None
        return float(declines(ctx.prediction))
