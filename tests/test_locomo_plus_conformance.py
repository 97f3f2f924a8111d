"""LoCoMo-Plus against figures its official code produced (xjtuleeyf/Locomo-Plus@059f4e3).

The figures were made by running the official ``data/unified_input.py`` and
``data/build_conv.py`` on ../shared/data (locomo_plus_sample.json as locomo_plus.json,
locomo_conv26.json as locomo10.json), and ``evaluation_framework/task_eval/llm_as_judge.py``
(``_parse_judge_response``, ``label_to_score``, ``get_judge_prompt`` with
``utils._prepend_conv_prefix``, ``_compute_summary``) on the fixed inputs below, in a
scratch folder; only the figures are kept here.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memplug.datasets.locomo_plus import judge as lp_judge
from memplug.datasets.locomo_plus.builder import LoCoMoPlusBuilder
from memplug.datasets.locomo_plus.release import load
from memplug.judge import Judge, read_locomo_plus
from memplug.answering import protocol_of
from memplug.models import AgentQuestion, Question, Recalled
from memplug.protocols import MetricConfig, ScoreContext
from memplug.record import QuestionRecord
from memplug.results import summarize
from memplug.testing import assert_dataset_conforms
from test_judge import FakeJudgeLLM


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: per item of locomo_plus_sample.json: where build_context puts the cue's first turn in the stitched dialogue
CUE_AT = [
    380,
    419,
    354,
    35,
    0,
    419,
    334,
    0,
    0,
    0,
    334,
    334,
    0,
    419,
    0,
    215,
    215,
    215,
    354,
    380,
    0,
    354,
    334,
    0,
    334,
    354,
    0,
    76,
    0,
    354,
    354,
    354,
    419,
    334,
    354,
    35,
    215,
    334,
    419,
    354,
]
#: sha256 of "\n\n".join(input_prompt) and of "\n\n".join(evidence) of _process_locomo_plus's 40 samples
COGNITIVE_INPUTS = "4b73d224c444cb848416e47e014e85c12f9983d7e37b63c50ef9e2d4cb7b451b"
COGNITIVE_EVIDENCE = "2fb80760cd13746360c30ff0370277ac2bb3063d0182c63eef7b8bddfc2616a4"
#: sha256 of "\n\n".join(evidence) and of "\n".join(answer or "") of _process_locomo's 199 samples (conv-26)
LOCOMO_EVIDENCE = "a696861a2030a570e07cb886c7c424254215b86b8fbc0a0a48b377498147a044"
LOCOMO_GOLD = "7fc9f7323fcd09cfb12a5418f3e234add2415ceba7c3c04e8777ca8f84b63a77"


@pytest.fixture(scope="module")
def samples(shared_data):
    return list(
        load(
            shared_data / "locomo_plus" / "locomo_plus_sample.json",
            shared_data / "locomo" / "locomo_conv26.json",
            locomo_categories=frozenset({1, 2, 3, 4, 5}),
            cognitive=True,
        )
    )


def test_stitching_equals_unified_input(samples):
    locomo, cognitive = samples[0], samples[1:]
    assert len(cognitive) == 40
    assert [[m.id for m in s.messages].index("cue:1") for s in cognitive] == CUE_AT
    # the official input_prompt is the stitched lines, the trigger's last: memplug's messages, then its question
    inputs = ["\n".join([*(m.text for m in s.messages), s.questions[0].text]) for s in cognitive]
    assert sha("\n\n".join(inputs)) == COGNITIVE_INPUTS
    assert sha("\n\n".join(s.questions[0].meta["evidence_text"] for s in cognitive)) == COGNITIVE_EVIDENCE
    assert [s.questions[0].category for s in cognitive].count("cognitive-causal") == 10
    assert len(locomo.questions) == 199
    assert sha("\n\n".join(q.meta["evidence_text"] for q in locomo.questions)) == LOCOMO_EVIDENCE
    assert sha("\n".join(q.meta["ground_truth"] for q in locomo.questions)) == LOCOMO_GOLD


#: sha256 of "\n\n".join(utils._build_model_input(input_prompt, category="Cognitive")) of the 40 samples
COGNITIVE_MODEL_INPUTS = "798e7d3e110fc3726db9b861f6635baa6123aefd80cb788b31441edde383f682"


def test_whole_history_recalled_the_reader_prompt_is_the_official_model_input(samples):
    """An agent that recalls every turn in order (``--agent full``) gives the reader exactly
    what evaluate_qa.py gives the model for a cognitive question."""
    protocol = protocol_of(LoCoMoPlusBuilder.info)
    prompts = [
        protocol.messages(AgentQuestion.of(s.questions[0]), [Recalled(m.text) for m in s.messages])[0]["content"]
        for s in samples[1:]
    ]
    assert sha("\n\n".join(prompts)) == COGNITIVE_MODEL_INPUTS


#: reply -> (label, score) by _parse_judge_response and label_to_score
READINGS = [
    ('{"label": "correct", "reason": "ok"}', 1.0),
    ('{"label": "partial", "reason": "x"}', 0.5),
    ('```json\n{"label": "wrong", "reason": "no"}\n```', 0.0),
    ('{"reason": "r", "label": "correct"}', 1.0),
    ("The answer is incorrect.", 1.0),  # the official fallback finds "correct" inside "incorrect"
    ("WRONG", 0.0),
    ("Partial credit", 0.5),
    ('{"label": "Correct"}', 1.0),
    ('{"label": 1, "reason": "x"}', 0.0),
    ("", 0.0),
    ("I cannot decide", 0.0),
    ('{"label": "mostly right", "reason": "x"}', 0.0),
]


@pytest.mark.parametrize("reply, score", READINGS)
def test_replies_read_as_the_official_judge(reply, score):
    assert read_locomo_plus(reply) == score


#: sha256 of _prepend_conv_prefix(get_judge_prompt(category, "Caroline：I paint.", "She paints.", "painting"))
SENT = {
    "multi-hop": "4bb29a152b26dc8fbbfa795416f37a27c3013cdd32bac4225484190d6bcf514a",
    "temporal": "127e0d93f4936fc2de6395936a613a030f6930b4dcce33bbb509670ede90cdde",
    "common-sense": "e99c66612fd8c951c4ca241e7bd398696b6febf7803a493915446ec40ee66378",
    "single-hop": "59072b049b6dba25559beaf720318dcf2286c78c00d87040f535afe430053650",
    "adversarial": "a2e01091f3bc9cc4904c1055e9352d08564c498548cf3bbb37243b35e5f763d4",
    "Cognitive": "36bc8a6d915aa55fb6ccd4958820cff1402e716df353681466dea80562dc6afc",
    "other": "faec72f6fb62268030768f3624d135a5eed1af517c171d30de1dc49715164d2f",  # the default prompt
}


@pytest.mark.parametrize("category", sorted(SENT))
def test_the_judge_sends_what_the_official_script_sends(category):
    llm = FakeJudgeLLM('{"label": "correct", "reason": "r"}')
    question = Question(
        "q",
        "What does Caroline do?",
        ("painting",),
        meta={
            "judge": "locomo-plus",
            "locomo_plus_category": category,
            "evidence_text": "Caroline：I paint.",
            "ground_truth": "painting",
        },
    )
    asyncio.run(Judge(MetricConfig(judge=llm)).score(ScoreContext(question, "She paints.", ())))  # type: ignore[arg-type]
    ((prompt, _),) = llm.calls
    assert sha(prompt) == SENT[category]


def test_summary_equals_compute_summary():
    """memplug's summary.json over the judge's scores gives _compute_summary's overall_avg
    (0.6429 for these seven) and, pooled over the relation types, its Cognitive avg (0.625)."""
    scored = [
        ("cognitive-causal", 1.0),
        ("cognitive-goal", 0.5),
        ("cognitive-state", 0.0),
        ("cognitive-value", 1.0),
        ("1-multi-hop", 1.0),
        ("2-temporal", 0.0),
        ("5-adversarial", 1.0),
    ]
    records = [
        QuestionRecord(sample_id=f"s{i}", question_id="q", category=c, question="?", scores={"judge": v})
        for i, (c, v) in enumerate(scored)
    ]
    summary = summarize(records, "bm25", "locomo-plus", "r", 0.0, resamples=10)
    assert round(summary.metrics.overall["judge"], 4) == 0.6429
    cognitive = [summary.metrics.by_category[c]["judge"] for c in summary.metrics.by_category if c.startswith("cog")]
    assert round(sum(cognitive) / len(cognitive), 4) == 0.625  # one question per relation type here


#: sha256 of each template of prompt.py PROMPT_TEMPLATES as copied
PINNED = {
    "multi-hop": "6eba7bc55145",
    "single-hop": "e0cc6dfb7fb3",
    "temporal": "f951d90c7a75",
    "common-sense": "3147a06f69f3",
    "adversarial": "2a73bc69e805",
    "Cognitive": "83875348ab83",
    "default": "117bbafb8c4d",
}


def test_prompts_are_pinned_and_equal_the_source_when_at_hand():
    assert {k: sha(v)[:12] for k, v in lp_judge.PROMPT_TEMPLATES.items()} == PINNED
    repo = Path("/work/.mirror/xjtuleeyf+Locomo-Plus/repo")
    if not repo.is_dir():
        pytest.skip("the official repository is not fetched here")
    source = subprocess.run(
        ["git", "--git-dir", str(repo), "show", f"{lp_judge.COMMIT}:evaluation_framework/task_eval/prompt.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.search(r"^PROMPT_TEMPLATES = \{\n.*?^\}\n", source, re.S | re.M)
    assert found is not None
    namespace: dict[str, Any] = {}
    exec(found.group(0), namespace)  # the dict literal of the official file, nothing else
    assert namespace["PROMPT_TEMPLATES"] == lp_judge.PROMPT_TEMPLATES


def test_the_real_data_keeps_the_dataset_contract(shared_data):
    assert_dataset_conforms(
        LoCoMoPlusBuilder(),
        data=shared_data / "locomo_plus" / "locomo_plus_sample.json",
        options={"locomo": str(shared_data / "locomo" / "locomo_conv26.json")},
    )
