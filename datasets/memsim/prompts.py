"""MemSim's single-choice answer prompt, for the llm reader.

Taken from MemSim's benchmark agents (``benchmark/methods/FullMemAgent.py``,
``response_answer``): the user messages, the question with its lettered choices, then
the instruction to answer with the letter only. The Chinese text is MemSim's own; the
English one is its translation. MemSim also prints the question time ("当前时间是 …")
between the choices and the instruction; the reader's prompt has no slot for it yet.
"""

from __future__ import annotations

import attrs

from memplug.models import DatasetInfo

ANSWER_PROMPT_ZH = (
    "[用户消息] \n{memory}\n"
    "[单选题] {question} \n{choices}\n"
    "请根据[用户消息]，给出[单选题]的正确答案。\n"
    "只输出答案所对应的选项，不要输出解释或其他任何的内容。\n"
    "输出样例: A"
)
ANSWER_PROMPT_EN = (
    "[User Messages] \n{memory}\n"
    "[Single-Choice Question] {question} \n{choices}\n"
    "Based on the [User Messages], give the correct answer to the [Single-Choice Question].\n"
    "Output only the letter of the correct choice, without any explanation or other content.\n"
    "Output example: A"
)
SOURCE = "MemSim (seed 000, §5.1) benchmark/methods/FullMemAgent.py response_answer"
SOURCE_EN = SOURCE + "; English translation of the Chinese prompt"


def answer_prompt(language: str) -> tuple[str, str]:
    """(prompt, source) for ``language`` ("zh" or "en")."""
    return (ANSWER_PROMPT_ZH, SOURCE) if language == "zh" else (ANSWER_PROMPT_EN, SOURCE_EN)


def info_for_language(info: DatasetInfo, language: str) -> DatasetInfo:
    """``info`` in ``language``, with that language's answer prompt."""
    prompt, source = answer_prompt(language)
    return attrs.evolve(info, language=language, answer_prompt=prompt, answer_prompt_source=source)
