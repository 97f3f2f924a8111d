"""LLM-as-judge: the ``judge`` metric, only computed when a run is given ``--judge MODEL``.

The judge is called at temperature 0 with a fixed seed (where the provider honours
one) so that repeated runs and the response cache agree. Each question is judged
with the prompt of its dataset family, chosen by ``question.meta["family"]`` (a
dataset builder sets it, e.g. "perltqa"); a family without a prompt of its own gets
the strict correctness prompt. ``Judge(config, prompt="perltqa")`` fixes one prompt
for every question instead. The prompts, their versions and sources go into run.json
through :meth:`Judge.describe`.

A reply that cannot be read as a verdict scores ``None`` (left out of the mean and
visible in the per-metric counts) rather than 0, and is logged with its text.
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any, Mapping

import attrs

from memplug.errors import MemplugError
from memplug.protocols import MetricConfig, ScoreContext
from memplug.readers import format_choices

if TYPE_CHECKING:
    from memplug.llm import LLM

log = logging.getLogger(__name__)

#: sent with every judge call; providers without seeds ignore it
JUDGE_SEED = 0


@attrs.frozen
class JudgePrompt:
    """A judging prompt: ``{question}``, ``{choices}``, ``{gold}`` and ``{prediction}`` are filled in."""

    name: str
    version: str
    source: str
    template: str
    #: the JSON fields of the verdict, first = the ``judge`` score
    fields: tuple[str, ...]


STRICT = JudgePrompt(
    name="strict",
    version="1",
    source="memplug default: strict binary correctness against the gold answers",
    template=(
        "You are grading an answer to a question about a user's own history (messages, "
        "profile, events).\n"
        "Grade strictly. The answer is correct only if it states the same fact as one of the "
        "gold answers; paraphrases, other units or date formats of the same value, and extra "
        "words that do not change the fact are fine. It is incorrect if it gives another value, "
        "lists several candidates, hedges, says it does not know, or leaves out part of a gold "
        "answer that has several parts.\n\n"
        "Question: {question}\n{choices}"
        "Gold answer(s): {gold}\n"
        "Answer to grade: {prediction}\n\n"
        'Reply with JSON only: {{"correct": true}} or {{"correct": false}}.'
    ),
    fields=("correct",),
)

#: Seed 001 (PerLTQA), §3.5 "Evaluation Metrics", quoted:
PERLTQA_SOURCE_QUOTE = (
    "evaluate memory fusion for the response generation task, we measure the correctness and "
    "coherence of responses with `gpt-3.5-turbo`-based evaluation method (Zhong et al., 2024)"
)

PERLTQA = JudgePrompt(
    name="perltqa",
    version="1",
    source=(
        "seed 001 (PerLTQA) §3.5: correctness and coherence judged by an LLM, after MemoryBank "
        "(Zhong et al., 2024); the paper prints no judging prompt, so the wording is memplug's and "
        "the 0 / 0.5 / 1 scale is MemoryBank's for response correctness and contextual coherence"
    ),
    template=(
        "You are evaluating the response of an AI assistant to a question about a person's "
        "long-term memories (profile, relationships, events, dialogues).\n"
        "Rate two aspects, each 0, 0.5 or 1:\n"
        "- correctness: does the response give the reference answer? 1 = correct, "
        "0.5 = partially correct, 0 = wrong or missing.\n"
        "- coherence: is the response fluent, logically consistent and naturally connected to "
        "the question? 1 = coherent, 0.5 = partially coherent, 0 = incoherent.\n\n"
        "Question: {question}\n{choices}"
        "Reference answer: {gold}\n"
        "Response: {prediction}\n\n"
        'Reply with JSON only: {{"correctness": <0, 0.5 or 1>, "coherence": <0, 0.5 or 1>}}.'
    ),
    fields=("correctness", "coherence"),
)

#: prompts by dataset family (``question.meta["family"]``); "strict" is the default
PROMPTS: Mapping[str, JudgePrompt] = {p.name: p for p in (STRICT, PERLTQA)}
DEFAULT_PROMPT = "strict"

_TRUE = {"true", "yes", "correct", "right", "是", "正确", "对"}
_FALSE = {"false", "no", "incorrect", "wrong", "否", "错误", "错", "不正确", "不对"}
_WORD = re.compile(r"[a-z]+|\d+(?:\.\d+)?|不正确|不对|正确|错误|[是否对错]")


def _as_score(value: Any) -> float | None:
    """A verdict value as a score in [0, 1]: booleans, numbers in [0, 1], yes/no words."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value) if 0 <= value <= 1 else None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return 1.0
        if text in _FALSE:
            return 0.0
        try:
            number = float(text)
        except ValueError:
            return None
        return number if 0 <= number <= 1 else None
    return None


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object embedded in ``text`` (a reply may wrap it in prose or ``` fences)."""
    decoder, out = json.JSONDecoder(), []
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def parse_verdict(reply: str, field: str, text_fallback: bool = True) -> float | None:
    """The score for ``field`` in a judge reply, or None when the reply says nothing readable.

    JSON first (``{"correct": true}``, ``{"correctness": 0.5}``, case-insensitive keys,
    also under "verdict"/"score"/"label"); then plain text: a bare word or number
    ("Yes.", "INCORRECT", "0.5"), or prose whose verdict words all agree ("The answer
    is correct."). Prose with "not" or with both kinds of words is unreadable. A second
    field (coherence) is read from JSON only: ``text_fallback=False``.
    """
    for obj in _json_objects(reply):
        lowered = {str(k).lower(): v for k, v in obj.items()}
        for key in (field, "verdict", "score", "label"):
            if key in lowered and (score := _as_score(lowered[key])) is not None:
                return score
    if not text_fallback:
        return None
    words = _WORD.findall(reply.lower())
    if len(words) == 1:
        return _as_score(words[0])
    if "not" in words:
        return None
    verdicts = {1.0 if w in _TRUE else 0.0 for w in words if w in _TRUE or w in _FALSE}
    return verdicts.pop() if len(verdicts) == 1 else None


def _gold(ctx: ScoreContext) -> str:
    q = ctx.question
    golds = list(q.answers)
    if q.choices and q.correct_choice in q.choices:
        golds.append(f"{q.correct_choice}. {q.choices[q.correct_choice]}")
    return " | ".join(golds)


class Judge:
    """LLM-as-judge correctness, with the prompt of the question's dataset family."""

    name = "judge"
    version = "1"
    #: which verdict field this metric reports; JudgeCoherence reads another one
    field_index = 0

    def __init__(self, config: MetricConfig, prompt: str | None = None) -> None:
        if config.judge is None:
            raise MemplugError("the judge metric needs a judge model: pass --judge MODEL")
        if prompt is not None and prompt not in PROMPTS:
            raise MemplugError(f"unknown judge prompt {prompt!r}; known: {', '.join(sorted(PROMPTS))}")
        self.llm: LLM = config.judge
        self.fixed_prompt = prompt

    @property
    def model(self) -> str:
        return str(getattr(self.llm, "model", self.llm))

    def prompts_used(self) -> list[JudgePrompt]:
        """The prompts this judge may use: the fixed one, or all of them."""
        return [PROMPTS[self.fixed_prompt]] if self.fixed_prompt else list(PROMPTS.values())

    @property
    def prompt_version(self) -> str:
        """"name@version" of every prompt this judge may use, e.g. "strict@1,perltqa@1"."""
        return ",".join(f"{p.name}@{p.version}" for p in self.prompts_used())

    def describe(self) -> dict[str, Any]:
        """For run.json: model, how the prompt is chosen, and each prompt's version and source."""
        return {
            "model": self.model,
            "metric": self.name,
            "version": self.version,
            "prompt": self.fixed_prompt or f"question.meta['family'], default {DEFAULT_PROMPT!r}",
            "prompt_version": self.prompt_version,
            "prompts": {p.name: {"version": p.version, "source": p.source} for p in self.prompts_used()},
            "temperature": 0,
            "seed": JUDGE_SEED,
        }

    def prompt_for(self, ctx: ScoreContext) -> JudgePrompt:
        if self.fixed_prompt:
            return PROMPTS[self.fixed_prompt]
        return PROMPTS.get(str(ctx.question.meta.get("family", "")), PROMPTS[DEFAULT_PROMPT])

    async def score(self, ctx: ScoreContext) -> float | None:
        q = ctx.question
        if not q.answers and not (q.choices and q.correct_choice):
            return None
        prompt = self.prompt_for(ctx)
        if self.field_index >= len(prompt.fields):
            return None
        choices = format_choices(q.choices)
        text = prompt.template.format(
            question=q.text,
            choices=f"Choices:\n{choices}\n" if choices else "",
            gold=_gold(ctx),
            prediction=ctx.prediction or "(no answer)",
        )
        completion = await self.llm.acomplete(
            [{"role": "user", "content": text}], temperature=0, seed=JUDGE_SEED
        )
        field = prompt.fields[self.field_index]
        verdict = parse_verdict(completion.text, field, text_fallback=self.field_index == 0)
        if verdict is None:
            log.warning("judge reply for question %s has no readable %r: %r", q.id, field, completion.text[:200])
        return verdict


class JudgeCoherence(Judge):
    """PerLTQA's coherence from the same judge call (the response cache makes it free);
    None for prompts that rate correctness only."""

    name = "judge_coherence"
    field_index = 1
