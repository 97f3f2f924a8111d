"""MemoryAgentBench conformance: memplug's scores and prompts against the official code's figures.

tests/fixtures/mab/official_figures.json holds what the official functions produced on
the fixed inputs it lists (its ``_how`` says which functions, at which commit); memplug
must produce the same figures from the same inputs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from memplug.datasets.mab import judge as infbench
from memplug.datasets.mab.protocol import memorize, official
from memplug.datasets.mab.scoring import RecsysRecall, RecsysRecall1, RecsysRecall10, titles
from memplug.datasets.mab.sources import source_info
from memplug.datasets.longmemeval.judge import LONGMEMEVAL
from memplug.metrics import ExactMatch, SubstringExactMatch, TokenF1, score_with
from memplug.models import AgentQuestion, Question, Recalled
from memplug.plugins import get_plugins
from memplug.protocols import ScoreContext

FIGURES = json.loads((Path(__file__).parent / "fixtures" / "mab" / "official_figures.json").read_text())
QA = {"exact_match": "em", "substring_exact_match": "subem", "f1": "f1"}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def flat(answer: Any) -> tuple[str, ...]:
    return tuple(a for item in answer for a in (item if isinstance(item, list) else [item]))


def scores(
    source: str, reply: str, answer: Any, metrics: dict[str, Any], meta: dict[str, Any] | None = None
) -> dict[str, float]:
    """memplug's scores of ``reply`` as the runner computes them under ``source``'s protocol."""
    protocol = official(source_info(source))
    question = Question("q", "?", flat(answer), meta=meta or {})
    prediction = protocol.parse_reply(reply)
    ctx = ScoreContext(question, prediction, (), reply=reply)
    raw = reply if protocol.score_raw_too else None
    return {name: asyncio.run(score_with(m, ctx, raw)) for name, m in metrics.items()}  # type: ignore[misc]


QA_METRICS = {"exact_match": ExactMatch(), "substring_exact_match": SubstringExactMatch(), "f1": TokenF1()}


@pytest.mark.parametrize(
    "kind,source",
    [("default", "ruler_qa1_197K"), ("icl", "icl_banking77_5900shot_balance"), ("eventqa", "eventqa_full")],
)
def test_question_answering_scores_are_the_official_ones(kind, source):
    registry = get_plugins().registry("metrics")
    metrics: dict[str, Any] = dict(QA_METRICS)
    if kind == "eventqa":
        metrics["eventqa_recall"] = registry.get("eventqa_recall").load()()
    for (reply, answer), want in zip(FIGURES[f"{kind}_cases"], FIGURES[kind]):
        got = scores(source, reply, answer, metrics)
        assert got == pytest.approx(want, abs=1e-9), reply


def test_ruler_niah_recall_is_the_official_one():
    metric = get_plugins().registry("metrics").get("ruler_recall").load()()
    got = [scores("ruler_niah_mq_448K", r, a, {"ruler_recall": metric}) for r, a in FIGURES["ruler_niah_cases"]]
    assert got == FIGURES["ruler_niah"]
    assert [g["ruler_recall"] for g in got] == [0.75, 0.0, 1.0]  # the figures themselves are not trivial


def test_recsys_recall_matches_titles_as_the_official_code(tmp_path):
    entity_map = tmp_path / "entity2id.json"
    entity_map.write_text(json.dumps(FIGURES["entity2id"]))
    metrics = {
        "recsys_recall@1": RecsysRecall1(),
        "recsys_recall@5": RecsysRecall(),
        "recsys_recall@10": RecsysRecall10(),
    }
    for (reply, answer), want in zip(FIGURES["recsys_cases"], FIGURES["recsys"]):
        got = scores("recsys_redial_full", reply, answer, metrics, {"entity_map": str(entity_map)})
        assert got == pytest.approx(want), reply
    table = titles(entity_map)
    assert table.nearest("Goodfelas") == "Goodfellas" and table.nearest("Aliens") == "Alien"
    assert table.title_of[2] == "Titanic"  # "<http://dbpedia.org/resource/Titanic_(1997_film)>"


class ScriptedJudge:
    """Answers the three InfBench-Sum calls with fixed replies and keeps the prompts."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.params: list[dict[str, Any]] = []

    async def acomplete(self, messages, **params):
        self.prompts.append(messages[0]["content"])
        self.params.append(params)

        class Done:
            text = self.replies[len(self.prompts) - 1]

        return Done()


def test_infbench_sum_judge_is_the_official_f1_with_the_official_prompts():
    case = FIGURES["infbench_sum"]
    question = Question(
        "infbench_sum_eng_shots2_no0",
        "summarise",
        flat(case["answer"]),
        meta={"keypoints": case["keypoints"], "answer": case["answer"], "judge": "infbench-sum"},
    )
    for replies, want in zip(case["replies"], case["results"]):
        llm = ScriptedJudge(replies)
        got = asyncio.run(infbench.score(llm, question, case["summary"]))  # type: ignore[arg-type]
        assert got == (None if want["f1"] is None else pytest.approx(want["f1"]))
        assert [sha(p) for p in llm.prompts] == want["prompt_sha256"]
        assert llm.params == [infbench.PARAMS] * 3
    assert [r["f1"] for r in case["results"]][:2] == [pytest.approx(4 / 7), 0.0]


def test_infbench_sum_judge_is_pinned_and_registered():
    found = get_plugins().registry("judges").get("infbench-sum").load()
    assert found is infbench.INFBENCH_SUM
    described = found.describe()
    # the verbatim prompts of summarization_evaluate.py @ 455306d
    assert {n: p["sha256"] for n, p in described["prompts"].items()} == {
        "fluency": "1cdd25fa4ef5982bbd528c1ff37fcedc5aeb79167ad1359d0cae5afab293bc82",
        "recall": "2716154035020275c959dece28b02b8f098b9c1384d520d2e3efd1479169625e",
        "precision": "98f9964803fa36d0fe75169ea2d90cd3f9dc6ff0e79302941bdc3c8c3ea782dc",
    }


def test_longmemeval_questions_get_the_official_prompt_with_the_release_answer():
    for (qtype, text, answer, reply, qid), want in zip(FIGURES["longmemeval_cases"], FIGURES["longmemeval"]):
        question = Question(
            qid,
            text,
            tuple(answer),
            meta={"judge": "longmemeval", "question_type": qtype, "question_id": qid, "answer": answer},
        )
        prompt = LONGMEMEVAL.prompt(LONGMEMEVAL.choose(question) or "")
        assert sha(prompt.render(text, LONGMEMEVAL.gold(question), reply)) == want, qid


@pytest.mark.parametrize("source", sorted(FIGURES["messages"]["questions"]))
def test_prompts_and_memories_are_the_official_ones(source):
    want = FIGURES["messages"]["sha256"][source]
    info = source_info(source)
    protocol = official(info)
    chunks = [memorize(info, c) for c in ("First chunk text.", "Second chunk text.")]
    assert [sha(c) for c in chunks] == want["memorize"]
    question = AgentQuestion("q", FIGURES["messages"]["questions"][source], "c")
    system, user = protocol.messages(question, [Recalled(c, 1.0, ()) for c in chunks])
    assert sha(system["content"]) == want["system"]
    assert sha(user["content"]) == want["user"]
