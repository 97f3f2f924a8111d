"""LLM-as-judge: the ``judge`` metric, only computed when a run is given ``--judge MODEL``.

A **judge** is a named, versioned set of prompts with its own way of reading a reply
(:class:`JudgeSet`), registered like any plugin item through the ``register_judges`` hook
(memplug's generic one, ``memplug``, here; each benchmark's official judge in its dataset
package, registered by ``memplug.datasets.plugin``: ``longmemeval``, ``locomo-j``, ...).
Which judge scores a question, first match wins:

1. ``Judge(config, prompt="perltqa")``: one prompt of the ``memplug`` judge for every question;
2. a judge named by :meth:`Judge.force`, the ``judge=`` argument, or
   ``MetricConfig.judge_name`` (``memplug eval/rescore --judge-prompt NAME``, stored in the
   run's spec; the CLI takes ``$MEMPLUG_JUDGE_PROMPT`` as the option's default): that judge
   for every question;
3. the question's dataset, its official judge where it has one: ``question.meta["judge"]``
   (longmemeval sets ``longmemeval``, conversations ``memplug``; both ``-o judge=NAME``),
   else ``locomo-j`` for a LoCoMo question (``meta["locomo_category"]``; LoCoMo's official
   code has no judge, its score is ``locomo_f1``), else ``memplug``, whose prompt follows
   ``question.meta["family"]`` (strict, or PerLTQA's).

The judge is called at temperature 0 with a fixed seed (where the provider honours one)
so that repeated runs and the response cache agree, plus the call parameters its
official code uses (LongMemEval's ``max_tokens=10``, Mem0's JSON ``response_format``).
:meth:`Judge.describe` (run.json, ``resolved.judge``) names each judge used with its
version, source and the sha256 of its prompts.

A reply that cannot be read as a verdict scores ``None`` (left out of the mean and
visible in the per-metric counts) rather than 0, and is logged with its text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Mapping

import attrs

from memplug.errors import MemplugError
from memplug.models import Question
from memplug.protocols import MetricConfig, ScoreContext
from memplug.readers import format_choices

if TYPE_CHECKING:
    from memplug.llm import LLM
    from memplug.plugins import Plugins, Registry

log = logging.getLogger(__name__)

#: sent with every judge call; providers without seeds ignore it
JUDGE_SEED = 0
#: the default of ``--judge-prompt`` in ``memplug eval`` and ``rescore`` (read by the CLI only,
#: so that the choice is stored in the run's spec)
JUDGE_ENV = "MEMPLUG_JUDGE_PROMPT"
#: the judge of questions whose dataset names none
DEFAULT_JUDGE = "memplug"

#: how a template is filled: memplug's named slots, LongMemEval's three positional {} (question,
#: answer, response: evaluate_qa.py's template.format), Mem0's named question/gold_answer/generated_answer,
#: LoCoMo-Plus's named gold/pred/evidence (llm_as_judge.py get_judge_prompt)
STYLES = ("memplug", "positional", "mem0", "locomo-plus")
#: how a reply becomes a score: memplug's parse_verdict of the prompt's fields; LongMemEval's
#: ``'yes' in reply.lower()``; Mem0's ``json.loads(extract_json(reply))["label"] == "CORRECT"``;
#: LoCoMo-Plus's label (correct 1, partial 0.5, anything else 0: :func:`read_locomo_plus`)
READERS = ("fields", "yes", "label", "locomo-plus")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@attrs.frozen
class JudgePrompt:
    """A judging prompt, kept verbatim. memplug's prompts (``style="memplug"``) fill
    ``{question}``, ``{choices}``, ``{gold}`` and ``{prediction}``; official ones are filled
    the way their code fills them (``style``) and read the way their code reads replies
    (``reads``)."""

    name: str
    version: str
    source: str
    template: str
    #: the JSON fields of the verdict, first = the ``judge`` score
    fields: tuple[str, ...] = ("correct",)
    style: str = "memplug"
    reads: str = "fields"

    def __attrs_post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"judge prompt {self.name!r}: style must be one of {STYLES}, not {self.style!r}")
        if self.reads not in READERS:
            raise ValueError(f"judge prompt {self.name!r}: reads must be one of {READERS}, not {self.reads!r}")

    @property
    def sha256(self) -> str:
        return sha256_text(self.template)

    def render(self, question: str, gold: str, prediction: str, choices: str = "", evidence: str = "") -> str:
        if self.style == "positional":
            return self.template.format(question, gold, prediction)
        if self.style == "mem0":
            return self.template.format(question=question, gold_answer=gold, generated_answer=prediction)
        if self.style == "locomo-plus":
            return self.template.format(gold=gold, pred=prediction, evidence=evidence)
        return self.template.format(question=question, choices=choices, gold=gold, prediction=prediction)

    def read(self, reply: str, field_index: int = 0) -> float | None:
        """The score in a reply, None when the reply says nothing readable (or for a field this prompt lacks)."""
        if field_index >= len(self.fields):
            return None
        if self.reads == "yes":
            return 1.0 if "yes" in reply.lower() else 0.0
        if self.reads == "label":
            return read_label(reply)
        if self.reads == "locomo-plus":
            return read_locomo_plus(reply)
        return parse_verdict(reply, self.fields[field_index], text_fallback=field_index == 0)


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
    is correct."). Prose with "not" or with both kinds of words is unreadable, and so
    are JSON objects that disagree (a reply that repeats the prompt's ``{"correct": true}
    or {"correct": false}``). A second field (coherence) is read from JSON only:
    ``text_fallback=False``.
    """
    scores = {score for obj in _json_objects(reply) if (score := _json_score(obj, field)) is not None}
    if scores:
        return scores.pop() if len(scores) == 1 else None
    if not text_fallback:
        return None
    words = _WORD.findall(reply.lower())
    if len(words) == 1:
        return _as_score(words[0])
    if "not" in words:
        return None
    verdicts = {1.0 if w in _TRUE else 0.0 for w in words if w in _TRUE or w in _FALSE}
    return verdicts.pop() if len(verdicts) == 1 else None


def _json_score(obj: Mapping[str, Any], field: str) -> float | None:
    """The score one JSON object of a reply gives: ``field``, else "verdict", "score" or
    "label" (keys in any case)."""
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in (field, "verdict", "score", "label"):
        if key in lowered and (score := _as_score(lowered[key])) is not None:
            return score
    return None


def extract_json(text: str) -> str:
    """Mem0's ``mem0.memory.utils.extract_json`` (mem0ai/mem0@aae5989): the inside of a ```
    fence, else the text from the first "{" to the last "}", else the text as it is."""
    text = text.strip()
    match = re.search(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if match:
        return match.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end != -1 and end > start:
        return text[start : end + 1]
    return text


def read_label(reply: str) -> float | None:
    """Mem0's reading: ``1 if json.loads(extract_json(reply))["label"] == "CORRECT" else 0``;
    where Mem0's script would crash (no JSON, no "label"), None."""
    try:
        obj = json.loads(extract_json(reply))
    except ValueError:
        return None
    if not isinstance(obj, dict) or "label" not in obj:
        return None
    return 1.0 if obj["label"] == "CORRECT" else 0.0


#: llm_as_judge.py LABEL_TO_SCORE (xjtuleeyf/Locomo-Plus)
LOCOMO_PLUS_SCORES = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}
_LOCOMO_PLUS_JSON = re.compile(
    r'\{[^{}]*"label"\s*:\s*["\']([^"\']+)["\'][^{}]*"reason"\s*:\s*["\']([^"\']*)["\']', re.DOTALL
)


def locomo_plus_label(reply: str) -> str:
    """LoCoMo-Plus's ``_parse_judge_response`` (llm_as_judge.py, xjtuleeyf/Locomo-Plus@059f4e3), its
    label only: a {"label": ..., "reason": ...} object, else the reply as JSON, else (when that
    fails) the first of "correct", "wrong", "partial" found in the lower-cased reply, in that
    order, so "incorrect" reads as "correct", as it does there."""
    raw = (reply or "").strip()
    try:
        match = _LOCOMO_PLUS_JSON.search(raw)
        if match:
            return match.group(1).strip()
        return str((json.loads(raw).get("label") or "").strip())
    except Exception:  # the official code's bare fallback: any failure reads the words
        low = raw.lower()
        return next((word for word in ("correct", "wrong", "partial") if word in low), "")


def read_locomo_plus(reply: str) -> float:
    """LoCoMo-Plus's ``label_to_score``: correct 1, partial 0.5, wrong, another label or none 0
    (the official summary counts an unreadable reply as 0, so memplug does too, and logs it)."""
    label = locomo_plus_label(reply)
    if label.lower() not in LOCOMO_PLUS_SCORES:
        log.warning(
            "LoCoMo-Plus judge reply without a known label, scored 0 as the official code does: %r", reply[:200]
        )
    return LOCOMO_PLUS_SCORES.get(label.lower(), 0.0)


def memplug_gold(question: Question) -> str:
    """The gold answers joined by " | ", with the correct choice for multiple choice."""
    golds = list(question.answers)
    if question.choices and question.correct_choice is not None and question.correct_choice in question.choices:
        golds.append(f"{question.correct_choice}. {question.choices[question.correct_choice]}")
    return " | ".join(golds)


@attrs.frozen
class JudgeSet:
    """A named, versioned judge: its prompts, which prompt a question gets, the gold it is shown
    and the call parameters. ``choose(question)`` returns a prompt name, or None when the judge
    does not score the question (Mem0's skips LoCoMo's category 5)."""

    name: str
    version: str
    source: str
    prompts: tuple[JudgePrompt, ...]
    choose: Callable[[Question], str | None]
    gold: Callable[[Question], str] = memplug_gold
    #: extra parameters of every call, as the official code sends them
    params: Mapping[str, Any] = attrs.field(factory=dict)
    description: str = ""
    #: for a judge whose official score takes several calls (BEAM: one per rubric item):
    #: ``await scorer(llm, question, prediction)`` is the score, the prompts are its pinned texts;
    #: None when a reply held no readable verdict (the question is counted ``unscored``)
    scorer: "Callable[[LLM, Question, str], Awaitable[float | None]] | None" = None
    #: the evidence a prompt shows (LoCoMo-Plus's ``{evidence}``); a judge with one scores
    #: questions without a gold answer (LoCoMo-Plus's cognitive and adversarial questions)
    evidence: Callable[[Question], str] | None = None

    def prompt(self, name: str) -> JudgePrompt:
        for p in self.prompts:
            if p.name == name:
                return p
        raise MemplugError(f"judge {self.name!r} has no prompt {name!r}")

    @property
    def sha256(self) -> str:
        """sha256 of every prompt's name and verbatim text and of the call parameters: two
        judges with this hash ask the same thing the same way."""
        payload = json.dumps(
            {"prompts": {p.name: p.template for p in self.prompts}, "params": dict(self.params)},
            sort_keys=True,
            ensure_ascii=False,
        )
        return sha256_text(payload)

    def describe(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "source": self.source,
            "sha256": self.sha256,
            "params": dict(self.params),
            "prompts": {p.name: {"version": p.version, "source": p.source, "sha256": p.sha256} for p in self.prompts},
        }


def _memplug_choice(question: Question) -> str:
    return "perltqa" if str(question.meta.get("family", "")) == "perltqa" else DEFAULT_PROMPT


MEMPLUG = JudgeSet(
    name="memplug",
    version="1",
    source="memplug: the strict correctness prompt; PerLTQA's correctness/coherence prompt for its family",
    prompts=(STRICT, PERLTQA),
    choose=_memplug_choice,
    description="memplug's strict binary correctness (PerLTQA questions: correctness and coherence)",
)


def judge_registry(plugins: "Plugins | None" = None) -> "Registry":
    """The judges every plugin registered through ``register_judges`` (memplug's own included)."""
    from memplug.plugins import get_plugins

    return (plugins or get_plugins()).registry("judges")


_SETS: dict[str, JudgeSet] = {}


def judge_set(name: str, plugins: "Plugins | None" = None) -> JudgeSet:
    """The judge called ``name`` (memplug, longmemeval, locomo-j, or a plugin's); an unknown
    name is a MemplugError that lists the known ones."""
    if name == MEMPLUG.name:
        return MEMPLUG
    if name not in _SETS or plugins is not None:
        found = judge_registry(plugins).get(name).load()
        if not isinstance(found, JudgeSet):
            raise MemplugError(f"judge {name!r}: its target is a {type(found).__name__}, not a memplug.judge.JudgeSet")
        if plugins is not None:
            return found
        _SETS[name] = found
    return _SETS[name]


#: why a judged question has no score when the judge's reply held no verdict: the record's
#: ``unscored``, counted in summary.json and printed after the scores (a judge that cannot
#: follow the prompt, e.g. a tiny local model, must not pass for a judge of one question)
UNREADABLE = "unreadable verdict"


class Judge:
    """LLM-as-judge correctness: the question's judge (see the module's docstring) asks the model."""

    name = "judge"
    #: 2: judges are named sets; LoCoMo questions get locomo-j and LongMemEval's their official prompts
    version = "2"
    #: which verdict field this metric reports; JudgeCoherence reads another one
    field_index = 0

    def __init__(self, config: MetricConfig, prompt: str | None = None, judge: str | None = None) -> None:
        if config.judge is None:
            raise MemplugError("the judge metric needs a judge model: pass --judge MODEL")
        if prompt is not None and prompt not in PROMPTS:
            raise MemplugError(f"unknown judge prompt {prompt!r}; known: {', '.join(sorted(PROMPTS))}")
        self.llm: LLM = config.judge
        self.fixed_prompt = prompt
        self.forced: JudgeSet | None = None
        self.selected_by: str | None = None
        #: the judges that scored at least one question, by name
        self.used: dict[str, JudgeSet] = {}
        #: the judges of the run's questions (:meth:`plan`), by name
        self.planned: dict[str, JudgeSet] = {}
        if judge:
            self.force(judge, "argument")
        elif config.judge_name:
            self.force(config.judge_name, "--judge-prompt")

    def force(self, name: str, by: str = "option") -> None:
        """Use the judge called ``name`` for every question (``by``: what chose it, for run.json)."""
        self.forced = judge_set(name)
        self.selected_by = by

    @property
    def model(self) -> str:
        return str(getattr(self.llm, "model", self.llm))

    def judge_for(self, question: Question) -> JudgeSet:
        if self.fixed_prompt:
            return MEMPLUG
        if self.forced is not None:
            return self.forced
        named = question.meta.get("judge")
        if named:
            return judge_set(str(named))
        if "locomo_category" in question.meta:
            return judge_set("locomo-j")
        return MEMPLUG

    def plan(self, questions: "Iterable[Question]") -> None:
        """Note the judge of each question a run will ask, so that run.json names the judges
        (and their sha256) from its first moment, resumed runs included."""
        for q in questions:
            found = self.judge_for(q)
            self.planned.setdefault(found.name, found)

    def sets_in_play(self) -> list[JudgeSet]:
        """The judge in force, or those of the run's questions (:meth:`plan`) and those used so
        far (memplug's before any question is known)."""
        if self.fixed_prompt:
            return [MEMPLUG]
        if self.forced is not None:
            return [self.forced]
        return list({**self.planned, **self.used}.values()) or [MEMPLUG]

    def prompts_used(self) -> list[JudgePrompt]:
        """The prompts this judge may use: the fixed one, or those of the judges in play."""
        if self.fixed_prompt:
            return [PROMPTS[self.fixed_prompt]]
        return [p for s in self.sets_in_play() for p in s.prompts]

    @property
    def prompt_version(self) -> str:
        """ "name@version" of every prompt this judge may use, e.g. "strict@1,perltqa@1"."""
        return ",".join(f"{p.name}@{p.version}" for p in self.prompts_used())

    @property
    def judge_name(self) -> str:
        return "+".join(s.name for s in self.sets_in_play())

    @property
    def prompt_sha256(self) -> str:
        """The judge's sha256 (of the one judge in play; of their hashes for several)."""
        sets = self.sets_in_play()
        if self.fixed_prompt:
            return PROMPTS[self.fixed_prompt].sha256
        return sets[0].sha256 if len(sets) == 1 else sha256_text(",".join(f"{s.name}:{s.sha256}" for s in sets))

    def describe(self) -> dict[str, Any]:
        """For run.json: the judge's name, model and prompts' sha256, how it was chosen, each prompt's version and source."""
        return {
            "name": self.judge_name,
            "model": self.model,
            "prompt_sha256": self.prompt_sha256,
            "metric": self.name,
            "version": self.version,
            "selected_by": (
                "Judge(prompt=...)"
                if self.fixed_prompt
                else self.selected_by or "the dataset: question.meta['judge'], LoCoMo -> locomo-j, else memplug"
            ),
            "judges": {s.name: s.describe() for s in self.sets_in_play()},
            "prompt": self.fixed_prompt or f"question.meta['family'], default {DEFAULT_PROMPT!r}",
            "prompt_version": self.prompt_version,
            "prompts": {p.name: {"version": p.version, "source": p.source} for p in self.prompts_used()},
            "temperature": 0,
            "seed": JUDGE_SEED,
        }

    def prompt_for(self, ctx: ScoreContext) -> JudgePrompt | None:
        if self.fixed_prompt:
            return PROMPTS[self.fixed_prompt]
        judge = self.judge_for(ctx.question)
        name = judge.choose(ctx.question)
        return None if name is None else judge.prompt(name)

    async def score(self, ctx: ScoreContext) -> float | None:
        q = ctx.question
        judge = MEMPLUG if self.fixed_prompt else self.judge_for(q)
        gold = judge.gold(q)
        evidence = judge.evidence(q) if judge.evidence is not None else ""
        if not gold and not evidence:
            return None
        prompt = self.prompt_for(ctx)
        if prompt is None or self.field_index >= len(prompt.fields):
            return None
        self.used.setdefault(judge.name, judge)
        if judge.scorer is not None:
            value = await judge.scorer(self.llm, q, ctx.prediction)
            if value is None:  # the scorer read no verdict in its judge's replies (and logged them)
                ctx.unscored[self.name] = UNREADABLE
            return value
        choices = format_choices(q.choices)
        text = prompt.render(
            q.text,
            gold,
            ctx.prediction or "(no answer)" if prompt.style == "memplug" else ctx.prediction,
            f"Choices:\n{choices}\n" if choices else "",
            evidence,
        )
        completion = await self.llm.acomplete(
            [{"role": "user", "content": text}], temperature=0, seed=JUDGE_SEED, **judge.params
        )
        verdict = prompt.read(completion.text, self.field_index)
        if verdict is None:  # left unscored, not an error; the record says why (``unscored``)
            ctx.unscored[self.name] = UNREADABLE
            log.warning(
                "judge reply for question %s has no readable %r: %r",
                q.id,
                prompt.fields[self.field_index],
                completion.text[:200],
            )
        return verdict


class JudgeCoherence(Judge):
    """PerLTQA's coherence from the same judge call (the response cache makes it free);
    None for prompts that rate correctness only."""

    name = "judge_coherence"
    field_index = 1
