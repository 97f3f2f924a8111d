"""PersonaMem's official scoring: ``Evaluation.extract_answer`` of ``inference_standalone_openai.py``.

Source: github bowen-upenn/PersonaMem, file ``inference_standalone_openai.py`` at commit
041d82ac6170d3e62c8f105d16df357dced48d73. The reply is cut after its last
``<final_answer>`` (and a closing ``</final_answer>`` dropped); the option letters it names
are the letters in parentheses, "(c)", or, when there are none, the bare letters a-d
standing as words; the answer is correct when that set is exactly the correct letter.
When it is not, the same test is run on the whole reply, so a reply whose tail is
ambiguous but whose body names one letter still counts. An earlier version of the file
(commit 214bc36cde68bfbcb9b79c22be7a0d9d9df15fc4) matched any letter a-z, parenthesised or
not, which failed every reply longer than a letter; the later one is the official rule.
"""

from __future__ import annotations

import re

from memplug.metrics import _Metric
from memplug.protocols import ScoreContext

COMMIT = "041d82ac6170d3e62c8f105d16df357dced48d73"
SOURCE = f"github bowen-upenn/PersonaMem@{COMMIT} inference_standalone_openai.py Evaluation.extract_answer"

_IN_PARENS = re.compile(r"\(([a-d])\)")
_BARE = re.compile(r"\b([a-d])\b")


def options_named(text: str) -> set[str]:
    """The official ``_extract_only_options``: "(x)" letters, else bare a-d words, lower-cased."""
    text = text.lower()
    in_parens = _IN_PARENS.findall(text)
    return set(in_parens) if in_parens else set(_BARE.findall(text))


def final_answer(reply: str) -> str:
    """The official ``predicted_answer``: the reply after its last <final_answer>, stripped."""
    answer = reply.strip()
    if "<final_answer>" in answer:
        answer = answer.split("<final_answer>")[-1].strip()
    if answer.endswith("</final_answer>"):
        answer = answer[: -len("</final_answer>")].strip()
    return answer


def extract_answer(reply: str, correct_answer: str) -> bool:
    """The official verdict for ``reply`` when the release's ``correct_answer`` is e.g. "(c)"."""
    correct = correct_answer.lower().strip("() ")
    return options_named(final_answer(reply)) == {correct} or options_named(reply) == {correct}


class PersonaMemAccuracy(_Metric):
    """Share of questions whose reply the official extraction marks correct; the official
    tables give it per question type, which memplug's categories are."""

    name = "personamem_accuracy"
    version = "1"
    source = SOURCE

    def score(self, ctx: ScoreContext) -> float | None:
        correct = ctx.question.meta.get("correct_answer")
        if not isinstance(correct, str):
            return None  # not a PersonaMem question
        return float(extract_answer(ctx.prediction, correct))
