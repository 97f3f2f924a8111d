"""Judges as named, pinned prompt sets: the official prompts verbatim, which judge a question
gets, what run.json records, and the leniency check against the loopback OpenAI stub."""

from __future__ import annotations

import asyncio
import ast
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memplug.cli import cli
from memplug.datasets.locomo import judge as locomo_j
from memplug.datasets.longmemeval import judge as lme
from memplug.judge_checks import check_leniency, leniency_set
from memplug.errors import MemplugError
from memplug.judge import JUDGE_ENV, MEMPLUG, Judge, judge_registry, judge_set, read_label
from memplug.models import Question
from memplug.protocols import ScoreContext
from test_judge import FakeJudgeLLM, judge_config

#: sha256 of each official prompt as copied (checked against the source below when it is at hand)
PINNED = {
    "LME_FACT": "fba020ba3d57982efdc9a937c1c01f897b789a608c7f88e60244121f6505e5bc",
    "LME_TEMPORAL": "8d33a5fdd83afeeb4592454a965eab43d1fcb2dedc042d1d3892f4254be6c273",
    "LME_KNOWLEDGE_UPDATE": "183a9b3a6197ec620940f610cdc1207201ec98c1113dd633ea685cfc322fafac",
    "LME_PREFERENCE": "741ee3bcbea7ff5e8ed359acef61d2f8ded3de021bbcff6ee13de455f2e2aa9b",
    "LME_ABSTENTION": "5c0b365a1e1d06db36377c735432b56e122ca3c428f89faf61d43a0d5a7e050b",
    "MEM0_ACCURACY_PROMPT": "62395dd312a631dfd9355026a0b69cc936018274c3198b6365b5c2a5c9bca9e0",
}
MIRRORS = Path("/work/.mirror")


@pytest.mark.parametrize("name", sorted(PINNED))
def test_official_prompts_are_pinned(name):
    import hashlib

    prompt = getattr(lme if name.startswith("LME_") else locomo_j, name)
    assert hashlib.sha256(prompt.encode()).hexdigest() == PINNED[name]


def _git_show(repo: Path, rev: str, path: str) -> str | None:
    if not repo.is_dir():
        return None
    res = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, text=True)
    return res.stdout if res.returncode == 0 else None


def test_prompts_equal_the_official_sources_when_at_hand():
    lme_source = _git_show(MIRRORS / "xiaowu0162+LongMemEval" / "repo", lme.LME_COMMIT, "src/evaluation/evaluate_qa.py")
    mem0_source = _git_show(MIRRORS / "mem0ai+mem0" / "repo", locomo_j.MEM0_COMMIT, "evaluation/metrics/llm_judge.py")
    if lme_source is None or mem0_source is None:
        pytest.skip("the official repositories are not fetched here")
    found = [ast.literal_eval(t) for t in re.findall(r'template = (".*?")\n', lme_source)]
    assert found == [lme.LME_FACT, lme.LME_TEMPORAL, lme.LME_KNOWLEDGE_UPDATE, lme.LME_PREFERENCE, lme.LME_ABSTENTION]
    accuracy = re.search(r'ACCURACY_PROMPT = """(.*?)"""', mem0_source, re.S)
    assert accuracy is not None and accuracy.group(1) == locomo_j.MEM0_ACCURACY_PROMPT


def test_register_judges(plugins):
    """A plugin's judge is found by name through the register_judges hook."""
    from memplug.hookspecs import hookimpl
    from memplug.judge import JudgePrompt, JudgeSet

    mine = JudgeSet(
        name="always-strict",
        version="1",
        source="test",
        prompts=(JudgePrompt("p", "1", "test", "Q {question} G {gold} A {prediction} {choices}"),),
        choose=lambda q: "p",
    )

    class Plugin:
        @hookimpl
        def register_judges(self, register):
            register("always-strict", mine)

    plugin = Plugin()
    plugins.register(plugin, name="judges-test")
    try:
        found = judge_set("always-strict", plugins)
    finally:
        plugins.unregister(plugin)
    assert found is mine or found == mine


def test_registry_holds_the_three_judges():
    assert {"memplug", "longmemeval", "locomo-j"} <= set(judge_registry().names())
    with pytest.raises(MemplugError, match="unknown judge 'nope'"):
        judge_set("nope")


def score(judge: Judge, prediction: str, question: Question) -> float | None:
    return asyncio.run(judge.score(ScoreContext(question, prediction, ())))


def lme_question(qtype: str, qid: str = "q1", answer: Any = "Business Administration") -> Question:
    abstention = "_abs" in qid
    return Question(
        qid,
        "What degree did I graduate with?",
        () if abstention else (str(answer),),
        category=qtype,
        meta={"judge": "longmemeval", "question_type": qtype, "answer": answer, "abstention": abstention},
    )


@pytest.mark.parametrize(
    "qtype, qid, expected",
    [
        ("single-session-user", "q1", lme.LME_FACT),
        ("multi-session", "q1", lme.LME_FACT),
        ("single-session-assistant", "q1", lme.LME_FACT),
        ("temporal-reasoning", "q1", lme.LME_TEMPORAL),
        ("knowledge-update", "q1", lme.LME_KNOWLEDGE_UPDATE),
        ("single-session-preference", "q1", lme.LME_PREFERENCE),
        ("temporal-reasoning", "q9_abs", lme.LME_ABSTENTION),
    ],
)
def test_longmemeval_prompt_per_type_filled_as_evaluate_qa(qtype, qid, expected):
    llm = FakeJudgeLLM("Yes")
    question = lme_question(qtype, qid, answer=3)
    assert score(Judge(judge_config(llm)), "It was 3.", question) == 1.0
    ((prompt, params),) = llm.calls
    assert prompt == expected.format("What degree did I graduate with?", 3, "It was 3.")
    assert params == {"temperature": 0, "seed": 0, "max_tokens": 10}


@pytest.mark.parametrize(
    "reply, expected", [("yes", 1.0), ("Yes.", 1.0), ("no", 0.0), ("No, not yes-worthy", 1.0), ("", 0.0)]
)
def test_longmemeval_reads_yes_anywhere_as_the_official_code(reply, expected):
    # evaluate_qa.py: label = 'yes' in eval_response.lower()
    assert score(Judge(judge_config(FakeJudgeLLM(reply))), "x", lme_question("multi-session")) == expected


def test_locomo_questions_get_mem0s_judge_and_category_5_is_skipped():
    llm = FakeJudgeLLM('The answer names the same city. {"label": "CORRECT"}')
    judge = Judge(judge_config(llm))
    q = Question("q1", "Where did Lena move?", ("Toronto",), meta={"locomo_category": 4})
    assert score(judge, "Toronto, I think", q) == 1.0
    ((prompt, params),) = llm.calls
    assert prompt == locomo_j.MEM0_ACCURACY_PROMPT.format(
        question="Where did Lena move?", gold_answer="Toronto", generated_answer="Toronto, I think"
    )
    assert params["response_format"] == {"type": "json_object"}
    adversarial = Question("q2", "x?", ("Not mentioned in the conversation",), meta={"locomo_category": 5})
    assert score(judge, "no", adversarial) is None and len(llm.calls) == 1
    described = judge.describe()
    assert described["name"] == "locomo-j" and described["prompt_sha256"] == locomo_j.LOCOMO_J.sha256


@pytest.mark.parametrize(
    "reply, expected",
    [
        ('{"label": "CORRECT"}', 1.0),
        ('```json\n{"label": "WRONG"}\n```', 0.0),
        ('{"label": "correct"}', 0.0),
        ("CORRECT", None),
        ('{"verdict": "CORRECT"}', None),
    ],
)
def test_mem0_label_reading(reply, expected):
    assert read_label(reply) == expected


def test_forced_judge_by_config_and_by_force(monkeypatch):
    monkeypatch.setenv(JUDGE_ENV, "locomo-j")  # read by the CLI (the option's default), never by the metric
    llm = FakeJudgeLLM('{"correct": false}')
    judge = Judge(judge_config(llm, judge_name="memplug"))
    assert score(judge, "x", lme_question("multi-session")) == 0.0
    assert "Grade strictly" in llm.calls[0][0]
    assert judge.describe()["selected_by"] == "--judge-prompt" and judge.describe()["name"] == "memplug"
    judge = Judge(judge_config(llm))
    assert judge.judge_for(lme_question("multi-session")).name == "longmemeval"
    judge.force("longmemeval", "--judge-prompt")
    plain = Question("q", "What is Wang Wei's occupation?", ("cameraman",))
    assert score(judge, "a cameraman", plain) == 0.0  # the fake says no JSON "yes"... it says {"correct": false}
    assert llm.calls[-1][0] == lme.LME_FACT.format("What is Wang Wei's occupation?", "cameraman", "a cameraman")
    with pytest.raises(MemplugError, match="unknown judge"):
        Judge(judge_config(llm, judge_name="nope"))


def test_describe_names_the_judges_used_with_their_hashes():
    judge = Judge(judge_config(FakeJudgeLLM("yes")))
    assert judge.describe()["name"] == "memplug" and judge.describe()["prompt_sha256"] == MEMPLUG.sha256
    score(judge, "x", lme_question("multi-session"))
    described = judge.describe()
    assert described["name"] == "longmemeval" and set(described["judges"]) == {"longmemeval"}
    assert described["judges"]["longmemeval"]["prompts"]["abstention"]["sha256"] == PINNED["LME_ABSTENTION"]
    assert described["judges"]["longmemeval"]["params"] == {"max_tokens": 10}
    score(judge, "x", Question("p", "q?", ("a",)))
    assert judge.describe()["name"] == "longmemeval+memplug"


# -- leniency -------------------------------------------------------------------------------


def test_the_shipped_set():
    data = leniency_set()
    assert set(data["benchmarks"]) == {"longmemeval", "locomo", "memplug"}
    for name, block in data["benchmarks"].items():
        judge_set(block["judge"])
        kinds = [i["kind"] for i in block["items"]]
        assert set(kinds) == {"correct", "vague", "hedged", "wrong"} and kinds.count("correct") >= 4
        assert len({i["id"] for i in block["items"]}) == len(kinds)


def lenient_reply(body: dict[str, Any]) -> str:
    """A judge that accepts everything, in each judge's reply format."""
    prompt = body["messages"][-1]["content"]
    if "Answer yes or no only" in prompt:
        return "yes"
    if '"label"' in prompt:
        return 'Same topic. {"label": "CORRECT"}'
    return '{"correct": true}'


def _field(prompt: str, *names: str) -> str:
    for name in names:
        found = re.findall(rf"{name}: (.*?)\n", prompt + "\n")
        if found:  # the last one: Mem0's prompt shows an example first
            last: str = found[-1]
            return last.strip()
    return ""


def strict_reply(body: dict[str, Any]) -> str:
    """A judge that accepts an answer only when it holds the gold's key word and no second candidate."""
    prompt = body["messages"][-1]["content"]
    gold = _field(prompt, "Correct Answer", "Gold answer", r"Gold answer\(s\)")
    answer = _field(prompt, "Model Response", "Generated answer", "Answer to grade")
    words = [w for w in re.findall(r"[\w:]+", gold.split(".")[0].lower()) if w not in ("the", "a", "an")]
    ok = (
        bool(words)
        and all(re.search(rf"\b{re.escape(w)}\b", answer.lower()) for w in words)
        and not re.search(r"\b(or|maybe|possibly|might|think)\b", answer.lower())
    )
    if "Answer yes or no only" in prompt:
        return "yes" if ok else "no"
    if '"label"' in prompt:
        return json.dumps({"label": "CORRECT" if ok else "WRONG"})
    return json.dumps({"correct": ok})


def test_leniency_of_a_lenient_and_a_strict_judge(openai_stub, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_stub.reply = lenient_reply
    lenient = check_leniency(["openai/yes-man"], api_base=openai_stub.base_url)["judges"]["openai/yes-man"]
    assert {b: c["leniency"] for b, c in lenient["benchmarks"].items()} == {
        "longmemeval": 1.0,
        "locomo": 1.0,
        "memplug": 1.0,
    }
    assert lenient["benchmarks"]["locomo"]["judge"] == "locomo-j"
    openai_stub.reply = strict_reply
    strict = check_leniency(["openai/strict"], api_base=openai_stub.base_url)["judges"]["openai/strict"]
    for bench, c in strict["benchmarks"].items():
        assert c["control_acceptance"] == 1.0, (bench, c)
        assert c["accepted"]["hedged"] == 0.0 and c["accepted"]["vague"] == 0.0, (bench, c)
        assert c["leniency"] < 0.2, (bench, c)
    requests = openai_stub.chat_requests
    assert any(r.get("max_tokens") == 10 for r in requests)
    assert any(r.get("response_format") == {"type": "json_object"} for r in requests)


def test_cli_leniency_without_a_run_and_into_a_run(openai_stub, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_stub.reply = lenient_reply
    runner = CliRunner()
    out = runner.invoke(
        cli,
        [
            "judge-check",
            "--leniency",
            "--judge",
            "openai/yes-man",
            "--benchmark",
            "locomo",
            "--api-base",
            openai_stub.base_url,
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)["leniency"]["judges"]["openai/yes-man"]["benchmarks"]
    assert list(result) == ["locomo"] and result["locomo"]["leniency"] == 1.0
    out = runner.invoke(
        cli,
        [
            "judge-check",
            "--leniency",
            "--judge",
            "openai/yes-man",
            "--benchmark",
            "locomo",
            "--api-base",
            openai_stub.base_url,
        ],
    )
    assert out.exit_code == 0 and "Judge leniency of openai/yes-man" in out.stdout
    # a table per judge, its name in the title: a column of its own was folded two letters a line
    assert all(len(line) <= 80 for line in out.stdout.splitlines()), out.stdout
    assert re.search(r"^│ locomo +│ locomo-j +│ \d+ +│ 1\.000 ", out.stdout, re.M), out.stdout
    out = runner.invoke(cli, ["judge-check", "--judge", "openai/yes-man"])
    assert out.exit_code == 2 and "RUN directory, or --leniency" in out.stderr
    out = runner.invoke(cli, ["judge-check", "--leniency", "--judge", "m", "--benchmark", "nope"])
    assert out.exit_code == 2 and "leniency set has" in out.stderr
