"""`memplug rescore`: metrics recomputed from samples.jsonl, the run's own files untouched."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from openai_stub import OpenAIStub

from memplug.cli import cli
from memplug import judge_checks, rescoring
from memplug.cli.rescore import rescore_command
from memplug.protocols import MetricConfig, ScoreContext
from memplug.rescoring import rescore_run, summary_changes
from memplug.record import QuestionRecord
from memplug.results import RunDir, summarize, write_json_atomic, write_records_atomic

WORDS = ["apple", "river", "lamp"]


class ScriptedJudge:
    """Stands in for memplug.judge.Judge: says "correct" on the question ids scripted for its model."""

    name = "judge"
    version = "test"
    verdicts: dict[str, set[str]] = {}

    def __init__(self, config: MetricConfig) -> None:
        assert config.judge is not None
        self.model = config.judge.model

    async def score(self, ctx: ScoreContext) -> float | None:
        if ctx.question.id in self.verdicts.get(f"{self.model}:unreadable", ()):
            return None  # a reply without a verdict
        return 1.0 if ctx.question.id in self.verdicts[self.model] else 0.0

    def describe(self) -> dict[str, Any]:
        return {"model": self.model, "prompt": "scripted", "prompt_version": "test"}


class FakeLLM:
    def __init__(self, model: str) -> None:
        self.model = model
        self.usage = types.SimpleNamespace(as_dict=lambda: {"calls": 0})


@pytest.fixture
def scripted_judge(testkit: types.ModuleType, monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """The `judge` metric answers from the returned {model: question ids judged correct}; no LLM is built."""
    verdicts: dict[str, set[str]] = {}
    module = types.ModuleType("memplug.judge")
    setattr(module, "Judge", type("Judge", (ScriptedJudge,), {"verdicts": verdicts}))  # a module made here
    monkeypatch.setitem(sys.modules, "memplug.judge", module)
    for module in (rescoring, judge_checks):
        monkeypatch.setattr(module, "make_llm", lambda model, api_base, cache: FakeLLM(model))
    return verdicts


def record(sample: int, question: int, prediction: str | None, error: str | None = None) -> QuestionRecord:
    """A record as the runner writes it for the testkit's `counting` dataset, scored by hand."""
    gold = WORDS[(sample + question) % len(WORDS)]
    recalled = [{"text": f"Item {sample}-{question} is {prediction}.", "score": 1.0, "message_ids": [f"m{question}"]}]
    scores = (
        {} if error else {"em": float(prediction == gold), "subem": float(gold in (prediction or "")), "recall@5": 1.0}
    )
    return QuestionRecord.from_json(
        {
            "sample_id": f"s{sample}",
            "question_id": f"q{question}",
            "category": "even" if question % 2 == 0 else "odd",
            "question": f"What is item {sample}-{question}?",
            "prediction": prediction,
            "gold": [gold],
            "choices": None,
            "correct_choice": None,
            "targets": [f"m{question}"],
            "anchors": [],
            "recalled": [] if error else recalled,
            "agent_answered": True,
            "scores": scores,
            "timings": {"ingest_s": 0.01, "n_messages": 4, "recall_s": 0.001, "read_s": 0.0},
            "usage": {"calls": 0, "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0},
            "error": error,
            "meta": {},
            "ingest_usage": {"calls": 0, "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0},
        }
    )


def write_run(folder: Path, records: list[QuestionRecord], judge: str | None = None) -> Path:
    """A finished run directory with run.json, samples.jsonl and the runner's summary."""
    folder.mkdir(parents=True)
    spec: dict[str, Any] = {
        "agent": "lookup",
        "dataset": "counting",
        "data": None,
        "seed": 0,
        "llm": None,
        "api_base": None,
        "reader": None,
        "judge": judge,
        "embedder": "wordllama",
        "chunk_size": None,
        "top_k": 5,
        "limit": None,
        "concurrency": 4,
        "cache": True,
        "agent_options": {},
        "dataset_options": {},
    }
    write_json_atomic(
        folder / "run.json",
        {
            "run_id": folder.name,
            "spec": spec,
            "status": "finished",
            "resolved": {"metrics": ["em", "subem", "recall@5"]},
        },
    )
    write_records_atomic(folder / "samples.jsonl", records)  # as the runner writes them
    write_json_atomic(folder / "summary.json", summarize(records, "lookup", "counting", folder.name, 1.234).to_json())
    return folder


def finished_run(tmp_path: Path) -> Path:
    records = [record(s, q, WORDS[(s + q) % 3] if (s + q) % 4 else "wrong") for s in range(5) for q in range(3)]
    records.append(record(5, 0, None, error="ValueError: recall exploded"))
    return write_run(tmp_path / "run", records)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_rescore_reproduces_the_summary_exactly(testkit, tmp_path):
    path = finished_run(tmp_path)
    before = snapshot(path)
    result = rescore_run(path)
    assert result.summary_path.read_bytes() == before["summary.json"]
    assert result.samples_path.read_bytes() == before["samples.jsonl"]
    assert result.changes["identical"] and result.changes["changed_summary"] == []
    assert result.changes["changed_scores"] == {"em": 0, "subem": 0, "recall@5": 0}
    assert result.changes["questions_rescored"] == 15  # the errored question stays an error
    assert result.changes["judge"] == {"run": None, "rescore": None}
    after = snapshot(path)
    assert {k: after[k] for k in before} == before  # the run's own files are untouched
    assert set(after) - set(before) == {result.summary_path.name, result.samples_path.name, result.changes_path.name}
    assert json.loads(result.changes_path.read_text()) == result.changes


def test_rescore_repairs_tampered_scores_and_says_what_changed(testkit, tmp_path):
    path = finished_run(tmp_path)
    records = RunDir(path).records()
    records[1].scores["em"] = 0.0  # s0/q1: prediction "river" equals gold "river"
    (path / "samples.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    write_json_atomic(path / "summary.json", summarize(records, "lookup", "counting", "run", 1.234).to_json())
    result = rescore_run(path, ["em"])
    assert result.changes["changed_scores"] == {"em": 1}
    changed = {c["key"]: (c["before"], c["after"]) for c in result.changes["changed_summary"]}
    assert changed["metrics.overall.em"] == (round(10 / 15, 6), round(11 / 15, 6))  # 4 of 15 wrong
    assert changed["metrics.by_category.odd.em"][1] > changed["metrics.by_category.odd.em"][0]
    assert not any(k.startswith(("metrics.overall.subem", "n.", "efficiency", "llm")) for k in changed)
    rescored = json.loads(result.samples_path.read_text().splitlines()[1])
    assert rescored["scores"] == {"em": 1.0, "subem": 1.0, "recall@5": 1.0}


def test_rescore_adds_a_metric_the_run_did_not_compute(testkit, tmp_path):
    path = finished_run(tmp_path)
    result = rescore_run(path, ["f1"])
    summary = json.loads(result.summary_path.read_text())
    assert summary["metrics"]["overall"]["f1"] == summary["metrics"]["overall"]["em"]  # one-word answers
    assert summary["n"]["overall"]["f1"] == 15
    keys = {c["key"] for c in result.changes["changed_summary"]}
    assert "metrics.overall.f1" in keys and "ci.overall.f1" in keys
    assert result.changes["changed_scores"] == {"f1": 15}


def test_recall_at_another_k(testkit, tmp_path):
    result = rescore_run(finished_run(tmp_path), ["recall@1"])
    assert json.loads(result.summary_path.read_text())["metrics"]["overall"]["recall@1"] == 1.0


def test_two_rescores_do_not_overwrite_each_other(testkit, tmp_path):
    path = finished_run(tmp_path)
    first, second = rescore_run(path), rescore_run(path)
    assert first.changes_path != second.changes_path and first.changes_path.exists()


def test_summary_changes_lists_every_moved_number():
    before = {"metrics": {"overall": {"em": 0.5}}, "ci": {"overall": {"em": [0.4, 0.6]}}}
    after = {"metrics": {"overall": {"em": 0.5, "f1": 0.7}}, "ci": {"overall": {"em": [0.4, 0.61]}}}
    assert summary_changes(before, after) == [
        {"key": "ci.overall.em", "before": [0.4, 0.6], "after": [0.4, 0.61]},
        {"key": "metrics.overall.f1", "before": None, "after": 0.7},
    ]


@pytest.fixture
def memplug_cli(monkeypatch):
    """The memplug command group with `rescore` in it (registered by memplug.cli)."""
    monkeypatch.setitem(cli.commands, "rescore", rescore_command)
    return lambda *args: CliRunner().invoke(cli, list(args))


def test_cli_prints_the_new_summary(testkit, tmp_path, memplug_cli):
    path = finished_run(tmp_path)
    out = memplug_cli("rescore", str(path))
    assert out.exit_code == 0, out.output
    written = Path(out.stdout.strip())
    assert written.name.startswith("summary.rescored-") and written.read_bytes() == (path / "summary.json").read_bytes()
    assert "summary unchanged" in out.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metrics", "emm"], "unknown metric 'emm' (did you mean \"em\"?)"),
        (["--metrics", "judge"], "the run had no judge; pass --judge MODEL"),
        (["--metrics", "recall@20"], "the run recalled 5 items per question (--top-k 5), so recall@20 cannot"),
    ],
)
def test_cli_user_errors_exit_2(testkit, tmp_path, memplug_cli, args, message):
    out = memplug_cli("rescore", str(finished_run(tmp_path)), *args)
    assert out.exit_code == 2 and message in out.stderr


def test_cli_refuses_an_unfinished_run(testkit, tmp_path, memplug_cli):
    path = finished_run(tmp_path)
    (path / "summary.json").unlink()
    out = memplug_cli("rescore", str(path))
    assert out.exit_code == 2 and "no summary.json" in out.stderr


def judged_run(tmp_path: Path, verdicts: dict[str, set[str]]) -> Path:
    """A run judged by "judge-a", which accepted the answers to questions q0 and q1 of every sample."""
    verdicts["judge-a"] = {"q0", "q1"}
    records = []
    for r in RunDir(finished_run(tmp_path)).records():
        if not r.error:
            r.scores["judge"] = float(r.question_id in verdicts["judge-a"])
        records.append(r)
    path = tmp_path / "judged"
    write_run(path, records, judge="judge-a")
    spec = json.loads((path / "run.json").read_text())
    spec["resolved"]["metrics"].append("judge")
    write_json_atomic(path / "run.json", spec)
    return path


def test_a_new_judge_rescores_every_verdict(scripted_judge, tmp_path):
    path = judged_run(tmp_path, scripted_judge)
    scripted_judge["judge-b"] = {"q0"}  # accepts question q0 of every sample
    result = rescore_run(path, ["em"], judge="judge-b")
    assert result.changes["judge"]["run"] == "judge-a"
    assert result.changes["judge"]["rescore"]["model"] == "judge-b"
    records = [json.loads(line) for line in result.samples_path.read_text().splitlines()]
    judged = [r["scores"]["judge"] for r in records if not r["error"]]
    assert judged == [float(r["question_id"] == "q0") for r in records if not r["error"]]  # none of judge-a's left
    summary = json.loads(result.summary_path.read_text())
    assert summary["metrics"]["overall"]["judge"] == pytest.approx(5 / 15, abs=1e-6)
    assert {c["key"] for c in result.changes["changed_summary"]} >= {"metrics.overall.judge"}
    assert result.changes["changed_scores"] == {"em": 0, "judge": 5}  # the five q1 verdicts flip


def test_without_a_new_judge_the_runs_judge_is_used(scripted_judge, tmp_path):
    path = judged_run(tmp_path, scripted_judge)
    result = rescore_run(path)
    assert result.changes["identical"] and result.changes["judge"]["rescore"]["model"] == "judge-a"


@pytest.mark.parametrize("agent_options, answered", [({"fail_question": "q1"}, 12), ({"answer": "false"}, 18)])
def test_rescore_of_a_real_run_reproduces_its_summary(testkit, tmp_path, agent_options, answered):
    """A run made by the runner (agent answers, or the extractive reader does) rescored as it is."""
    from memplug.runner import Evaluation, RunSpec

    path = Evaluation(RunSpec(agent="lookup", dataset="counting", agent_options=agent_options)).run(
        output=tmp_path / "runs"
    )
    result = rescore_run(path)
    assert result.changes["questions_rescored"] == answered
    assert result.changes["identical"], result.changes["changed_summary"]
    assert result.summary_path.read_bytes() == (path / "summary.json").read_bytes()


def stub_judge(body: dict[str, Any]) -> str:
    """A judge behind the loopback server: correct when the answer names the gold value or letter."""
    prompt = body["messages"][-1]["content"]
    gold_line = re.search(r"^Gold answer\(s\): (.*)$", prompt, re.M)
    answer_line = re.search(r"^Answer to grade: (.*)$", prompt, re.M)
    assert gold_line and answer_line, prompt
    gold, answer = gold_line.group(1), answer_line.group(1).strip()
    accepted = {g.strip().lower() for g in gold.split("|")} | {g.split(".")[0].strip().lower() for g in gold.split("|")}
    return json.dumps({"correct": answer.lower() in accepted})


def test_a_judged_run_rescored_through_the_llm_layer(testkit, openai_stub, tmp_path):
    """The runner's judge verdicts are reproduced from the response cache; nothing else is asked."""
    from memplug.runner import Evaluation, RunSpec

    openai_stub.reply = stub_judge
    spec = RunSpec(agent="lookup", dataset="counting", judge="openai/stub-judge", api_base=openai_stub.base_url)
    path = Evaluation(spec).run(output=tmp_path / "runs")
    assert json.loads((path / "summary.json").read_text())["metrics"]["overall"]["judge"] == 1.0
    asked = len(openai_stub.chat_requests)
    result = rescore_run(path)
    assert result.changes["identical"] and result.summary_path.read_bytes() == (path / "summary.json").read_bytes()
    assert len(openai_stub.chat_requests) == asked  # all 18 verdicts came from the cache
    assert result.changes["llm"]["cache_hits"] == 18
    assert result.changes["judge"]["rescore"]["model"] == "openai/stub-judge"


# --- the judge's LLM is checked before the first call, as eval checks it ----------------


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def keyless_env(testkit_env: dict[str, str], openai_stub: OpenAIStub) -> dict[str, str]:
    """The testkit through its entry point, no *_API_KEY in the environment, and the OpenAI
    SDK pointed at the stub: a call that slipped past the check would show in its log (and
    never reach the network)."""
    env = {k: v for k, v in testkit_env.items() if not k.endswith("_API_KEY")}
    env["OPENAI_BASE_URL"] = env["OPENAI_API_BASE"] = openai_stub.base_url
    env["no_proxy"] = env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def one_line_exit_2(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert "attempts" not in result.stderr  # stopped at once, not after retries


def test_rescore_with_a_hosted_judge_and_no_key_fails_before_any_call(keyless_env, openai_stub, tmp_path):
    from inprocess import memplug_main

    path = finished_run(tmp_path)
    result = memplug_main(["rescore", path, "--judge", "openai/gpt-4o"], env=keyless_env, cwd=tmp_path)
    one_line_exit_2(result, "openai needs OPENAI_API_KEY in the environment")
    assert not openai_stub.log  # no request reached the stub
    assert not list(path.glob("*rescored*"))


def test_rescore_with_an_endpoint_that_does_not_answer_fails_at_once(keyless_env, openai_stub, tmp_path):
    from inprocess import memplug_main

    path = finished_run(tmp_path)
    result = memplug_main(
        ["rescore", path, "--judge", "openai/gpt-4o", "--api-base", f"http://127.0.0.1:{closed_port()}/v1"],
        env=keyless_env,
        cwd=tmp_path,
    )
    one_line_exit_2(result, "does not answer")
    assert not openai_stub.log and not list(path.glob("*rescored*"))


@pytest.mark.parametrize("fault, expected", [("401", "HTTP 401"), ("404", "HTTP 404")])
def test_a_judge_error_every_call_would_repeat_stops_the_rescore_unretried(
    keyless_env, openai_stub, tmp_path, fault, expected
):
    from inprocess import memplug_main

    path = finished_run(tmp_path)
    openai_stub.fail_next(1000, fault)
    result = memplug_main(
        ["rescore", path, "--judge", "openai/stub-judge", "--api-base", openai_stub.base_url, "--no-cache"],
        env=keyless_env,
        cwd=tmp_path,
    )
    one_line_exit_2(result, expected)
    assert 1 <= len(openai_stub.chat_requests) <= 15  # each of the 15 answered questions asked at most once
    assert not list(path.glob("*rescored*"))
