"""MemSim's answer protocol, for MemDaily and memplug's MemSim generator.

Copied from MemSim's benchmark (github nuster1128/MemSim at db9d5d5):

- ``benchmark/methods/FullMemAgent.py`` ``response_answer`` (the same text in
  ``RetMemAgent.py`` and the other agents): the user messages numbered ``[0]``, ``[1]``
  ..., the question, the choices as ``A: text``, the current time (the question's),
  then the instruction to answer with the letter only;
- ``benchmark/utils.py`` ``remove_space_and_ent``: spaces and line breaks are removed
  from the reply, and ``benchmark/TimeFlow.py`` ``cal_metrics`` scores
  ``answer == ground_truth``: the letter itself, nothing lenient;
- ``benchmark/TimeFlow.py`` ``run``: each message is observed whole, one at a time,
  as ``rawdata/infuse_noise.py`` wrote it: ``'%s (消息地点 %s, 消息时间 %s)'``
  (the loaders' ``stamp`` option);
- ``response_retri``: the top 5 memories (``topk = 5``) for recall.

The Chinese text is MemSim's own; the English one is memplug's translation (for the
English trajectories of its generator), recorded as a variation. Deviations are
dataset options (``-o parse=lenient``, ``-o unit=tokens``), recorded in run.json.
"""

from __future__ import annotations

from typing import Any, Mapping

import attrs

from memplug.answering import AnswerProtocol
from memplug.models import DatasetInfo
from memplug.options import Option

SOURCE = (
    "github nuster1128/MemSim @ db9d5d5: benchmark/methods/FullMemAgent.py response_answer, "
    "benchmark/utils.py remove_space_and_ent, benchmark/TimeFlow.py cal_metrics"
)

# FullMemAgent.response_answer, verbatim (memories and choices each end in "\n" there)
ANSWER_PROMPT_ZH = (
    "[用户消息] \n{memory}"
    "[单选题] {question} \n{choices}"
    "当前时间是 {time}\n"
    "请根据[用户消息]，给出[单选题]的正确答案。\n"
    "只输出答案所对应的选项，不要输出解释或其他任何的内容。\n"
    "输出样例: A"
)
ANSWER_PROMPT_EN = (
    "[User Messages] \n{memory}"
    "[Single-Choice Question] {question} \n{choices}"
    "The current time is {time}\n"
    "Based on the [User Messages], give the correct answer to the [Single-Choice Question].\n"
    "Output only the letter of the correct choice, without any explanation or other content.\n"
    "Output example: A"
)

PROTOCOL = AnswerProtocol(
    name="memsim",
    version="1",
    source=SOURCE,
    user=ANSWER_PROMPT_ZH,
    memory_item="[{n}] {text}\n",
    memory_start=0,
    memory_join="",
    choice_item="{letter}: {text}\n",
    choice_join="",
    parse="memsim",
    choices="exact",
    unit="message",
    top_k=5,
)

#: the deviations a user may ask for, as dataset options
OPTIONS = (
    Option(
        "parse",
        str,
        "exact",
        "exact: the reply, spaces and line breaks removed, must be the letter (MemSim's "
        "scoring); lenient: 'B.', '(B)', '答案：B' or the choice's text count too",
        choices=("exact", "lenient"),
    ),
    Option(
        "unit",
        str,
        "message",
        "memory unit fed to the agent: message (MemSim's: each message whole) or "
        "tokens (chunks of --chunk-size, default 64)",
        choices=("message", "tokens"),
    ),
)


def protocol(language: str, values: Mapping[str, Any]) -> AnswerProtocol:
    """MemSim's protocol in ``language`` with the deviations ``values`` ask for."""
    out = PROTOCOL
    if language != "zh":
        out = out.vary("english translation of the Chinese prompt", user=ANSWER_PROMPT_EN)
    if values.get("parse") == "lenient":
        out = out.vary("parse=lenient", parse="strip", choices="lenient")
    if values.get("unit") == "tokens":
        out = out.vary("unit=tokens", unit=None)
    return out


def answer_prompt(language: str) -> tuple[str, str]:
    """(user prompt template, source) for ``language`` ("zh" or "en")."""
    return (ANSWER_PROMPT_ZH, SOURCE) if language == "zh" else (ANSWER_PROMPT_EN, SOURCE + "; English translation")


def info_for_language(info: DatasetInfo, language: str, values: Mapping[str, Any] | None = None) -> DatasetInfo:
    """``info`` in ``language``, with that language's protocol and the deviations in ``values``."""
    prompt, source = answer_prompt(language)
    return attrs.evolve(
        info,
        language=language,
        answer_prompt=prompt,
        answer_prompt_source=source,
        protocol=protocol(language, values or {}),
    )
