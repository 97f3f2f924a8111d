"""LongMemEval: the loader on fixtures in the release's exact layout, the official protocol and judge."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from memplug.cli import cli

from memplug.answering import protocol_of
from memplug.datasets.longmemeval import release
from memplug.datasets.longmemeval.builder import PROMPT_COT, LongMemEvalBuilder, answer_protocol
from memplug.datasets.longmemeval.release import check_provenance, load_release, parse_date
from memplug.datasets.longmemeval.scoring import Abstention, declines
from memplug.errors import DataError, MemplugError
from memplug.metrics import RecallAtK, SessionHitAtK
from memplug.models import AgentQuestion, Recalled
from memplug.protocols import BuildOptions, MetricConfig, ScoreContext

FIXTURES = Path(__file__).parent / "fixtures" / "longmemeval"
S_FILE = FIXTURES / "longmemeval_s_cleaned.json"


@pytest.fixture
def memplug_cli():
    return lambda *args, env=None: CliRunner().invoke(cli, list(args), env=env)


@pytest.fixture(scope="module")
def samples():
    return {s.id: s for s in load_release(S_FILE)}


def test_one_sample_per_question_with_its_haystack_in_order(samples):
    assert list(samples) == ["e47becba", "6a1eabeb", "gpt4_2655b836_abs", "7161e7e2", "0a995998", "8a2466db"]
    s = samples["e47becba"]
    assert [m.id for m in s.messages][:3] == ["sharegpt_yywfLx0_0:1", "sharegpt_yywfLx0_0:2", "answer_280352e9:1"]
    first = s.messages[2]
    assert first.speaker == "user" and first.time == "2023-05-22T14:05:00"
    assert first.meta == {"session": "answer_280352e9", "date": "2023/05/22 (Mon) 14:05"}
    # the official chunk text, has_answer left out (run_generation.py pops it)
    assert first.text.startswith('Session Date: 2023/05/22 (Mon) 14:05\nSession Content:\n\n[{"role": "user"')
    assert "has_answer" not in first.text


def test_question_time_targets_and_categories(samples):
    (q,) = samples["e47becba"].questions
    assert q.time == "2023-05-30T23:40:00" and AgentQuestion.of(q).time_text == "2023/05/30 (Tue) 23:40"
    assert q.targets == ("answer_280352e9:1",) and q.category == "single-session-user"
    assert q.meta["answer_session_ids"] == ["answer_280352e9"] and q.meta["judge"] == "longmemeval"
    (ku,) = samples["6a1eabeb"].questions
    assert ku.targets == ("answer_a1b2c3d4_1:1", "answer_a1b2c3d4_2:1")
    (count,) = samples["0a995998"].questions
    assert count.answers == ("3",) and count.meta["answer"] == 3  # an integer answer
    cats = {s.questions[0].category for s in samples.values()}
    assert cats == {
        "single-session-user",
        "knowledge-update",
        "temporal-reasoning_abs",
        "single-session-assistant",
        "multi-session",
        "single-session-preference",
    }


def test_abstention_questions_have_no_targets_and_no_answer_metrics(samples):
    (q,) = samples["gpt4_2655b836_abs"].questions
    assert q.meta["abstention"] and q.category == "temporal-reasoning_abs"
    assert q.targets == () and q.answers == ()  # the official retrieval metrics skip them
    assert q.meta["answer"].startswith("The information provided is not enough")
    metric = Abstention()
    assert metric.score(ScoreContext(q, "You never mentioned buying a violin.", ())) == 1.0
    assert metric.score(ScoreContext(q, "12 days before.", ())) == 0.0
    other = samples["e47becba"].questions[0]
    assert metric.score(ScoreContext(other, "I don't know", ())) is None


def test_assistant_evidence_only_with_evidence_all(samples):
    # the official retrieval indexes user turns only: no target, like the official skip
    assert samples["7161e7e2"].questions[0].targets == ()
    (s,) = [x for x in load_release(S_FILE, evidence="all") if x.id == "7161e7e2"]
    assert s.questions[0].targets == ("answer_sharegpt_77aa88bb:2",)


def test_recall_and_session_hit_read_the_session_before_the_last_colon(samples):
    (q,) = samples["6a1eabeb"].questions
    items = (Recalled("x", message_ids=("sharegpt_Qm3xT9a_0:1",)), Recalled("y", message_ids=("answer_a1b2c3d4_2:1",)))
    config = MetricConfig(top_k=2)
    assert RecallAtK(config).score(ScoreContext(q, "", items)) == 0.5
    assert SessionHitAtK(MetricConfig(top_k=1)).score(ScoreContext(q, "", items)) == 0.0
    assert SessionHitAtK(config).score(ScoreContext(q, "", items)) == 1.0


def test_oracle_layout_loads_too():
    loaded = list(load_release(FIXTURES / "longmemeval_oracle.json"))
    assert len(loaded) == 6
    assert all(
        set(m.meta["session"] for m in s.messages) <= set(s.questions[0].meta["answer_session_ids"]) for s in loaded
    )


def test_the_prompt_is_the_official_generation_prompt(samples):
    protocol = answer_protocol()
    assert protocol.top_k == 50 and protocol.unit == "message"
    s = samples["e47becba"]
    items = [Recalled(m.text, message_ids=(m.id,)) for m in s.messages[2:4]]
    (msg,) = protocol.messages(AgentQuestion.of(s.questions[0]), items)
    # what run_generation.py's prepare_prompt writes for these two chunks
    history = "".join(
        "\n### Session {}:\nSession Date: {}\nSession Content:\n{}\n".format(
            i + 1,
            "2023/05/22 (Mon) 14:05",
            "\n" + json.dumps([{"role": m.speaker, "content": json.loads(m.text.split("\n\n", 1)[1])[0]["content"]}]),
        )
        for i, m in enumerate(s.messages[2:4])
    )
    assert msg["content"] == PROMPT_COT.format(history, "2023/05/30 (Tue) 23:40", "What degree did I graduate with?")
    assert set(protocol.describe()["variations"]) == {"turn-not-round", "recall-order"}


def test_options_and_info_for(tmp_path):
    builder = LongMemEvalBuilder()
    info = builder.info_for({"prompt": "direct", "evidence": "user", "text": "official", "judge": "longmemeval"})
    assert "Answer:" in protocol_of(info).user and "prompt=direct" in protocol_of(info).variations
    with pytest.raises(MemplugError, match="prompt"):
        builder.info_for({"prompt": "x", "evidence": "user", "text": "official", "judge": "longmemeval"})
    with pytest.raises(MemplugError, match="unknown judge"):
        list(builder.build(BuildOptions(values={"judge": "nope"}, data=S_FILE)))
    with pytest.raises(MemplugError, match="--data"):
        list(builder.build(BuildOptions()))
    plain = next(iter(builder.build(BuildOptions(values={"text": "plain"}, data=S_FILE))))
    assert plain.messages[0].text == "Can you suggest a good recipe for banana bread?"


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda r: r.pop("question_date"), "question_date"),
        (lambda r: r.update(question_type="open-domain"), "question_type"),
        (lambda r: r["haystack_dates"].pop(), "haystack_dates"),
        (lambda r: r["haystack_sessions"][0].append({"role": "user"}), "role"),
        (lambda r: r.update(answer=None), "answer"),
    ],
)
def test_malformed_rows_name_the_place(tmp_path, mutate, match):
    rows = json.loads(S_FILE.read_text())
    mutate(rows[1])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(DataError, match=match) as err:
        list(load_release(path))
    assert "[1] (6a1eabeb)" in str(err.value) or "[1]" in str(err.value)


def test_an_object_that_wraps_the_list_is_named_as_such(tmp_path):
    """{"data": [...]} read as one question: "[0]: missing 'question_id'" sent the user
    looking in the questions."""
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"data": json.loads(S_FILE.read_text())}))
    with pytest.raises(DataError, match=r"expected a JSON list of questions, got an object \(keys: data\)"):
        list(load_release(path))


def test_dates():
    assert parse_date("2023/05/20 (Sat) 02:21") == "2023-05-20T02:21:00"
    assert parse_date("sometime") == "sometime"


def test_declines():
    assert declines("You did not mention that.") and declines("I don't know.")
    assert not declines("It was 25:50.")


def test_provenance_warns_naming_the_file(tmp_path, caplog):
    copy = tmp_path / "longmemeval_s_cleaned.json"
    copy.write_bytes(S_FILE.read_bytes())
    digest = release.file_sha256(copy)
    assert check_provenance(copy, {"longmemeval_s_cleaned.json": digest}) is None
    with caplog.at_level(logging.WARNING):
        message = check_provenance(copy, {"longmemeval_s_cleaned.json": "0" * 64})
    assert message and str(copy) in message and "not that of the official" in caplog.text
    # the original file's content under the cleaned file's name: the mix-up named
    mixed = check_provenance(copy, {"longmemeval_s.json": digest, "longmemeval_s_cleaned.json": "0" * 64})
    assert mixed and "is the release longmemeval_s.json" in mixed
    assert check_provenance(copy, {}) is None and release.KNOWN_SHA256 == {}


def test_end_to_end_offline(tmp_path, memplug_cli):
    out = memplug_cli(
        "eval", "--agent", "bm25", "--dataset", "longmemeval", "--data", str(S_FILE), "--output", str(tmp_path)
    )
    assert out.exit_code == 0, out.output
    (run,) = tmp_path.iterdir()
    resolved = json.loads((run / "run.json").read_text())["resolved"]
    assert resolved["protocol"]["name"] == "longmemeval-rag" and resolved["top_k"] == 50
    assert list(resolved["data_sha256"].values())[0] == release.file_sha256(S_FILE)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["metrics"]["overall"]["recall@50"] == 1.0 and summary["n"]["overall"]["recall@50"] == 4
    assert summary["metrics"]["by_category"]["temporal-reasoning_abs"] == {"abstention": 0.0}


def test_end_to_end_with_the_official_judge(tmp_path, memplug_cli, openai_stub):
    prompts = []

    def reply(body):
        prompts.append(body)
        return "Yes." if "Abstention" not in body["messages"][-1]["content"] else "no"

    openai_stub.reply = reply
    out = memplug_cli(
        "eval",
        "--agent",
        "bm25",
        "--dataset",
        "longmemeval",
        "--data",
        str(S_FILE),
        "--judge",
        "openai/stub",
        "--api-base",
        openai_stub.base_url,
        "--output",
        str(tmp_path),
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert out.exit_code == 0, out.output
    judged = [
        b
        for b in openai_stub.chat_requests
        if "Is the model response correct?" in b["messages"][-1]["content"]
        or "unanswerable" in b["messages"][-1]["content"]
    ]
    assert len(judged) == 6 and all(b["max_tokens"] == 10 and b["temperature"] == 0 for b in judged)
    assert (
        sum(
            "Does the model correctly identify the question as unanswerable?" in b["messages"][-1]["content"]
            for b in judged
        )
        == 1
    )
    (run,) = tmp_path.iterdir()
    judge = json.loads((run / "run.json").read_text())["resolved"]["judge"]
    assert judge["name"] == "longmemeval" and judge["model"] == "openai/stub"
    assert judge["prompt_sha256"] == judge["judges"]["longmemeval"]["sha256"]
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert all(r["scores"]["judge"] == 1.0 for r in records)
