"""Faults of the LLM endpoint during a whole evaluation, and of its response cache.

The run answers with the llm reader against the loopback stub (tests/openai_stub.py)
while the stub answers some calls with 429 + Retry-After, 500, a body that is not JSON,
or not at all. A call that succeeds on a retry gives a normal record; a call that never
succeeds is an error on its question, counted in n_errors and left out of every metric,
never scored as a wrong (or right) answer.

Neither the CLI nor RunSpec sets the LLM's timeout or retry count, so the in-process
tests swap memplug.llm.LLM for a subclass with a short timeout and quick retries (the
runner imports the class when it builds the model).

A memory system that raises during ingest is tested in tests/test_runner.py, SIGKILL and
--resume of a run there too, and the SQLite cache under a kill and two writers in
tests/test_cache.py; here the cache is exercised through whole `memplug eval` processes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

import memplug.llm
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec

if TYPE_CHECKING:
    from openai_stub import OpenAIStub

TIMEOUT_S = 0.5
MAX_RETRIES = 2  # three attempts per call
ITEM = re.compile(r"Item (\d+-\d+) is (\w+)\.")
ASKED = re.compile(r"What is item (\d+-\d+)\?")


def read_memory(body: dict[str, Any]) -> str:
    """The stub's reply: the word the recalled memory gives for the item asked about."""
    prompt = body["messages"][-1]["content"]
    asked = ASKED.findall(prompt)[-1]
    answer: str = dict(ITEM.findall(prompt)).get(asked, "I do not know")
    return answer


class QuickLLM(memplug.llm.LLM):
    """The run's LLM with quick backoff, so that faults cost milliseconds (the timeout and
    the retry count come from the run's --llm-timeout / --llm-retries)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{"retry_base": 0.01, **kwargs})


@pytest.fixture
def stub(openai_stub: OpenAIStub, testkit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> OpenAIStub:
    """The loopback stub answering from the prompt's memory, and a run LLM that gives up quickly."""
    openai_stub.reply = read_memory
    openai_stub.retry_after = 0.2
    monkeypatch.setattr(memplug.llm, "LLM", QuickLLM)
    return openai_stub


def plan_faults(stub: OpenAIStub, plan: dict[str, list[str]]) -> dict[str, int]:
    """Answer the calls for the question about item ``key`` with the faults ``plan[key]``, in turn.

    Per question, not per request number: the run's calls arrive in any order. Hooks the
    stub's admission of a request (the method that pops ``fail_next`` faults). Returns
    the attempts seen per item, filled in as the run goes.
    """
    left = {key: list(faults) for key, faults in plan.items()}
    attempts: dict[str, int] = {}
    admit = stub._admit

    def admit_with_plan(path: str, body: dict[str, Any], auth: str) -> str | None:
        queued = admit(path, body, auth)
        asked = ASKED.findall(body["messages"][-1]["content"])[-1]
        attempts[asked] = attempts.get(asked, 0) + 1
        if queued is None and left.get(asked):
            return left[asked].pop(0)
        return queued

    stub._admit = admit_with_plan  # type: ignore[method-assign]  # this stub's admission, planned
    return attempts


def evaluate(stub: OpenAIStub, tmp_path: Path, **kw: Any) -> RunDir:
    spec = RunSpec(
        agent="lookup",
        dataset="counting",
        llm="openai/stub",
        api_base=stub.base_url,
        reader="llm",
        agent_options={"answer": "false"},
        concurrency=kw.pop("concurrency", 4),
        llm_timeout=TIMEOUT_S,
        llm_retries=MAX_RETRIES,
        **kw,
    )
    return RunDir(Evaluation(spec).run(output=tmp_path / "runs"))


#: transient faults: fewer than three attempts each, so every call succeeds in the end
TRANSIENT = {"0-1": ["429"], "1-0": ["500", "500"], "2-2": ["malformed"], "3-1": ["hang"], "4-0": ["429", "malformed"]}
#: permanent faults: every attempt fails, so these questions are errors
PERMANENT = {"4-2": ["500"] * 3, "5-1": ["hang"] * 3}


def test_transient_faults_are_retried_and_never_lose_a_result(stub, tmp_path):
    attempts = plan_faults(stub, TRANSIENT)
    rd = evaluate(stub, tmp_path)
    summary = rd.summary()
    assert json.loads(rd.run_json.read_text())["status"] == "finished"
    assert summary.n_questions == 18 and summary.n_errors == 0
    assert summary.metrics.overall["em"] == 1.0
    records = rd.records()
    assert all(r.error is None and r.prediction == r.gold[0] for r in records)
    for key, faults in TRANSIENT.items():
        assert attempts[key] == len(faults) + 1, key
    assert len(stub.chat_requests) == 18 + sum(map(len, TRANSIENT.values()))
    assert summary.llm.calls == 18  # a failed attempt is not a call


def test_calls_that_never_succeed_are_errors_not_wrong_answers(stub, tmp_path):
    attempts = plan_faults(stub, {**TRANSIENT, **PERMANENT})
    rd = evaluate(stub, tmp_path)
    summary = rd.summary()
    records = {r.key: r for r in rd.records()}
    # questions that failed make the run partial, never finished
    assert len(records) == 18 and json.loads(rd.run_json.read_text())["status"] == "partial"

    failed = {k: r for k, r in records.items() if r.error}
    assert set(failed) == {("s4", "q2"), ("s5", "q1")}
    assert "after 3 attempts: HTTP 500" in str(failed["s4", "q2"].error)
    assert f"after 3 attempts: no answer within {TIMEOUT_S:g}s" in str(failed["s5", "q1"].error)
    for record in failed.values():
        assert record.prediction is None and record.scores == {}
        assert record.usage is not None and record.usage.calls == 0
    assert attempts["4-2"] == attempts["5-1"] == MAX_RETRIES + 1

    # metrics over the 16 answered questions, the two errors beside them
    assert summary.n_errors == 2 and summary.n_questions == 18
    assert summary.metrics.overall["em"] == 1.0
    assert summary.n is not None and summary.n.overall["em"] == 16
    assert summary.n.by_category["odd"]["em"] == 5  # q1 of s5 was one of six odd questions
    assert summary.llm.calls == 16

    # errors are not cached: the same run again asks only the two failed questions
    before = len(stub.chat_requests)
    again = evaluate(stub, tmp_path).summary()
    assert again.n_errors == 0 and again.metrics.overall["em"] == 1.0
    assert again.llm.calls == 2 and again.llm.cache_hits == 16
    assert len(stub.chat_requests) - before == 2


def test_faults_while_samples_run_one_at_a_time(stub, tmp_path):
    """Concurrency 1: a backing-off call holds up nothing but its own question's sample."""
    plan_faults(stub, {"0-0": ["500"] * 3, "0-1": ["429"], "2-0": ["hang"]})
    rd = evaluate(stub, tmp_path, concurrency=1)
    summary = rd.summary()
    assert [r.key for r in rd.records() if r.error] == [("s0", "q0")]
    assert summary.n_errors == 1 and summary.metrics.overall["em"] == 1.0


# --- the response cache under whole processes ----------------------------------------------------


def eval_process(env: dict[str, str], stub: OpenAIStub, out: Path, samples: int = 6) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "memplug.cli",
        "eval",
        "--agent",
        "lookup",
        "--dataset",
        "counting",
        "-o",
        "answer=false",
        "-o",
        f"samples={samples}",
        "--llm",
        "openai/stub",
        "--api-base",
        stub.base_url,
        "--reader",
        "llm",
        "--concurrency",
        "8",
        "--output",
        str(out),
        "--quiet",
    ]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def cache_env(testkit_env: dict[str, str], openai_stub: OpenAIStub, tmp_path: Path) -> dict[str, str]:
    env = dict(testkit_env)
    env["MEMPLUG_CACHE_DIR"] = str(tmp_path / "cache")
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    openai_stub.reply = read_memory
    return env


def finished_summary(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    summary: dict[str, Any] = json.loads((Path(out.strip().splitlines()[-1]) / "summary.json").read_text())
    return summary


def cache_rows(env: dict[str, str]) -> int:
    conn = sqlite3.connect(Path(env["MEMPLUG_CACHE_DIR"]) / "llm.sqlite3")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows: int = conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return rows
    finally:
        conn.close()


def test_two_evals_share_one_cache_at_once(cache_env, openai_stub, tmp_path):
    """Two processes asking the same questions at the same moment: both right, one entry per prompt."""
    # The first answers wait until both processes have calls in flight (one run has six
    # samples, so at most six of its own): the runs overlap however slowly each one starts.
    both_asking = threading.Event()

    def answer_once_both_ask(body):
        if openai_stub.in_flight > 6:
            both_asking.set()
        both_asking.wait(20)
        return read_memory(body)

    openai_stub.reply = answer_once_both_ask
    procs = [eval_process(cache_env, openai_stub, tmp_path / f"runs{i}") for i in range(2)]
    summaries = [finished_summary(p) for p in procs]
    assert both_asking.is_set()
    for summary in summaries:
        assert summary["n_errors"] == 0 and summary["metrics"]["overall"]["em"] == 1.0
        assert summary["llm"]["calls"] + summary["llm"]["cache_hits"] == 18
    assert cache_rows(cache_env) == 18
    third = finished_summary(eval_process(cache_env, openai_stub, tmp_path / "runs2"))
    assert third["llm"] == {**third["llm"], "calls": 0, "cache_hits": 18}
    assert third["metrics"]["overall"]["em"] == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [5, 23, 41])
def test_cache_survives_an_eval_killed_mid_write(cache_env, openai_stub, tmp_path, kill_after):
    """SIGKILL while answers stream into the cache: the file stays sound and every entry it
    kept is a whole answer that the next run reuses."""
    proc = eval_process(cache_env, openai_stub, tmp_path / "runs", samples=20)
    deadline = time.time() + 60
    while len(openai_stub.chat_requests) < kill_after and time.time() < deadline and proc.poll() is None:
        time.sleep(0.001)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = cache_rows(cache_env)
    assert kept <= len(openai_stub.chat_requests) < 60
    rerun = finished_summary(eval_process(cache_env, openai_stub, tmp_path / "again", samples=20))
    assert rerun["n_errors"] == 0 and rerun["metrics"]["overall"]["em"] == 1.0
    assert rerun["llm"]["cache_hits"] == kept and rerun["llm"]["calls"] == 60 - kept
