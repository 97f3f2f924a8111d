"""LoCoMo-Plus: the loader on small files in the release's layout, the protocol, the judge, the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memplug.answering import protocol_of
from memplug.cli import cli
from memplug.datasets.locomo_plus.builder import CONV_START, INSTRUCTION_COGNITIVE, INSTRUCTION_QA, LoCoMoPlusBuilder
from memplug.datasets.locomo_plus.judge import LOCOMO_PLUS, PROMPT_TEMPLATES, sent
from memplug.datasets.locomo_plus.release import parse_time_gap
from memplug.errors import DataError, MemplugError
from memplug.judge import Judge, judge_set
from memplug.models import AgentQuestion, Recalled
from memplug.protocols import BuildOptions, MetricConfig, ScoreContext
from memplug.rescoring import rescore_run
from memplug.testing import assert_dataset_conforms
from test_judge import FakeJudgeLLM


def turn(speaker: str, dia_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


#: a LoCoMo conversation in locomo10.json's layout: two sessions a month apart, one question per category
CONVERSATION = {
    "sample_id": "conv-1",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            turn("Ana", "D1:1", "I adopted a cat called Biscuit."),
            turn("Ben", "D1:2", "Lovely! I started pottery.", blip_caption="a photo of a vase"),
        ],
        "session_2_date_time": "10:00 am on 8 June, 2023",
        "session_2": [turn("Ana", "D2:1", "Biscuit learned to open doors."), turn("Ben", "D2:2", "Ha, clever cat.")],
    },
    "qa": [
        {
            "question": "What pets and hobbies came up?",
            "answer": "cat, pottery",
            "evidence": ["D1:1", "D1:2"],
            "category": 1,
        },
        {"question": "When did Ana adopt Biscuit?", "answer": 2023, "evidence": ["D1:1"], "category": 2},
        {
            "question": "Would Ana like a pet door?",
            "answer": "Likely yes; the cat opens doors",
            "evidence": ["D2:1 D1:1"],
            "category": 3,
        },
        {"question": "What is the cat called?", "answer": "Biscuit", "evidence": ["D1:1; D2:1"], "category": 4},
        {"question": "What is Ben's dog called?", "adversarial_answer": "Rex", "evidence": ["D9:9"], "category": 5},
    ],
}


def plus_item(relation: str, gap: str, cue: str, trigger: str) -> dict[str, Any]:
    return {
        "relation_type": relation,
        "cue_dialogue": cue,
        "trigger_query": trigger,
        "time_gap": gap,
        "model_name": "test",
        "scores": {},
        "ranks": {},
        "final_similarity_score": 0.5,
    }


ITEMS = [
    plus_item(
        "causal",
        "one week later",
        "A: Since my fall I avoid ladders.\nB: Sensible.",
        "A: Could you help me clean the gutters this weekend?",
    ),
    plus_item(
        "state", "about one month later", "A: I've been sleeping badly for weeks.", "A: Why am I so tired at work?"
    ),
    plus_item(
        "goal",
        "two years later",
        "A: I want to run a marathon.\nB: Go for it!\nnot a turn",
        "A: Should I buy new shoes?",
    ),
    plus_item("value", "several months later", "B: I never eat meat.\nA: Noted.", "A: Let's get burgers!"),
]


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """The repository's data/ folder: locomo_plus.json beside locomo10.json."""
    (tmp_path / "locomo10.json").write_text(json.dumps([CONVERSATION]))
    (tmp_path / "locomo_plus.json").write_text(json.dumps(ITEMS))
    return tmp_path


def samples_of(release: Path, **values: Any) -> dict[str, Any]:
    return {s.id: s for s in LoCoMoPlusBuilder().build(BuildOptions(values=values, data=release))}


def test_parse_time_gap_as_build_conv():
    assert [
        parse_time_gap(g)
        for g in (
            "two weeks later",
            "about one month later",
            "a year after",
            "3 months later",
            "several months later",
            "twelve weeks later",
            "an hour later",
        )
    ] == [14, 30, 365, 90, 0, 84, 0]


def test_locomo_conversations_then_one_sample_per_item(release):
    samples = samples_of(release)
    assert list(samples) == ["conv-1", "plus-0", "plus-1", "plus-2", "plus-3"]
    categories = [q.category for s in samples.values() for q in s.questions]
    assert categories == [
        "1-multi-hop",
        "2-temporal",
        "3-common-sense",
        "4-single-hop",
        "5-adversarial",
        "cognitive-causal",
        "cognitive-state",
        "cognitive-goal",
        "cognitive-value",
    ]


def test_locomo_questions_keep_locomo_scoring_and_get_what_the_judge_is_shown(release):
    q1, q2, q3, q4, q5 = samples_of(release)["conv-1"].questions
    assert q1.meta["locomo_category"] == 1 and q1.answers == ("cat, pottery",)  # locomo_f1 reads these
    assert q1.meta["evidence_text"] == "Ana：I adopted a cat called Biscuit.\nBen：Lovely! I started pottery."
    assert q2.meta["ground_truth"] == "2023"
    # split at ";" only, as unified_input._parse_evidence_list: "D2:1 D1:1" is one unparsable id
    assert q3.meta["evidence_text"] == "[D2:1 D1:1] [Parse error]"
    assert q4.meta["evidence_text"] == "Ana：I adopted a cat called Biscuit.\nAna：Biscuit learned to open doors."
    assert q5.meta["ground_truth"] == "" and q5.meta["evidence_text"] == "[D9:9] [Missing turn]"
    assert {q.meta["judge"] for q in (q1, q2, q3, q4, q5)} == {"locomo-plus"}
    assert (
        samples_of(release)["conv-1"].messages[1].text
        == '1:56 pm on 8 May, 2023: Ben said, "Lovely! I started pottery." and shared a photo of a vase'
    )


def test_cue_stitched_by_time_gap_and_trigger_asked_after(release):
    samples = samples_of(release)
    week = samples["plus-0"]  # query 15 June, cue 8 June 10:00: after session 2 (ties keep the session first)
    assert [m.id for m in week.messages] == ["D1:1", "D1:2", "D2:1", "D2:2", "cue:1", "cue:2"]
    assert week.messages[4].text == 'Ana said, "Since my fall I avoid ladders."' and week.messages[4].speaker == "Ana"
    assert week.messages[5].speaker == "Ben" and week.messages[1].text == 'Ben said, "Lovely! I started pottery."'
    (q,) = week.questions
    assert q.text == 'Ana said, "Could you help me clean the gutters this weekend?"'
    assert q.time == "2023-06-15T10:00:00" and week.meta["cue_time"] == "2023-06-08T10:00:00"
    assert q.targets == ("cue:1", "cue:2") and q.meta["locomo_plus_category"] == "Cognitive"
    assert q.answers == ("Ana：Since my fall I avoid ladders.\nBen：Sensible.",) == (q.meta["evidence_text"],)
    month = samples["plus-1"]  # cue 16 May: between the sessions
    assert [m.id for m in month.messages] == ["D1:1", "D1:2", "cue:1", "D2:1", "D2:2"]
    years = samples["plus-2"]  # before everything; the line without A:/B: is dropped
    assert [m.id for m in years.messages][:3] == ["cue:1", "cue:2", "D1:1"] and years.meta["cue_session_idx"] is None
    several = samples["plus-3"]  # "several" parses as 0 days: the cue on the query's day, last; B maps to speaker_b
    assert [m.id for m in several.messages][-2:] == ["cue:1", "cue:2"] and several.messages[-2].speaker == "Ben"


def test_items_pair_with_conversations_in_turn(tmp_path, release):
    second = json.loads(json.dumps(CONVERSATION).replace("Ana", "Cleo"))
    second["sample_id"] = "conv-2"
    (release / "locomo10.json").write_text(json.dumps([CONVERSATION, second]))
    samples = samples_of(release, categories="cognitive")
    assert [s.meta["conversation"] for s in samples.values()] == ["conv-1", "conv-2", "conv-1", "conv-2"]


def test_categories_option(release):
    assert list(samples_of(release, categories="cognitive")) == ["plus-0", "plus-1", "plus-2", "plus-3"]
    only = samples_of(release, categories="2,4")
    assert list(only) == ["conv-1"] and [q.category for q in only["conv-1"].questions] == ["2-temporal", "4-single-hop"]
    with pytest.raises(MemplugError, match="option categories='6'"):
        samples_of(release, categories="6")


def test_official_model_input_per_category_with_recalled_turns():
    protocol = protocol_of(LoCoMoPlusBuilder.info)
    assert protocol.variations == () and protocol.name == "locomo-plus"
    items = [Recalled('Ana said, "Since my fall I avoid ladders."'), Recalled('Ben said, "Sensible."')]
    trigger = AgentQuestion("trigger", 'Ana said, "Could you help me clean the gutters?"', "cognitive-causal")
    (message,) = protocol.messages(trigger, items)
    # utils._build_model_input(input_prompt, category="Cognitive"): the stitched lines, the trigger last
    assert message["content"] == (
        CONV_START + INSTRUCTION_COGNITIVE + 'Ana said, "Since my fall I avoid ladders."\n'
        'Ben said, "Sensible."\nAna said, "Could you help me clean the gutters?"'
    )
    question = AgentQuestion("q0", "What is the cat called?", "4-single-hop")
    (message,) = protocol.messages(question, items[:1])
    assert message["content"] == (
        CONV_START + INSTRUCTION_QA + 'Ana said, "Since my fall I avoid ladders."\n\nQuestion: What is the cat called?'
    )


def test_the_dataset_keeps_the_contract(release):
    assert_dataset_conforms(LoCoMoPlusBuilder(), data=release)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda items: items[0].pop("time_gap"), r"locomo_plus.json: \[0\]: missing 'time_gap'"),
        (lambda items: items[1].update(trigger_query="Could you help?"), r"\[1\]: trigger_query has no line starting"),
        (lambda items: items.clear(), "expected a non-empty list"),
        (lambda items: items[2].update(relation_type="mood"), r"\[2\]: relation_type 'mood' is not one of causal"),
    ],
)
def test_bad_items_are_one_line(release, mutate, message):
    items = json.loads(json.dumps(ITEMS))
    mutate(items)
    (release / "locomo_plus.json").write_text(json.dumps(items))
    with pytest.raises(DataError, match=message):
        samples_of(release)


def test_bad_session_date_is_one_line(release):
    bad = json.loads(json.dumps(CONVERSATION))
    bad["conversation"]["session_2_date_time"] = "yesterday"
    (release / "locomo10.json").write_text(json.dumps([bad]))
    with pytest.raises(DataError, match="session_2_date_time: session date 'yesterday' is not like"):
        samples_of(release, categories="cognitive")


def test_where_the_files_are(tmp_path, release):
    plus = release / "locomo_plus.json"
    assert list(samples_of(plus, categories="cognitive"))[:1] == ["plus-0"]  # locomo10.json beside it
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "items.json").write_text(json.dumps(ITEMS))
    with pytest.raises(MemplugError, match="needs a LoCoMo file: pass -o locomo=locomo10.json"):
        samples_of(elsewhere / "items.json")
    assert len(samples_of(elsewhere / "items.json", locomo=release / "locomo10.json")) == 5
    with pytest.raises(MemplugError, match="option locomo=.*: no such file"):
        samples_of(plus, locomo=tmp_path / "nope.json")
    with pytest.raises(MemplugError, match="no locomo_plus.json in that folder"):
        samples_of(elsewhere)
    with pytest.raises(MemplugError, match="no such file or folder"):
        samples_of(tmp_path / "missing.json")
    with pytest.raises(MemplugError, match="loads the release: pass --data"):
        list(LoCoMoPlusBuilder().build(BuildOptions()))


# -- the judge ------------------------------------------------------------------------------


def judged(
    reply: str, question: Any, prediction: str = "Maybe not the ladder."
) -> tuple[float | None, str, dict[str, Any]]:
    llm = FakeJudgeLLM(reply)
    score = asyncio.run(Judge(MetricConfig(judge=llm)).score(ScoreContext(question, prediction, ())))  # type: ignore[arg-type]
    ((prompt, params),) = llm.calls
    return score, prompt, params


def test_cognitive_question_is_judged_on_its_cue(release):
    (q,) = samples_of(release)["plus-0"].questions
    score, prompt, params = judged('{"label": "correct", "reason": "uses the fall"}', q)
    assert score == 1.0 and params == {"temperature": 0, "seed": 0, "max_tokens": 512}
    assert prompt == sent(PROMPT_TEMPLATES["Cognitive"]).format(
        evidence="Ana：Since my fall I avoid ladders.\nBen：Sensible.", pred="Maybe not the ladder.", gold=""
    )
    assert prompt.startswith("Below is a conversation between two people: A and B.")
    assert judged('{"label": "partial", "reason": "vague"}', q)[0] == 0.5
    assert judged("I refuse", q)[0] == 0.0  # no label: 0, as the official summary counts it


def test_locomo_questions_get_their_category_prompt(release):
    q1, q2, _, _, q5 = samples_of(release)["conv-1"].questions
    _, prompt, _ = judged('{"label": "wrong", "reason": "x"}', q2, "In May")
    assert "You are a Temporal Logic Judge." in prompt and "Reference Answer:\n2023\n" in prompt
    _, prompt, _ = judged('{"label": "correct", "reason": "x"}', q5, "Not mentioned.")
    assert "You are a Skeptical Judge" in prompt and "Model Prediction:\nNot mentioned." in prompt
    assert judge_set("locomo-plus") is LOCOMO_PLUS


def test_end_to_end_offline_and_with_the_judge(tmp_path, release, openai_stub, monkeypatch):
    out = CliRunner().invoke(
        cli,
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "locomo-plus",
            "--data",
            str(release),
            "--output",
            str(tmp_path / "offline"),
            "--quiet",
        ],
    )
    assert out.exit_code == 0, out.output
    (run,) = (tmp_path / "offline").iterdir()
    summary = json.loads((run / "summary.json").read_text())
    by = summary["metrics"]["by_category"]
    assert "locomo_f1" in by["4-single-hop"] and "locomo_f1" not in by["cognitive-goal"]  # unscored, not 0
    assert "judge" not in summary["metrics"]["overall"] and "recall@5" in by["cognitive-goal"]

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        label = "partial" if "Memory Awareness Judge" in prompt else "wrong" if "Temporal" in prompt else "correct"
        return json.dumps({"label": label, "reason": "r"})

    openai_stub.reply = reply
    out = CliRunner().invoke(
        cli,
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "locomo-plus",
            "--data",
            str(release),
            "--judge",
            "openai/stub",
            "--api-base",
            openai_stub.base_url,
            "--output",
            str(tmp_path / "judged"),
            "--quiet",
        ],
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert out.exit_code == 0, out.output
    (run,) = (tmp_path / "judged").iterdir()
    metrics = json.loads((run / "summary.json").read_text())["metrics"]
    # llm_as_judge._compute_summary of these nine labels: overall_avg 0.6667 (6 of 9), Cognitive 0.5
    assert metrics["overall"]["judge"] == pytest.approx(6 / 9)
    assert {c: m["judge"] for c, m in metrics["by_category"].items()} == {
        "1-multi-hop": 1.0,
        "2-temporal": 0.0,
        "3-common-sense": 1.0,
        "4-single-hop": 1.0,
        "5-adversarial": 1.0,
        "cognitive-causal": 0.5,
        "cognitive-goal": 0.5,
        "cognitive-state": 0.5,
        "cognitive-value": 0.5,
    }
    judge = json.loads((run / "run.json").read_text())["resolved"]["judge"]
    assert judge["name"] == "locomo-plus" and judge["prompt_sha256"] == LOCOMO_PLUS.sha256
    # an offline run judged afterwards, from its stored records: the same figures
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (offline,) = (tmp_path / "offline").iterdir()
    rescored = rescore_run(offline, ["judge"], judge="openai/stub", api_base=openai_stub.base_url)
    assert json.loads(rescored.summary_path.read_text())["metrics"]["overall"]["judge"] == pytest.approx(6 / 9)
