"""BEAM's official scoring: figures the official code printed, held against memplug's.

The figures were produced by the functions of github mohammadtavakoli78/BEAM @ b2a3ee8,
``src/evaluation/compute_metrics.py`` (``evaluate_event_ordering`` with ``align_with_llm``,
``llm_equivalence`` and ``event_ordering_score``; ``evaluate_abstention``, the rubric mean
that eight other abilities share verbatim), taken from the file unchanged and run with
scipy 1.17.1 and json_repair on the inputs below, with a stand-in judge model: for an
equivalence question it answers YES when every word of the first snippet occurs in the
second (lower-cased), for a rubric item it answers the reply listed for that item. memplug
runs the same inputs through the same stand-in, reached through the prompts it sends.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from typing import TYPE_CHECKING, Any, cast

import pytest

from memplug.datasets.beam import builder, judge
from memplug.datasets.beam.scoring import kendall_tau_b, parse_json_response, rubric_item_score
from memplug.models import Question

if TYPE_CHECKING:
    from memplug.llm import LLM

#: (case, rubric = the reference events, reply, precision, recall, f1, tau_norm, final_score)
EVENTS = [
    (
        "in order with a header",
        ["alpha launch", "beta test", "gamma release"],
        "Here is the order:\n1) alpha launch\n2) beta test\n3) gamma release",
        0.75,
        1.0,
        0.8571428571428571,
        0.5,
        0.42857142857142855,
    ),
    (
        "reversed",
        ["alpha launch", "beta test", "gamma release"],
        "gamma release\nbeta test\nalpha launch",
        1.0,
        1.0,
        1.0,
        0.0,
        0.0,
    ),
    (
        "one swapped, one missing",
        ["alpha launch", "beta test", "gamma release", "delta review"],
        "beta test\nalpha launch\ndelta review",
        1.0,
        0.75,
        0.8571428571428571,
        0.6666666666666667,
        0.5714285714285715,
    ),
    (
        "extra and blank lines",
        ["alpha launch", "beta test"],
        "alpha launch\n\nsomething else\nbeta test\n",
        0.4,
        1.0,
        0.5714285714285715,
        0.7738612787525831,
        0.44220644500147616,
    ),
    ("none matched", ["alpha launch", "beta test"], "nothing relevant", 0.0, 0.0, 0, 0.09175170953613698, 0.0),
    (
        "repeated line",
        ["alpha launch", "beta test", "gamma release"],
        "alpha launch\nalpha launch\ngamma release\nbeta test",
        1.0,
        1.0,
        1.0,
        0.6666666666666667,
        0.6666666666666667,
    ),
    # scipy's tau-b is NaN for one item (the official final_score is NaN); memplug: None, unscored
    ("single event matched", ["alpha launch"], "alpha launch", 1.0, 1.0, 1.0, None, None),
]
#: (case, rubric, the judge's reply per item, official llm_judge_score); int() makes 0.5 count 0
RUBRICS = [
    (
        "all met",
        ["states March 29", "mentions sprint"],
        {
            "states March 29": '{"score": 1.0, "reason": "ok"}',
            "mentions sprint": '```json\n{"score": 1, "reason": "ok"}\n```',
        },
        1.0,
    ),
    (
        "one partial",
        ["states March 29", "mentions sprint"],
        {
            "states March 29": '{"score": 0.5, "reason": "partly"}',
            "mentions sprint": 'Verdict: {"score": 1.0, "reason": "ok"}',
        },
        0.5,
    ),
    (
        "three items",
        ["a", "b", "c"],
        {"a": '{"score": 1.0}', "b": '{"score": 0.0}', "c": '{"score": 1.0}'},
        0.6666666666666666,
    ),
]
#: scipy.stats.kendalltau(x, y, variant="b").statistic, scipy 1.17.1
TAU_B = [
    ([1, 2, 3, 4], [1, 3, 2, 4], 0.6666666666666669),
    ([1, 2, 3, 5, 5], [2, 1, 5, 3, 5], 0.4444444444444444),
    ([1, 1, 2, 3], [1, 2, 2, 3], 0.7999999999999999),
    ([3, 2, 1], [1, 2, 3], -1.0),
    ([1, 2], [1, 1], None),  # NaN
]
#: sha256 of the official texts as copied (each compared with the source when it was copied)
PINNED = {
    "RUBRIC_PROMPT": "d349c9a8559bed9c14bfe2e624212225b09218ff864258a739229c15f4c8e869",
    "EQUIVALENCE_SYSTEM": "0863c78c1b27d36c97bb7bfd2d4d6b88ef69b093e92bb4719e665527722413e2",
    "EQUIVALENCE_USER": "6bf789b815decbeb1c27f5058e2416c2a6e167724c0433b1da27b0abe5cc73df",
}
#: of src/prompts.py answer_generation_for_rag, which memplug's reader prompt is with its slots renamed
RAG_PROMPT_SHA256 = "ed89b98d1024432a46bd297345961cf89d2429746daec37befb50db46e0c914a"


class _Completion:
    def __init__(self, text: str) -> None:
        self.text = text


class StandIn:
    """The stand-in judge model of the official run, reading memplug's prompts."""

    model = "stand-in"

    def __init__(self, rubric_replies: dict[str, str] | None = None) -> None:
        self.rubric_replies = rubric_replies or {}
        self.calls: list[tuple[list[dict[str, str]], dict[str, Any]]] = []

    async def acomplete(self, messages: list[dict[str, str]], **params: Any) -> _Completion:
        self.calls.append((messages, params))
        user = messages[-1]["content"]
        if messages[0]["role"] == "system":
            m = re.match(r"First snippet: (.*) \n\n\s*Second snippet: (.*)\n\s*$", user, re.S)
            assert m, user
            return _Completion("YES" if all(w in m.group(2).lower() for w in m.group(1).lower().split()) else "NO")
        item = user.split("- RUBRIC CRITERION (what to check): ")[1].split("\n")[0]
        return _Completion(self.rubric_replies[item])


def _as_llm(stand_in: StandIn) -> LLM:
    """The stand-in where the judge takes an LLM: it answers ``acomplete``, all the judge calls."""
    return cast("LLM", stand_in)


def _question(ability: str, rubric: list[str]) -> Question:
    return Question(f"100K/1:{ability}:0", "q", (), category=ability, meta={"rubric": rubric, "judge": "beam"})


@pytest.mark.parametrize("case", EVENTS, ids=[c[0] for c in EVENTS])
def test_event_ordering_matches_the_official_figures(case):
    _, rubric, reply, precision, recall, f1, tau_norm, final = case
    got = asyncio.run(judge.event_ordering(_as_llm(StandIn()), _question("event_ordering", rubric), reply))
    assert got["precision"] == pytest.approx(precision) and got["recall"] == pytest.approx(recall)
    assert got["f1"] == pytest.approx(f1)
    assert got["tau_norm"] == (None if tau_norm is None else pytest.approx(tau_norm))
    assert got["final_score"] == (None if final is None else pytest.approx(final))
    # the judge metric's value is final_score
    judged = asyncio.run(judge.score(_as_llm(StandIn()), _question("event_ordering", rubric), reply))
    assert judged == got["final_score"]


@pytest.mark.parametrize("case", RUBRICS, ids=[c[0] for c in RUBRICS])
def test_rubric_mean_matches_the_official_figures(case):
    _, rubric, replies, expected = case
    llm = StandIn(replies)
    for ability in ("abstention", "summarization"):
        scored = asyncio.run(judge.score(_as_llm(llm), _question(ability, rubric), "the reply"))
        assert scored == pytest.approx(expected)
    # one call per rubric item, the official prompt filled by replace, at temperature 0
    (messages, params), *_ = llm.calls
    assert len(llm.calls) == 2 * len(rubric) and params["temperature"] == 0
    assert messages[0]["content"] == judge.RUBRIC_PROMPT.replace("<rubric_item>", rubric[0]).replace(
        "<llm_response>", "the reply"
    )
    assert "QUESTION (what the user asked): <question>" in messages[0]["content"]  # left unfilled, as there


@pytest.mark.parametrize(("x", "y", "expected"), TAU_B)
def test_kendall_tau_b_is_scipys(x, y, expected):
    got = kendall_tau_b(x, y)
    assert got == (None if expected is None else pytest.approx(expected))


def test_reply_parsing_as_parse_json_response():
    assert parse_json_response('```json\n{"score": 1.0}\n```') == {"score": 1.0}
    assert parse_json_response('Sure. {"score": 0.0, "reason": "x"} done') == {"score": 0.0, "reason": "x"}
    with pytest.raises(ValueError):
        parse_json_response("no json here")
    assert rubric_item_score('{"score": 0.5}') == 0  # int(), as the official code
    assert rubric_item_score('{"score": "1.0"}') is None  # int("1.0") raises there
    assert rubric_item_score('{"reason": "no score"}') is None


def test_an_unreadable_reply_leaves_the_question_unscored():
    llm = StandIn({"a": '{"score": 1.0}', "b": "I cannot judge this."})
    assert asyncio.run(judge.score(_as_llm(llm), _question("knowledge_update", ["a", "b"]), "r")) is None


@pytest.mark.parametrize("name", sorted(PINNED))
def test_official_prompts_are_pinned(name):
    assert hashlib.sha256(getattr(judge, name).encode()).hexdigest() == PINNED[name]


def test_rag_prompt_is_pinned():
    official = builder.RAG_PROMPT.replace("{memory}", "<context>").replace("{question}", "<question>")
    assert hashlib.sha256(official.encode()).hexdigest() == RAG_PROMPT_SHA256
