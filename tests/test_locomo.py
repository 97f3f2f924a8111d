"""LoCoMo: the loader on the real conversation conv-26, and scoring equal to the official code's."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from inprocess import memplug_main

from memplug.datasets.locomo.builder import LoCoMoBuilder
from memplug.datasets.locomo.release import load_release, parse_evidence
from memplug.datasets.locomo.scoring import LoCoMoF1, LoCoMoF1NoAdversarial, f1_score, normalize_answer
from memplug.errors import MemplugError
from memplug.metrics import SessionHitAtK, session_of
from memplug.models import AgentQuestion, Question, Recalled
from memplug.protocols import BuildOptions, MetricConfig, ScoreContext


@pytest.fixture(scope="module")
def conv26(shared_data: Path) -> Path:
    return shared_data / "locomo" / "locomo_conv26.json"


@pytest.fixture(scope="module")
def sample(conv26):
    (only,) = list(load_release(conv26))
    return only


# -- loader -------------------------------------------------------------------------------


def test_one_sample_of_sessions_in_order_with_turn_ids(sample):
    assert sample.id == "conv-26"
    assert sample.meta["speakers"] == ["Caroline", "Melanie"] and sample.meta["sessions"] == 19
    first = sample.messages[0]
    assert first.id == "D1:1" and first.speaker == "Caroline"
    # the official RAG context's line (task_eval/gpt_utils.py, get_rag_context)
    assert first.text == '1:56 pm on 8 May, 2023: Caroline said, "Hey Mel! Good to see you! How have you been?"'
    assert first.time == "2023-05-08T13:56:00" and first.meta["date_time"] == "1:56 pm on 8 May, 2023"
    sessions = [int(m.id[1:].split(":")[0]) for m in sample.messages]
    assert sessions == sorted(sessions) and sessions[-1] == 19  # session_1 ... session_19, in order
    assert len({m.id for m in sample.messages}) == len(sample.messages)


def test_image_captions_are_text(sample):
    shared = [m for m in sample.messages if "blip_caption" in m.meta]
    assert shared, "conv-26 has shared images"
    assert all(m.text.endswith(f'" and shared {m.meta["blip_caption"]}') for m in shared)


def test_questions_categories_answers_and_targets(sample):
    qs = sample.questions
    assert len(qs) == 199
    counts = {c: sum(q.category == c for q in qs) for c in {q.category for q in qs}}
    assert counts == {"1-multi-hop": 32, "2-temporal": 37, "3-open-domain": 13, "4-single-hop": 70, "5-adversarial": 47}
    assert qs[1].answers == ("2022",)  # an integer answer in the release
    assert qs[37].targets == ("D8:6", "D9:17")  # "D8:6; D9:17"
    adv = next(q for q in qs if q.category == "5-adversarial")
    assert adv.answers == ("Not mentioned in the conversation",)
    assert adv.meta["adversarial_answer"] == "self-care is important" and adv.meta["locomo_category"] == 5
    assert qs[30].targets == () and "unknown_evidence" not in qs[30].meta  # no evidence at all


@pytest.mark.parametrize(
    "raw, ids, bad",
    [
        (["D8:6; D9:17"], ["D8:6", "D9:17"], []),
        (["D:11:26"], ["D11:26"], []),
        (["D30:05"], ["D30:5"], []),
        (["D9:1 D4:4 D4:6", "D4:4"], ["D9:1", "D4:4", "D4:6"], []),
        (["(D4:4)"], ["D4:4"], []),
        (["D"], [], ["D"]),
    ],
)
def test_evidence_strings_are_normalised(raw, ids, bad):
    assert parse_evidence(raw) == (ids, bad)


def _conversation(evidence):
    return [
        {
            "sample_id": "toy",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_2_date_time": "9:00 am on 2 June, 2023",
                "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Later."}],
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I got a dog.", "img_url": ["x"]},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice!"},
                ],
            },
            "qa": [{"question": f"q{i}", "answer": 7, "evidence": ev, "category": 4} for i, ev in enumerate(evidence)],
        }
    ]


def test_an_unknown_evidence_id_warns_for_its_question_only(tmp_path, caplog):
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(_conversation([["D1:01"], ["D1:1", "D9:9"], ["D"], ["D:2:1"]])))
    with caplog.at_level(logging.WARNING):
        (sample,) = list(load_release(path))
    assert [m.id for m in sample.messages] == ["D1:1", "D1:2", "D2:1"]  # session 1 before session 2
    assert sample.messages[0].text == '1:56 pm on 8 May, 2023: Ann said, "I got a dog."'
    q = sample.questions
    assert [x.targets for x in q] == [("D1:1",), ("D1:1",), (), ("D2:1",)]
    assert q[1].meta["unknown_evidence"] == ["D9:9"] and q[2].meta["unknown_evidence"] == ["D"]
    assert "unknown_evidence" not in q[0].meta and "unknown_evidence" not in q[3].meta
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2 and "D9:9" in warned[0] and "qa[1]" in warned[0]


def test_options_categories_and_dates(conv26):
    builder = LoCoMoBuilder()
    (s,) = builder.build(BuildOptions(values={"categories": "1,2,3,4", "dates": "false"}, data=conv26))
    assert len(s.questions) == 152 and all(q.meta["locomo_category"] != 5 for q in s.questions)
    assert s.messages[0].text == 'Caroline said, "Hey Mel! Good to see you! How have you been?"'
    with pytest.raises(MemplugError, match="categories"):
        list(builder.build(BuildOptions(values={"categories": "6"}, data=conv26)))
    with pytest.raises(MemplugError, match="--data"):
        list(builder.build(BuildOptions()))


# -- scoring: the official task_eval/evaluation.py ---------------------------------------

#: snap-research/LoCoMo at this commit: task_eval/evaluation.py, eval_question_answering
OFFICIAL_COMMIT = "3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376"
#: (index in conv-26's qa, prediction, the official eval_question_answering's score), computed
#: once by running the official module (nltk 3.10.4) on these predictions; category-5 rows
#: were given qa["answer"] = adversarial_answer, as the official get_gpt_answers reads it
OFFICIAL = [
    (0, "7 May 2023", 1.0),
    (0, "Caroline went to the LGBTQ support group on 7 May, 2023.", 0.4615384615384615),
    (1, "2022", 1.0),
    (1, "In 2023", 0.0),
    (2, "psychology and counseling", 0.8),
    (14, "Likely no, she would probably not", 0.5),
    (27, "Likely no", 1.0),
    (15, "painting, pottery, camping", 0.75),
    (15, "She likes pottery and running", 0.1),
    (18, "Beaches, the mountains and forests", 0.7777777777777777),
    (40, "Twice", 0.0),
    (40, "2 times", 0.6666666666666666),
    (52, "Oliver, Luna and Bailey", 0.7777777777777777),
    (10, "For four years", 0.4),
    (152, "Not mentioned in the conversation", 1.0),
    (153, "No information available.", 1.0),
    (154, "LGBTQ+ individuals", 0.0),
    (155, "The conversation doesn't mention that.", 0.0),
    (4, "She is a transgender woman.", 0.6666666666666666),
    (7, "", 0.0),
]
OFFICIAL_MEAN = 0.5450213675213675


def _ctx(question: Question, prediction: str, items: Iterable[Recalled] = ()) -> ScoreContext:
    return ScoreContext(question, prediction, tuple(items))


def _scored(score: float | None) -> float:
    assert score is not None
    return score


def test_scores_equal_the_official_code(sample):
    metric, no_adv = LoCoMoF1(), LoCoMoF1NoAdversarial()
    got = [_scored(metric.score(_ctx(sample.questions[i], pred))) for i, pred, _ in OFFICIAL]
    assert got == pytest.approx([s for _, _, s in OFFICIAL], abs=1e-12)
    assert sum(got) / len(got) == pytest.approx(OFFICIAL_MEAN, abs=1e-12)
    assert no_adv.score(_ctx(sample.questions[152], "Not mentioned")) is None
    assert no_adv.score(_ctx(sample.questions[0], "7 May 2023")) == 1.0


def test_the_stemmer_is_nltk_porter():
    # snowballstemmer's "porter" stems "one" to "on" and "news" to "new"; NLTK's keeps them
    assert f1_score("one", "on") == 0.0 and f1_score("running days", "run day") == 1.0
    assert normalize_answer("The cat, and a Dog!") == "cat dog"


def test_metrics_not_applicable_outside_locomo():
    q = Question("q", "?", ("x",))
    assert LoCoMoF1().score(_ctx(q, "x")) is None


CONTEXT = (
    '1:56 pm on 8 May, 2023: Caroline said, "Hey Mel! Good to see you! How have you been?"\n'
    "1:56 pm on 8 May, 2023: Melanie said, \"Hey Caroline! Good to see you! I'm swamped with the kids & work. "
    "What's up with you? Anything new?\""
)
#: snap-research/LoCoMo@3eb6f2c task_eval/gpt_utils.py, as it stands there
OFFICIAL_QA_PROMPT = """
Based on the above context, write an answer in the form of a short phrase for the following question. Answer with exact words from the context whenever possible.

Question: {} Short answer:
"""
OFFICIAL_QA_PROMPT_CAT_5 = """
Based on the above context, answer the following question.

Question: {} Short answer:
"""


def _official_query(qa: dict[str, Any], query_conv: str, draw: float) -> tuple[str, dict[str, str] | None]:
    """get_gpt_answers at batch size 1 with RAG (its lines, ``random.random()`` given as ``draw``):
    the query sent to the model, and the category-5 answer key."""
    cat_5_idxs, questions, answer = [], [], None
    if qa["category"] == 2:
        questions.append(qa["question"] + " Use DATE of CONVERSATION to answer with an approximate date.")
    elif qa["category"] == 5:
        question = qa["question"] + " Select the correct answer: (a) {} (b) {}. "
        if draw < 0.5:
            question = question.format("Not mentioned in the conversation", qa["answer"])
            answer = {"a": "Not mentioned in the conversation", "b": qa["answer"]}
        else:
            question = question.format(qa["answer"], "Not mentioned in the conversation")
            answer = {"b": "Not mentioned in the conversation", "a": qa["answer"]}
        cat_5_idxs.append(len(questions))
        questions.append(question)
    else:
        questions.append(qa["question"])
    query = (
        query_conv + "\n\n" + OFFICIAL_QA_PROMPT.format(questions[0])
        if len(cat_5_idxs) == 0
        else query_conv + "\n\n" + OFFICIAL_QA_PROMPT_CAT_5.format(questions[0])
    )
    return query, answer


def _official_cat_5_answer(model_prediction: str, answer_key: dict[str, str]) -> str:
    # get_cat_5_answer, as it stands
    model_prediction = model_prediction.strip().lower()
    if len(model_prediction) == 1:
        if "a" in model_prediction:
            return answer_key["a"]
        else:
            return answer_key["b"]
    elif len(model_prediction) == 3:
        if "(a)" in model_prediction:
            return answer_key["a"]
        else:
            return answer_key["b"]
    else:
        return model_prediction


def test_each_category_is_asked_as_the_official_script_asks_it(conv26, shared_data):
    """memplug put the date hint and a "Not mentioned" sentence after every question (one
    prompt for all categories); the official script asks each category its own way."""
    (sample,) = list(load_release(conv26, choice_seed=0))
    release = json.loads(conv26.read_text())
    raw = (release if isinstance(release, list) else [release])[0]["qa"]
    protocol = LoCoMoBuilder().info_for({"prompt": "official"}).protocol
    assert protocol.variations == () and protocol.describe()["official"]
    items = [Recalled(m.text, message_ids=(m.id,)) for m in sample.messages[:2]]
    seen = set()
    for question in sample.questions:
        qa = dict(raw[int(question.id[1:])])
        asked = AgentQuestion.of(question)
        draw = 0.0
        if qa["category"] == 5:
            qa.setdefault("answer", qa.get("adversarial_answer"))
            draw = 0.0 if asked.slots["option_a"] == "Not mentioned in the conversation" else 0.9
        query, key = _official_query(qa, CONTEXT, draw)
        (message,) = protocol.messages(asked, items)
        assert message["content"] == query, question.id
        if key is not None:
            for reply in ("a", "(b)", " B ", "x", "(a)", "abc", "The answer is (a)"):
                assert protocol.parse_reply(reply, asked) == _official_cat_5_answer(reply, key), (question.id, reply)
        seen.add((qa["category"], draw))
    assert {c for c, _ in seen} == {1, 2, 3, 4, 5} and {(5, 0.0), (5, 0.9)} <= seen  # both orders drawn


def test_the_option_order_is_drawn_from_the_seed(conv26):
    def orders(seed: int) -> list[str]:
        (sample,) = list(load_release(conv26, choice_seed=seed))
        return [q.meta["slots"]["option_a"] for q in sample.questions if q.category == "5-adversarial"]

    assert orders(0) == orders(0) and orders(0) != orders(1)
    first = [o == "Not mentioned in the conversation" for o in orders(0)]
    assert 0.3 < sum(first) / len(first) < 0.7


def test_one_prompt_for_all_categories_is_a_named_variation(sample):
    protocol = LoCoMoBuilder().info_for({"prompt": "one-prompt-all-categories"}).protocol
    assert protocol.variations == ("one-prompt-all-categories",) and protocol.version == "1"
    items = [Recalled(m.text, message_ids=(m.id,)) for m in sample.messages[:2]]
    (message,) = protocol.messages(AgentQuestion.of(sample.questions[0]), items)
    # get_rag_context: "<date_time>: <speaker> said, \"<text>\"" per line; then "\n\n" + QA_PROMPT
    assert message["content"] == (
        CONTEXT + "\n\n\n"
        "Based on the above context, write an answer in the form of a short phrase for the following question. "
        "Answer with exact words from the context whenever possible.\n\n"
        "Question: When did Caroline go to the LGBTQ support group? Use DATE of CONVERSATION to answer with an "
        "approximate date. If the context does not say, answer: Not mentioned in the conversation. Short answer:\n"
    )


# -- session hit@K ------------------------------------------------------------------------


def test_session_hit_counts_distinct_sessions_in_recall_order():
    q = Question("q", "?", ("x",), targets=("D3:4", "D5:1"))
    items = [
        Recalled("a", message_ids=("D1:1",)),
        Recalled("b", message_ids=("D1:2",)),
        Recalled("c", message_ids=("D2:1",)),
        Recalled("d", message_ids=("D5:9",)),
    ]
    assert SessionHitAtK(MetricConfig(top_k=3)).score(_ctx(q, "", items)) == 1.0  # D1, D2, D5
    assert SessionHitAtK(MetricConfig(top_k=2)).score(_ctx(q, "", items)) == 0.0  # D1, D2
    assert SessionHitAtK(MetricConfig(top_k=2)).name == "session_hit@2"
    assert SessionHitAtK().score(_ctx(Question("q", "?", ("x",), targets=("7",)), "", items)) is None
    assert SessionHitAtK().score(_ctx(q, "", [Recalled("no ids")])) is None
    assert SessionHitAtK().score(_ctx(q, "", [])) == 0.0
    assert session_of("D12:3") == "D12" and session_of("12") is None


# -- bm25 end to end ----------------------------------------------------------------------

#: `memplug eval --agent bm25 --dataset locomo --data .../locomo_conv26.json` (the protocol's
#: depth 5, one turn per chunk, extractive reader): memplug's recall@5 over the 197 questions with evidence, and over
#: categories 1-4 (150); its session hit@5 over categories 1-4
BM25_RECALL_AT_5 = 0.4682741116751269
BM25_RECALL_AT_5_CAT_1_4 = 0.4583333333333333
BM25_SESSION_HIT_AT_5_CAT_1_4 = 0.84
#: the official eval_question_answering's recall on the same run's recalled ids (its
#: ``prediction_context``) and replies, computed once by running the official module on the
#: run's samples.jsonl: it counts the 2 questions without evidence as 1 and
#: the unsplit "D8:6; D9:17" as never found, so it differs from memplug's recall@5 above.
#: The F1s are of the extractive reader that answers from a turn's words, not its
#: '<date_time>: Speaker said,' frame (readers._roles, reader version 2), computed by the
#: official module (snap-research/LoCoMo @ 3eb6f2c, task_eval/evaluation.py
#: eval_question_answering) on the run's `report --export` file; the reader before gave
#: 0.05710717666082726 and 0.07476531681253043
OFFICIAL_RECALL_ON_BM25_RUN = 0.47361809045226133
OFFICIAL_F1_ON_BM25_RUN = 0.08632554590284414
OFFICIAL_F1_ON_BM25_RUN_CAT_1_4 = 0.11301831338596041


def _official_recall(qa_evidence: list[str], context: list[str]) -> float:
    # task_eval/evaluation.py, eval_question_answering, its dialog-recall branch
    if not qa_evidence:
        return 1.0
    return sum(ev in context for ev in qa_evidence) / len(qa_evidence)


def test_bm25_recall_on_conv26(conv26, tmp_path):
    res = memplug_main(
        ["eval", "--agent", "bm25", "--dataset", "locomo", "--data", str(conv26), "--output", str(tmp_path)]
    )  # in process, through the console script's entry
    assert res.returncode == 0, res.stderr[-2000:]
    (run,) = tmp_path.iterdir()
    summary = json.loads((run / "summary.json").read_text())
    resolved = json.loads((run / "run.json").read_text())["resolved"]
    # the official prompts per category (version 2): the scores below are those of version 1
    assert resolved["protocol"]["name"] == "locomo-rag" and resolved["protocol"]["version"] == "2"
    assert resolved["protocol"]["variations"] == [] and resolved["protocol"]["official"]
    assert resolved["top_k"] == 5 and resolved["memory_unit"] == "message"
    overall = summary["metrics"]["overall"]
    assert overall["recall@5"] == pytest.approx(BM25_RECALL_AT_5, abs=1e-6)
    assert overall["locomo_f1"] == pytest.approx(OFFICIAL_F1_ON_BM25_RUN, abs=1e-6)
    assert overall["locomo_f1_no_adv"] == pytest.approx(OFFICIAL_F1_ON_BM25_RUN_CAT_1_4, abs=1e-6)
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    main = [r for r in records if r["question_meta"]["locomo_category"] != 5]
    recall = [r["scores"]["recall@5"] for r in main if r["scores"]["recall@5"] is not None]
    hit = [r["scores"]["session_hit@5"] for r in main if r["scores"]["session_hit@5"] is not None]
    assert sum(recall) / len(recall) == pytest.approx(BM25_RECALL_AT_5_CAT_1_4)
    assert sum(hit) / len(hit) == pytest.approx(BM25_SESSION_HIT_AT_5_CAT_1_4)
    official = [
        _official_recall(r["question_meta"]["evidence"], [m for item in r["recalled"][:5] for m in item["message_ids"]])
        for r in records
    ]
    assert sum(official) / len(official) == pytest.approx(OFFICIAL_RECALL_ON_BM25_RUN)


def test_an_llm_reply_to_the_two_way_choice_is_the_option_it_names(conv26, openai_stub, tmp_path):
    """The official get_cat_5_answer maps a reply "(a)" to option a's text, which is then scored;
    an extractive reader's span (it is never shown the choice) is left as it is (above)."""
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    openai_stub.reply = lambda body: "(a)"
    spec = RunSpec(
        agent="bm25",
        dataset="locomo",
        data=str(conv26),
        llm="openai/stub",
        api_base=openai_stub.base_url,
        dataset_options={"categories": "5"},
        limit=6,
    )
    records = RunDir(Evaluation(spec).run(output=tmp_path)).records()
    assert len(records) == 6
    for record in records:
        option_a = record.question_meta["slots"]["option_a"]
        assert record.reply == "(a)" and record.prediction == option_a
        assert record.scores["locomo_f1"] == float(option_a == "Not mentioned in the conversation")
