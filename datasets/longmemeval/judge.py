"""The ``longmemeval`` judge: LongMemEval's official per-type prompts, verbatim.

github xiaowu0162/LongMemEval @ 9e0b455, ``src/evaluation/evaluate_qa.py``,
``get_anscheck_prompt``: one prompt for single-session-user, single-session-assistant and
multi-session, one each for temporal-reasoning, knowledge-update and
single-session-preference, and the abstention prompt for every question whose id holds
``_abs`` (:func:`memplug.models.is_abstention`). The template gets the question, the
release's ``answer`` and the response (``template.format(question, answer, response)``);
the call is ``temperature=0, max_tokens=10``; the verdict is ``'yes' in reply.lower()``.

Each prompt is the official text verbatim: tests/test_judges.py pins its sha256 and, where
the official repository is at hand, compares it with the source. Registered as the judge
``longmemeval`` by :mod:`memplug.datasets.plugin`; the loader names it in each question's
``meta["judge"]``, as MemoryAgentBench's loader does for its LongMemEval questions.
"""

from __future__ import annotations

from memplug.judge import JudgePrompt, JudgeSet
from memplug.models import Question, is_abstention

LME_COMMIT = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
LME_SOURCE = f"github xiaowu0162/LongMemEval@{LME_COMMIT} src/evaluation/evaluate_qa.py get_anscheck_prompt"

#: single-session-user, single-session-assistant, multi-session
LME_FACT = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
LME_TEMPORAL = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. In addition, do not penalize off-by-one errors for the number of days. If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when the answer is 18), the model's response is still correct. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
LME_KNOWLEDGE_UPDATE = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response contains some previous information along with an updated answer, the response should be considered as correct as long as the updated answer is the required answer.\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
LME_PREFERENCE = "I will give you a question, a rubric for desired personalized response, and a response from a model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. The model does not need to reflect all the points in the rubric. The response is correct as long as it recalls and utilizes the user's personal information correctly.\n\nQuestion: {}\n\nRubric: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
LME_ABSTENTION = "I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes if the model correctly identifies the question as unanswerable. The model could say that the information is incomplete, or some other information is given but the asked information is not.\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: {}\n\nDoes the model correctly identify the question as unanswerable? Answer yes or no only."

#: question_type -> prompt name (evaluate_qa.py's branches)
LME_PROMPT_OF = {
    "single-session-user": "fact",
    "single-session-assistant": "fact",
    "multi-session": "fact",
    "temporal-reasoning": "temporal-reasoning",
    "knowledge-update": "knowledge-update",
    "single-session-preference": "single-session-preference",
}


def _lme(name: str, template: str) -> JudgePrompt:
    return JudgePrompt(
        name=name,
        version="1",
        source=LME_SOURCE,
        template=template,
        fields=("correct",),
        style="positional",
        reads="yes",
    )


def _lme_choice(question: Question) -> str:
    if is_abstention(question):
        return "abstention"
    kind = str(question.meta.get("question_type") or question.category)
    # evaluate_qa.py raises NotImplementedError for another type; a question of another
    # dataset judged by this judge gets its general prompt ("contains the correct answer")
    return LME_PROMPT_OF.get(kind, "fact")


def _lme_gold(question: Question) -> str:
    """The release's ``answer`` as str.format writes it (an integer answer as digits); for
    another dataset's question, its gold answers joined by " | "."""
    if "answer" in question.meta:
        return str(question.meta["answer"])
    return " | ".join(question.answers)


LONGMEMEVAL = JudgeSet(
    name="longmemeval",
    version="1",
    source=LME_SOURCE,
    prompts=(
        _lme("fact", LME_FACT),
        _lme("temporal-reasoning", LME_TEMPORAL),
        _lme("knowledge-update", LME_KNOWLEDGE_UPDATE),
        _lme("single-session-preference", LME_PREFERENCE),
        _lme("abstention", LME_ABSTENTION),
    ),
    choose=_lme_choice,
    gold=_lme_gold,
    params={"max_tokens": 10},
    description="LongMemEval's official per-type judge (evaluate_qa.py), abstention prompt for *_abs questions",
)
