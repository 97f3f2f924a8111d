"""The official judges memplug ships: LongMemEval's per-type prompts and Mem0's LoCoMo judge.

Each prompt is the official text verbatim (tests pin its sha256 and, where the official
repository is at hand, compare it with the source), filled and read as the official code
fills and reads it. memplug's own judge (``memplug``) is in :mod:`memplug.judge`.

- ``longmemeval``: github xiaowu0162/LongMemEval @ 9e0b455,
  ``src/evaluation/evaluate_qa.py``, ``get_anscheck_prompt``: one prompt for
  single-session-user, single-session-assistant and multi-session, one each for
  temporal-reasoning, knowledge-update and single-session-preference, and the abstention
  prompt for every question whose id holds ``_abs``. The template gets the question,
  the release's ``answer`` and the response (``template.format(question, answer,
  response)``); the call is ``temperature=0, max_tokens=10``; the verdict is ``'yes' in
  reply.lower()``.
- ``locomo-j``: github mem0ai/mem0 @ aae5989, ``evaluation/metrics/llm_judge.py``
  (``ACCURACY_PROMPT``, ``evaluate_llm_judge``): the lenient LLM judge ("J") that Mem0's
  LoCoMo evaluation made the common choice, with ``response_format={"type": "json_object"}``
  and ``label == "CORRECT"``; category 5 (adversarial) is skipped, as Mem0's ``evals.py``
  and ``llm_judge.py`` skip it (not applicable here). The directory was later removed from
  mem0 (commit 9315e30, "retire in-repo evaluation/"); the commit cited is the last one that
  changed the judge.
"""

from __future__ import annotations

from memplug.judge import JudgePrompt, JudgeSet
from memplug.models import Question

LME_COMMIT = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
LME_SOURCE = f"github xiaowu0162/LongMemEval@{LME_COMMIT} src/evaluation/evaluate_qa.py get_anscheck_prompt"
MEM0_COMMIT = "aae5989e78a6188b3b047c104d960c9ad0927e75"
MEM0_SOURCE = f"github mem0ai/mem0@{MEM0_COMMIT} evaluation/metrics/llm_judge.py ACCURACY_PROMPT"

#: single-session-user, single-session-assistant, multi-session
LME_FACT = 'I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only.'
LME_TEMPORAL = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. In addition, do not penalize off-by-one errors for the number of days. If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when the answer is 18), the model's response is still correct. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
LME_KNOWLEDGE_UPDATE = 'I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response contains some previous information along with an updated answer, the response should be considered as correct as long as the updated answer is the required answer.\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only.'
LME_PREFERENCE = "I will give you a question, a rubric for desired personalized response, and a response from a model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. The model does not need to reflect all the points in the rubric. The response is correct as long as it recalls and utilizes the user's personal information correctly.\n\nQuestion: {}\n\nRubric: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
LME_ABSTENTION = 'I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes if the model correctly identifies the question as unanswerable. The model could say that the information is incomplete, or some other information is given but the asked information is not.\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: {}\n\nDoes the model correctly identify the question as unanswerable? Answer yes or no only.'

MEM0_ACCURACY_PROMPT = '\nYour task is to label an answer to a question as ’CORRECT’ or ’WRONG’. You will be given the following data:\n    (1) a question (posed by one user to another user), \n    (2) a ’gold’ (ground truth) answer, \n    (3) a generated answer\nwhich you will score as CORRECT/WRONG.\n\nThe point of the question is to ask about something one user should know about the other user based on their prior conversations.\nThe gold answer will usually be a concise and short answer that includes the referenced topic, for example:\nQuestion: Do you remember what I got the last time I went to Hawaii?\nGold answer: A shell necklace\nThe generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT. \n\nFor time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it\'s the same date.\n\nNow it\'s time for the real question:\nQuestion: {question}\nGold answer: {gold_answer}\nGenerated answer: {generated_answer}\n\nFirst, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. \nDo NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.\n\nJust return the label CORRECT or WRONG in a json format with the key as "label".\n'

#: question_type -> prompt name (evaluate_qa.py's branches)
LME_PROMPT_OF = {
    "single-session-user": "fact", "single-session-assistant": "fact", "multi-session": "fact",
    "temporal-reasoning": "temporal-reasoning", "knowledge-update": "knowledge-update",
    "single-session-preference": "single-session-preference",
}


def _lme(name: str, template: str) -> JudgePrompt:
    return JudgePrompt(name=name, version="1", source=LME_SOURCE, template=template, fields=("correct",),
                       style="positional", reads="yes")


def is_abstention(question: Question) -> bool:
    """evaluate_qa.py: ``abstention='_abs' in entry['question_id']``."""
    return bool(question.meta.get("abstention")) or "_abs" in str(question.meta.get("question_id", question.id))


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
    prompts=(_lme("fact", LME_FACT), _lme("temporal-reasoning", LME_TEMPORAL),
             _lme("knowledge-update", LME_KNOWLEDGE_UPDATE), _lme("single-session-preference", LME_PREFERENCE),
             _lme("abstention", LME_ABSTENTION)),
    choose=_lme_choice,
    gold=_lme_gold,
    params={"max_tokens": 10},
    description="LongMemEval's official per-type judge (evaluate_qa.py), abstention prompt for *_abs questions",
)


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
    prompts=(JudgePrompt(name="accuracy", version="1", source=MEM0_SOURCE, template=MEM0_ACCURACY_PROMPT,
                         fields=("label",), style="mem0", reads="label"),),
    choose=_mem0_choice,
    gold=_mem0_gold,
    params={"response_format": {"type": "json_object"}},
    description="Mem0's lenient LoCoMo judge (J): 'be generous', same topic counts; category 5 skipped",
)
