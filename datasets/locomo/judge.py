"""The ``locomo-j`` judge: Mem0's lenient LLM judge ("J") for LoCoMo, verbatim.

github mem0ai/mem0 @ aae5989, ``evaluation/metrics/llm_judge.py`` (``ACCURACY_PROMPT``,
``evaluate_llm_judge``): the judge that Mem0's LoCoMo evaluation made the common choice,
called with ``response_format={"type": "json_object"}``, the verdict ``label ==
"CORRECT"``; category 5 (adversarial) is skipped, as Mem0's ``evals.py`` and
``llm_judge.py`` skip it (not applicable here). The directory was later removed from mem0
(commit 9315e30, "retire in-repo evaluation/"); the commit cited is the last one that
changed the judge. LoCoMo's own code has no judge: its score is ``locomo_f1``
(:mod:`memplug.datasets.locomo.scoring`).

The prompt is the official text verbatim: tests/test_judges.py pins its sha256 and, where
the official repository is at hand, compares it with the source. Registered as the judge
``locomo-j`` by :mod:`memplug.datasets.plugin`; :class:`memplug.judge.Judge` gives it to
every LoCoMo question (``meta["locomo_category"]``) that names no judge of its own.
"""

from __future__ import annotations

from memplug.judge import JudgePrompt, JudgeSet
from memplug.models import Question

MEM0_COMMIT = "aae5989e78a6188b3b047c104d960c9ad0927e75"
MEM0_SOURCE = f"github mem0ai/mem0@{MEM0_COMMIT} evaluation/metrics/llm_judge.py ACCURACY_PROMPT"

MEM0_ACCURACY_PROMPT = '\nYour task is to label an answer to a question as ’CORRECT’ or ’WRONG’. You will be given the following data:\n    (1) a question (posed by one user to another user), \n    (2) a ’gold’ (ground truth) answer, \n    (3) a generated answer\nwhich you will score as CORRECT/WRONG.\n\nThe point of the question is to ask about something one user should know about the other user based on their prior conversations.\nThe gold answer will usually be a concise and short answer that includes the referenced topic, for example:\nQuestion: Do you remember what I got the last time I went to Hawaii?\nGold answer: A shell necklace\nThe generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT. \n\nFor time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it\'s the same date.\n\nNow it\'s time for the real question:\nQuestion: {question}\nGold answer: {gold_answer}\nGenerated answer: {generated_answer}\n\nFirst, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. \nDo NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.\n\nJust return the label CORRECT or WRONG in a json format with the key as "label".\n'


def _mem0_choice(question: Question) -> str | None:
    # evals.py / llm_judge.py: "Skip category 5"
    return None if str(question.meta.get("locomo_category")) == "5" else "accuracy"


def _mem0_gold(question: Question) -> str:
    """``str(item["answer"])``: the question's (first) gold answer."""
    if "answer" in question.meta:
        return str(question.meta["answer"])
    return question.answers[0] if question.answers else ""


LOCOMO_J = JudgeSet(
    name="locomo-j",
    version="1",
    source=MEM0_SOURCE,
    prompts=(
        JudgePrompt(
            name="accuracy",
            version="1",
            source=MEM0_SOURCE,
            template=MEM0_ACCURACY_PROMPT,
            fields=("label",),
            style="mem0",
            reads="label",
        ),
    ),
    choose=_mem0_choice,
    gold=_mem0_gold,
    params={"response_format": {"type": "json_object"}},
    description="Mem0's lenient LoCoMo judge (J): 'be generous', same topic counts; category 5 skipped",
)
