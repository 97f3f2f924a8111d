"""The LLM judge with a fake LLM: prompt choice, call parameters, verdict parsing."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable, cast

import attrs
import pytest

from memplug.errors import MemplugError
from memplug.judge import JUDGE_SEED, PERLTQA, PERLTQA_SOURCE_QUOTE, Judge, JudgeCoherence, parse_verdict
from memplug.models import Question
from memplug.protocols import MetricConfig, ScoreContext

if TYPE_CHECKING:
    from memplug.llm import LLM


@attrs.frozen
class FakeCompletion:
    text: str


class FakeJudgeLLM:
    """Answers with reply(prompt) and records every call."""

    model = "fake/judge"

    def __init__(self, reply: Callable[[str], str] | str) -> None:
        self.reply = reply if callable(reply) else (lambda _prompt: reply)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def acomplete(self, messages: list[dict[str, str]], **params: Any) -> FakeCompletion:
        prompt = messages[-1]["content"]
        self.calls.append((prompt, params))
        return FakeCompletion(self.reply(prompt))


def judge_config(llm: FakeJudgeLLM, **fields: Any) -> MetricConfig:
    """A metric config judged by the fake: it answers ``acomplete``, all a judge asks of an LLM."""
    return MetricConfig(judge=cast("LLM", llm), **fields)


def judge_score(judge: Judge, prediction: str, **question: Any) -> float | None:
    q = Question(
        "q1",
        question.pop("text", "What is Wang Wei's occupation?"),
        question.pop("answers", ("cameraman",)),
        **question,
    )
    return asyncio.run(judge.score(ScoreContext(q, prediction, ())))


def test_strict_prompt_by_default_at_temperature_0_with_seed() -> None:
    llm = FakeJudgeLLM('{"correct": true}')
    judge = Judge(judge_config(llm))
    assert judge_score(judge, "He is a cameraman.") == 1.0
    ((prompt, params),) = llm.calls
    assert params == {"temperature": 0, "seed": JUDGE_SEED}
    assert "Grade strictly" in prompt
    assert "Gold answer(s): cameraman" in prompt and "Answer to grade: He is a cameraman." in prompt
    assert "Choices:" not in prompt


def test_family_selects_the_perltqa_prompt_and_coherence_reads_the_same_reply() -> None:
    llm = FakeJudgeLLM('Sure: {"correctness": 0.5, "coherence": 1}')
    config = judge_config(llm)
    meta = {"family": "perltqa"}
    assert judge_score(Judge(config), "Wang Wei works in film.", meta=meta) == 0.5
    assert judge_score(JudgeCoherence(config), "Wang Wei works in film.", meta=meta) == 1.0
    assert all("Rate two aspects" in prompt for prompt, _ in llm.calls)
    # an unknown family falls back to the strict prompt, which rates no coherence
    assert judge_score(JudgeCoherence(config), "x", meta={"family": "memsim"}) is None


def test_fixed_prompt_overrides_the_family() -> None:
    llm = FakeJudgeLLM('{"correctness": 1, "coherence": 1}')
    judge = Judge(judge_config(llm), prompt="perltqa")
    assert judge_score(judge, "cameraman") == 1.0
    assert judge.prompt_version == "perltqa@1"
    with pytest.raises(MemplugError, match="unknown judge prompt"):
        Judge(judge_config(llm), prompt="nope")


def test_multiple_choice_puts_choices_and_correct_choice_in_the_prompt() -> None:
    llm = FakeJudgeLLM("no")
    judge = Judge(judge_config(llm))
    score = judge_score(judge, "B", text="How old?", answers=(), choices={"A": "35", "B": "36"}, correct_choice="A")
    assert score == 0.0
    prompt = llm.calls[0][0]
    assert "Choices:\nA. 35\nB. 36\n" in prompt and "Gold answer(s): A. 35" in prompt


def test_question_without_gold_is_not_applicable_and_costs_nothing() -> None:
    llm = FakeJudgeLLM("yes")
    assert judge_score(Judge(judge_config(llm)), "x", answers=()) is None
    assert llm.calls == []


def test_unreadable_verdict_is_none_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    judge = Judge(judge_config(FakeJudgeLLM("I cannot decide.")))
    with caplog.at_level(logging.WARNING, logger="memplug.judge"):
        assert judge_score(judge, "x") is None
    assert "I cannot decide." in caplog.text


def test_describe_for_run_json() -> None:
    judge = Judge(judge_config(FakeJudgeLLM("yes")))
    described = judge.describe()
    assert described["model"] == judge.model == "fake/judge"
    assert described["prompt_version"] == judge.prompt_version == "strict@1,perltqa@1"
    assert described["prompts"]["perltqa"]["source"].startswith("seed 001 (PerLTQA) §3.5")
    assert (described["temperature"], described["seed"]) == (0, JUDGE_SEED)


def test_perltqa_source_quote_is_in_the_seed(seeds_dir: Any) -> None:
    seed = next(seeds_dir.glob("001_*.txt")).read_text(encoding="utf-8")
    assert PERLTQA_SOURCE_QUOTE in seed
    assert PERLTQA.fields == ("correctness", "coherence")


def test_judge_needs_a_model() -> None:
    with pytest.raises(MemplugError, match="--judge"):
        Judge(MetricConfig())


@pytest.mark.parametrize(
    ("reply", "field", "expected"),
    [
        ('{"correct": true}', "correct", 1.0),
        ('```json\n{"correct": false}\n```', "correct", 0.0),
        ('{"Correctness": 0.5, "coherence": 1}', "correctness", 0.5),
        ('{"Correctness": 0.5, "coherence": 1}', "coherence", 1.0),
        ('{"verdict": "yes"}', "correct", 1.0),
        ("Yes.", "correct", 1.0),
        ("INCORRECT", "correct", 0.0),
        ("1", "correct", 1.0),
        ("0", "correct", 0.0),
        ("The answer is correct.", "correct", 1.0),
        ("The answer is not correct.", "correct", None),  # negation: unreadable, not "correct"
        ("Correct, but also wrong", "correct", None),
        ("正确", "correct", 1.0),
        ("不正确", "correct", 0.0),
        ("2", "correct", None),  # out of [0, 1]
        ("I cannot tell", "correct", None),
        # the prompt's own two options repeated: objects that disagree say nothing
        ('Reply with JSON only: {"correct": true} or {"correct": false}.', "correct", None),
        ('{"correct": false} ... so: {"correct": false}', "correct", 0.0),
    ],
)
def test_parse_verdict(reply: str, field: str, expected: float | None) -> None:
    assert parse_verdict(reply, field) == expected


def test_second_field_is_read_from_json_only() -> None:
    assert parse_verdict("Yes.", "coherence", text_fallback=False) is None


def test_judge_through_the_llm_layer_sends_temperature_and_seed(openai_stub: Any) -> None:
    """The real LLM class against the loopback OpenAI stub: the request carries temperature 0
    and the judge seed, and the PerLTQA prompt's two verdicts come from one reply."""
    from memplug.llm import LLM

    openai_stub.reply = lambda request: '{"correctness": 1, "coherence": 0.5}'
    llm = LLM("openai/stub", api_base=openai_stub.base_url, api_key="sk-test")
    try:
        config = MetricConfig(judge=llm)
        meta = {"family": "perltqa"}
        assert judge_score(Judge(config), "Wang Wei is a cameraman.", meta=meta) == 1.0
        assert judge_score(JudgeCoherence(config), "Wang Wei is a cameraman.", meta=meta) == 0.5
    finally:
        llm.close()
    first = openai_stub.chat_requests[0]
    assert (first["temperature"], first["seed"]) == (0, JUDGE_SEED)
    # the coherence metric's identical call is served by the response cache
    assert len(openai_stub.chat_requests) == 1
