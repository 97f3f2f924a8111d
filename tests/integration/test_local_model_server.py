"""`--llm local` against the real thing: llama.cpp's server (llama-cpp-python) and SmolLM2-135M
from memplug[local], no stub. What only a real model shows: its replies parsed by the reader
and the judge, token counts from the server, a prompt longer than the window, and the server
gone when the run ends, however it ends.

Without memplug[local] these tests skip locally and fail under CI=true.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memplug.results import RunDir

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]


@pytest.fixture(autouse=True)
def _local_extra():
    from memplug.errors import MemplugError
    from memplug.llm import local

    try:
        local.LocalModel.parse("local")
    except MemplugError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI needs memplug[local]: {exc}")
        pytest.skip(str(exc))


def _eval(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`memplug eval` in a process of its own (its server is a child of that process)."""
    cmd = [sys.executable, "-m", "memplug.cli", "eval", "--agent", "bm25", "--dataset", "memsim",
           "--output", str(tmp_path / "runs"), "--quiet", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MEMPLUG_CACHE_DIR": str(tmp_path / "cache"), **(env or {})})


def _run_dir(result: subprocess.CompletedProcess[str]) -> RunDir:
    return RunDir(Path(result.stdout.strip().splitlines()[-1]))


def _servers_of(tmp_path: Path) -> list[int]:
    """The llama.cpp servers alive that runs of this test started (their environment names
    its folder), zombies left out."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (b"memplug.llm.llama_server" in (proc / "cmdline").read_bytes()
                    and str(tmp_path).encode() in (proc / "environ").read_bytes()
                    and (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"):
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def _wait(condition, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_reader_and_judge_on_memsim(tmp_path):
    """The llm reader and the memplug judge, both on the local model (one server), on three
    MemSim questions: every question answered and put to the judge, token counts from the
    server, the model recorded in run.json, the server stopped at the end."""
    from memplug.llm import local

    result = _eval(tmp_path, "-o", "n=3", "--reader", "llm", "--llm", "local", "--judge", "local",
                   "--judge-prompt", "memplug")
    assert result.returncode == 0, result.stderr
    rd = _run_dir(result)
    records = rd.records()
    assert len(records) == 3 and not any(r.error for r in records)
    assert all(r.reply and r.reply.strip() for r in records)
    # the reader's call and the judge's: a verdict the tiny model leaves unreadable scores None
    assert all(r.usage.calls == 2 and "judge" in r.scores for r in records)
    assert all(r.scores["judge"] in (0.0, 1.0, None) for r in records)
    assert all(r.usage.prompt_tokens > 50 and r.usage.completion_tokens >= 1 for r in records)
    described = rd.info().resolved["local_models"]
    assert described["llm"] == described["judge"]  # one server, one measurement
    model = described["llm"]
    assert model["sha256"] == local.LocalModel.parse("local").sha256
    assert model["gguf"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf") and model["window"] == 8192
    assert model["llama_cpp"] and model["llama_cpp_python"] and model["prompt_tps"] > 0
    assert model["timeout_s"] >= 60
    assert not _servers_of(tmp_path)


def test_a_prompt_longer_than_the_window_is_one_line(tmp_path):
    """With a 256-token window the reader's prompts do not fit: each question's error (never
    retried, never scored) names both sizes, and the run ends partial/failed, exit 1."""
    result = _eval(tmp_path, "-o", "n=1", "--reader", "llm", "--llm", "local",
                   env={"MEMPLUG_LOCAL_WINDOW": "256"})
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "first error: LLMError: local: chat completion failed: a prompt of " in last
    assert "tokens is longer than the local model's window of 256 tokens (MEMPLUG_LOCAL_WINDOW" in last
    record = _run_dir(result).records()[0]
    assert record.error and "window of 256 tokens" in record.error and record.usage.calls == 0


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_the_server_ends_with_its_run(tmp_path, how):
    """Ctrl-C: memplug stops its server and exits 130. SIGKILL: memplug cannot do anything,
    and the server, seeing its stdin close, ends by itself."""
    cmd = [sys.executable, "-m", "memplug.cli", "eval", "--agent", "bm25", "--dataset", "memsim", "-o", "n=20",
           "--reader", "llm", "--llm", "local", "--output", str(tmp_path / "runs"), "--quiet", "--no-cache"]
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "MEMPLUG_CACHE_DIR": str(tmp_path / "cache")})
    try:
        assert _wait(lambda: _servers_of(tmp_path), within=120), "no llama.cpp server started"
        time.sleep(1.0)
        process.send_signal(how)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == (130 if how == signal.SIGINT else -signal.SIGKILL), stderr
        assert _wait(lambda: not _servers_of(tmp_path), within=10), "the server outlived memplug"
    finally:
        if process.poll() is None:
            process.kill()


def test_a_file_that_is_not_a_model_fails_in_one_line(tmp_path):
    """A GGUF header and nothing else: the server exits while loading; memplug says so in one
    line (exit 2) with the server's last log line, before the first question."""
    fake = tmp_path / "broken.gguf"
    fake.write_bytes(b"GGUF" + bytes(60))
    result = _eval(tmp_path, "-o", "n=1", "--llm", f"local:{fake}")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "llama.cpp's server exited with code" in lines[0] and str(fake) in lines[0]


def test_json_mode_gives_json():
    """The llm layer on the local model: response_format json_object comes back as JSON (the
    judges and Mem0 ask for it), usage from the server. (Asked to echo an object, the 135M
    model instead repeats its contents until the 512-token cap cuts the JSON short.)"""
    from memplug.llm import LLM

    messages = [{"role": "system", "content": "You are a grader. Reply in JSON."},
                {"role": "user", "content": "Question: What is the capital of France? Gold answer: Paris. Response: "
                                            'Paris. Is the response correct? Reply as {"correct": true} or '
                                            '{"correct": false}.'}]
    with LLM("local", use_cache=False) as llm:
        reply = llm.complete(messages, response_format={"type": "json_object"})
    assert isinstance(json.loads(reply.text), dict)
    assert reply.prompt_tokens > 20 and reply.completion_tokens >= 2


@pytest.mark.skipif(importlib.util.find_spec("mem0") is None, reason="memplug[mem0] not installed")
def test_mem0_extracts_facts_with_the_local_model(testkit, tmp_path, monkeypatch):
    """Mem0 with fact extraction on the local model: its extraction prompt (~8,900 tokens of
    SmolLM2's) needs a 16k window; the first sample pays for it (over a minute on 2 busy
    cores, within the fitted timeout), the second, run after it, reuses it from llama.cpp's
    prompt cache. Every question answered; the token counts are the server's."""
    from memplug.runner import Evaluation, RunSpec

    monkeypatch.setenv("MEMPLUG_LOCAL_WINDOW", "16384")
    spec = RunSpec(agent="mem0", dataset="counting", llm="local", reader="llm", top_k=2, concurrency=1,
                   dataset_options={"samples": "2", "questions": "1", "messages": "4"})
    rd = RunDir(Evaluation(spec).run(output=tmp_path / "runs"))
    records = {r.sample_id: r for r in rd.records()}
    assert set(records) == {"s0", "s1"} and not any(r.error for r in records.values())
    for record in records.values():
        assert record.ingest_usage.calls >= 1 and record.ingest_usage.prompt_tokens > 8000
    first, second = records["s0"].timings.ingest_s, records["s1"].timings.ingest_s
    assert second < first / 3, (first, second)  # the long prefix came from the prompt cache
    assert rd.info().resolved["local_models"]["llm"]["window"] == 16384

