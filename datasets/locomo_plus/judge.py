"""LoCoMo-Plus's LLM judge (``locomo-plus``): its per-category prompts verbatim, filled and read as its code does.

Source: https://github.com/xjtuleeyf/Locomo-Plus, commit 059f4e3d38f7f1f96765e8e2cb7de3097551bffb:

- ``evaluation_framework/task_eval/prompt.py`` ``PROMPT_TEMPLATES``: one prompt per category
  (multi-hop, single-hop, temporal, common-sense, adversarial, Cognitive) and ``default``,
  copied below as they are (a test compares them with the source when it is at hand and
  pins their sha256);
- ``evaluation_framework/task_eval/llm_as_judge.py``: ``get_judge_prompt`` picks the
  category's template (else ``default``) and fills ``gold``, ``pred`` and ``evidence``;
  ``_judge_one_record`` sends it through ``utils.call_model`` without a category, so
  ``call_llm`` puts ``CONV_START_PROMPT.format("A", "B")`` before the stripped prompt
  (``_prepend_conv_prefix``): the judge is told "Below is a conversation between two
  people: A and B..." before its instructions. memplug sends that same text (the pinned
  templates are prefix + stripped template; stripping before or after filling is the same,
  since every template starts and ends with fixed words), at ``temperature=0`` and
  ``max_tokens=512`` (the script's defaults), plus memplug's fixed seed;
- the reply is read by ``_parse_judge_response`` and ``label_to_score`` (correct 1,
  partial 0.5, anything else 0): :func:`memplug.judge.read_locomo_plus`.

The cognitive prompt sees only the evidence (the cue dialogue) and the prediction; the
adversarial one only the prediction; the others the gold answer, prediction and evidence.
"""

from __future__ import annotations

from memplug.judge import JudgePrompt, JudgeSet
from memplug.models import Question

COMMIT = "059f4e3d38f7f1f96765e8e2cb7de3097551bffb"
SOURCE = (
    f"github xjtuleeyf/Locomo-Plus@{COMMIT} evaluation_framework/task_eval/prompt.py PROMPT_TEMPLATES, "
    "llm_as_judge.py (get_judge_prompt, _parse_judge_response, label_to_score), utils.py _prepend_conv_prefix"
)

#: utils.py (and prompt.py) CONV_START_PROMPT, which call_llm puts before every judge prompt
CONV_START_PROMPT = (
    "Below is a conversation between two people: {} and {}. "
    "The conversation takes place over multiple days, "
    "and the date of each conversation is written at the beginning of the conversation.\n\n"
)

#: prompt.py PROMPT_TEMPLATES, verbatim
PROMPT_TEMPLATES = {
    "multi-hop": """
You are a Fact-Checking Judge.
Your task: Compare the model's prediction with the reference answer (multi-hop fact QA).

Labels:
- "correct": The answer matches the reference entities (names, places, times) exactly.
- "partial": The answer misses some details or contains minor inaccuracies but gets the main entity right.
- "wrong": The answer is factually incorrect or hallucinates details not in the reference.

Reference Answer:
{gold}

Model Prediction:
{pred}

Relevant Evidence:
{evidence}

Return your judgment strictly in JSON format:
{{"label": "correct"|"partial"|"wrong", "reason": "<short explanation>"}}
""",
    "single-hop": """
You are a Fact-Checking Judge.
Your task: Compare the model's prediction with the reference answer (single-hop fact QA).

Labels:
- "correct": The answer matches the reference entities exactly.
- "partial": The answer misses some details but gets the main entity right.
- "wrong": The answer is factually incorrect or hallucinates details not in the reference.

Reference Answer:
{gold}

Model Prediction:
{pred}

Relevant Evidence:
{evidence}

Return your judgment strictly in JSON format:
{{"label": "correct"|"partial"|"wrong", "reason": "<short explanation>"}}
""",
    "temporal": """
You are a Temporal Logic Judge.
Your task: Check the calculation, duration, or sequence of events.

Labels:
- "correct": The calculated time, duration, or date matches the reference exactly (semantic equivalents are allowed).
- "wrong": The calculation is incorrect, the sequence is reversed, or the specific time is wrong.

Reference Answer:
{gold}

Model Prediction:
{pred}

Relevant Evidence:
{evidence}

Return your judgment strictly in JSON format:
{{"label": "correct"|"wrong", "reason": "<short explanation>"}}
""",
    "common-sense": """
You are a Knowledge Logic Judge.
Your task: Assess if the prediction applies correct commonsense/world knowledge consistent with the reference.

Labels:
- "correct": The logic and inference are sound and match the reference conclusion.
- "partial": The reasoning is mostly correct but the final conclusion is vague or slightly off.
- "wrong": The reasoning contradicts commonsense or the reference.

Reference Answer:
{gold}

Model Prediction:
{pred}

Relevant Evidence:
{evidence}

Return your judgment strictly in JSON format:
{{"label": "correct"|"partial"|"wrong", "reason": "<short explanation>"}}
""",
    "adversarial": """
You are a Skeptical Judge evaluating robustness.
The question is inherently misleading (e.g., asks about something not in the conversation).
Your task: Judge whether the model's answer conveys that "this was not mentioned in the conversation" (or equivalent refusal).

Labels:
- "correct": The prediction clearly conveys that the information was not mentioned / cannot be answered from the conversation. Score it.
- "wrong": The prediction does NOT convey that meaning—e.g., it gives a concrete answer or does not refuse. Do not score.


Model Prediction:
{pred}

Return your judgment strictly in JSON format:
{{"label": "correct"|"wrong", "reason": "<short explanation>"}}
""",
    "Cognitive": """
You are a Memory Awareness Judge.
Your task: Judge whether the Model Prediction considers or is linked to the Evidence. If there is a clear connection, the answer is correct (score 1); if not, it is wrong (no score).

Labels:
- "correct": The prediction explicitly or implicitly reflects/uses the evidence (memory or constraint). Give 1 point.
- "wrong": The prediction does not show such a link to the evidence. No point.

Memory/Evidence:
{evidence}

Model Prediction:
{pred}

Return your judgment strictly in JSON format:
{{"label": "correct"|"wrong", "reason": "<Does the prediction relate to the evidence?>"}}
""",
    "default": """
You are an expert evaluator.
Your task: Compare the prediction with the reference.

Labels:
- "correct": Factually consistent with the reference.
- "partial": Contains correct info but is incomplete.
- "wrong": Factually incorrect.

Reference Answer:
{gold}

Model Prediction:
{pred}

Relevant Evidence:
{evidence}

Return your judgment strictly in JSON format:
{{"label": "correct"|"partial"|"wrong", "reason": "<short explanation>"}}
""",
}


#: call_model(prompt) without a category: _prepend_conv_prefix(prompt) with the default names A and B
JUDGE_PREFIX = CONV_START_PROMPT.format("A", "B")


def sent(template: str) -> str:
    """The template as the judge model gets it: the prefix, then the stripped template."""
    return JUDGE_PREFIX + template.strip()


def _choose(question: Question) -> str:
    """``PROMPT_TEMPLATES.get(category) or PROMPT_TEMPLATES["default"]``."""
    category = str(question.meta.get("locomo_plus_category", ""))
    return category if category in PROMPT_TEMPLATES else "default"


def _gold(question: Question) -> str:
    """The record's ``ground_truth`` (set by the loader); another dataset's gold answers joined by " | "."""
    if "ground_truth" in question.meta:
        return str(question.meta["ground_truth"])
    return " | ".join(question.answers)


def _evidence(question: Question) -> str:
    """The record's ``evidence``: the cue dialogue (cognitive) or the evidence turns (LoCoMo)."""
    return str(question.meta.get("evidence_text", ""))


LOCOMO_PLUS = JudgeSet(
    name="locomo-plus",
    version="1",
    source=SOURCE,
    prompts=tuple(
        JudgePrompt(
            name=name,
            version="1",
            source=SOURCE,
            template=sent(template),
            fields=("label",),
            style="locomo-plus",
            reads="locomo-plus",
        )
        for name, template in PROMPT_TEMPLATES.items()
    ),
    choose=_choose,
    gold=_gold,
    evidence=_evidence,
    params={"max_tokens": 512},
    description="LoCoMo-Plus's official judge (llm_as_judge.py): a prompt per category, cognitive by the cue; "
    "correct 1, partial 0.5, wrong 0",
)
