"""The InfBench-Sum judge: HELMET's summary F1 as MemoryAgentBench computes it.

``llm_based_eval/summarization_evaluate.py`` @ 455306d (github HUST-AI-HYZ/MemoryAgentBench),
``check_metrics`` for ``infbench`` results: three calls per summary, each prompt filled with
``str.format`` --

- fluency (``fluency_prompt_book``, ``text`` = the reply stripped): 0 or 1;
- recall (``recall_prompt_book``, the release's ``keypoints`` numbered ``"1. ..."`` one per
  line, ``summary`` = the reply stripped): key points present;
- precision (``precision_prompt_book``, ``expert_summary`` = ``d["answer"][0]``, the first
  item of the question's gold as the official pair holds it, ``summary``): supported
  sentences and ``sentence_count``;

each reply read by ``parse_json`` (the last ``{...}`` of the reply, else a fenced json
block); ``recall = found / len(keypoints)``, ``precision = precision / sentence_count``
and ``f1 = fluency * 2 * recall * precision / (recall + precision)`` (0 when both are 0).
A summary with an unreadable reply is left out, as ``check_metrics`` skips it. The calls
are made as ``OpenAIModel("gpt-4o-2024-05-13", temperature=0.1, generation_max_length=4096)``
makes them: ``temperature=0.1, top_p=0.9, max_tokens=4096, seed=42``.
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from memplug.datasets.mab.prompts import FLUENCY_PROMPT_BOOK, PRECISION_PROMPT_BOOK, RECALL_PROMPT_BOOK
from memplug.judge import JudgePrompt, JudgeSet
from memplug.models import Question

if TYPE_CHECKING:
    from memplug.llm import LLM

log = logging.getLogger(__name__)

SOURCE = (
    "github HUST-AI-HYZ/MemoryAgentBench@455306dcabc3842526eb83cd4e225e5d486c5c5d "
    "llm_based_eval/summarization_evaluate.py check_metrics (infbench)"
)
#: the official judge model (summarization_evaluate.py's __main__)
MODEL = "gpt-4o-2024-05-13"
#: OpenAIModel's call: temperature=0.1, its default top_p and seed, generation_max_length=4096
PARAMS = {"temperature": 0.1, "top_p": 0.9, "max_tokens": 4096, "seed": 42}


def parse_json(text: str) -> Any:
    """``parse_json`` of summarization_evaluate.py: the last ``{...}`` that is JSON, else the
    last fenced json block; None when neither reads."""
    matches = re.findall(r"\{.*?\}", text, re.DOTALL)
    if not matches:
        return None
    try:
        return json.loads(matches[-1])
    except json.JSONDecodeError:
        fenced = re.findall(r"(?:```json)(.+)(?:```)", text, re.DOTALL)
        try:
            return json.loads(fenced[-1])
        except (json.JSONDecodeError, IndexError):
            return None


def prompts_for(question: Question, summary: str) -> tuple[str, str, str]:
    """The three prompts ``check_metrics`` sends for a summary of ``question``'s book."""
    keypoints = list(question.meta.get("keypoints") or [])
    answer = question.meta.get("answer")
    expert = answer[0] if isinstance(answer, list) and answer else (question.answers[0] if question.answers else "")
    text = summary.strip()
    return (
        FLUENCY_PROMPT_BOOK.format(text=text),
        RECALL_PROMPT_BOOK.format(
            keypoints="\n".join(f"{i + 1}. {kp}" for i, kp in enumerate(keypoints)), summary=text
        ),
        PRECISION_PROMPT_BOOK.format(expert_summary=expert, summary=text),
    )


def f1_of(fluency: Any, recall: Any, precision: Any, n_keypoints: int) -> float:
    """The official combination of the three parsed replies (KeyError when one lacks its field)."""
    rec = recall["recall"] / n_keypoints if n_keypoints > 0 else 0
    prec = precision["precision"] / precision["sentence_count"] if precision["sentence_count"] > 0 else 0
    return float(fluency["fluency"] * 2 * (rec * prec) / (rec + prec) if rec + prec > 0 else 0)


async def score(llm: LLM, question: Question, prediction: str) -> float | None:
    """The summary F1 of ``prediction``: three judge calls, combined as the official code does."""
    replies = []
    for prompt in prompts_for(question, prediction):
        completion = await llm.acomplete([{"role": "user", "content": prompt}], **PARAMS)
        replies.append(completion.text)
    parsed = [parse_json(r) for r in replies]
    try:
        if any(not isinstance(p, dict) for p in parsed):
            raise KeyError("no JSON object")
        return f1_of(parsed[0], parsed[1], parsed[2], len(question.meta.get("keypoints") or []))
    except (KeyError, TypeError) as exc:
        log.warning(
            "InfBench-Sum judge: unreadable reply for question %s (%s), left out as check_metrics does: %r",
            question.id,
            exc,
            [r[:120] for r in replies],
        )
        return None


def _choose(question: Question) -> str | None:
    # the score is the three calls' (``score``); the prompt named here only marks the question judged
    return "fluency" if question.meta.get("keypoints") is not None else None


def _prompt(name: str, template: str) -> JudgePrompt:
    return JudgePrompt(name=name, version="1", source=SOURCE, template=template, fields=(name,))


INFBENCH_SUM = JudgeSet(
    name="infbench-sum",
    version="1",
    source=SOURCE,
    prompts=(
        _prompt("fluency", FLUENCY_PROMPT_BOOK),
        _prompt("recall", RECALL_PROMPT_BOOK),
        _prompt("precision", PRECISION_PROMPT_BOOK),
    ),
    choose=_choose,
    params=PARAMS,
    scorer=score,
    description="MemoryAgentBench's InfBench-Sum F1: fluency x harmonic mean of key-point recall and precision "
    f"(summarization_evaluate.py, HELMET's prompts), three calls per summary; official model {MODEL}",
)
