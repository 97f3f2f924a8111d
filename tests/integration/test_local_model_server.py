"""`--llm local` against the real thing: llama.cpp's server (llama-cpp-python) and SmolLM2-135M
from memplug[local], no stub. What only a real model shows: its replies parsed by the reader
and the judge, token counts from the server, a prompt longer than the window, and the server
gone when the run ends, however it ends; then each LLM-using agent on it (Mem0, Graphiti,
Cognee, Letta's agent on the real Letta server).

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
from typing import Callable

import pytest

from memplug.results import RunDir

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


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
    cmd = [
        sys.executable,
        "-m",
        "memplug.cli",
        "eval",
        "--agent",
        "bm25",
        "--dataset",
        "memsim",
        "--output",
        str(tmp_path / "runs"),
        "--quiet",
        *args,
    ]
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MEMPLUG_CACHE_DIR": str(tmp_path / "cache"), **(env or {})},
    )


def _run_dir(result: subprocess.CompletedProcess[str]) -> RunDir:
    return RunDir(Path(result.stdout.strip().splitlines()[-1]))


def _servers_of(tmp_path: Path) -> list[int]:
    """The llama.cpp servers alive that runs of this test started (their environment names
    its folder), zombies left out."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (
                b"memplug.llm.llama_server" in (proc / "cmdline").read_bytes()
                and str(tmp_path).encode() in (proc / "environ").read_bytes()
                and (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            ):
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def _wait(condition: Callable[[], object], within: float) -> bool:
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

    result = _eval(
        tmp_path, "-o", "n=3", "--reader", "llm", "--llm", "local", "--judge", "local", "--judge-prompt", "memplug"
    )
    assert result.returncode == 0, result.stderr
    rd = _run_dir(result)
    records = rd.records()
    assert len(records) == 3 and not any(r.error for r in records)
    assert all(r.reply and r.reply.strip() for r in records)
    # the reader's call and the judge's: a verdict the tiny model leaves unreadable scores None
    assert all(r.usage is not None and r.usage.calls == 2 and "judge" in r.scores for r in records)
    assert all(r.scores["judge"] in (0.0, 1.0, None) for r in records)
    assert all(r.usage is not None and r.usage.prompt_tokens > 50 and r.usage.completion_tokens >= 1 for r in records)
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
    result = _eval(tmp_path, "-o", "n=1", "--reader", "llm", "--llm", "local", env={"MEMPLUG_LOCAL_WINDOW": "256"})
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "first error: LLMError: local: chat completion failed: a prompt of " in last
    assert "tokens is longer than the local model's window of 256 tokens (MEMPLUG_LOCAL_WINDOW" in last
    record = _run_dir(result).records()[0]
    assert record.error and "window of 256 tokens" in record.error
    assert record.usage is not None and record.usage.calls == 0


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_the_server_ends_with_its_run(tmp_path, how):
    """Ctrl-C: memplug stops its server and exits 130. SIGKILL: memplug cannot do anything,
    and the server, seeing its stdin close, ends by itself."""
    cmd = [
        sys.executable,
        "-m",
        "memplug.cli",
        "eval",
        "--agent",
        "bm25",
        "--dataset",
        "memsim",
        "-o",
        "n=20",
        "--reader",
        "llm",
        "--llm",
        "local",
        "--output",
        str(tmp_path / "runs"),
        "--quiet",
        "--no-cache",
    ]
    process = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MEMPLUG_CACHE_DIR": str(tmp_path / "cache")},
    )
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


@pytest.mark.parametrize("kind", ["header only", "truncated"])
def test_a_file_that_is_not_a_model_fails_in_one_line(tmp_path, kind):
    """A GGUF header and nothing else, or a real model cut short: the server cannot load it,
    and memplug says so in one line (exit 2) with llama.cpp's reason, before the first
    question. The server used to die in Python's exit (SIGABRT), and the line quoted its last
    log line: "<no Python frame>"."""
    from memplug.llm import local

    fake = tmp_path / "broken.gguf"
    if kind == "header only":
        fake.write_bytes(b"GGUF" + bytes(60))
    else:
        fake.write_bytes(local.LocalModel.parse("local").gguf.read_bytes()[:100_000])
    result = _eval(tmp_path, "-o", "n=1", "--llm", f"local:{fake}")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"--llm local: {fake} could not be loaded: ValueError: Failed to load model" in lines[0], lines[0]
    assert _wait(lambda: not _servers_of(tmp_path), 5)


def test_json_mode_gives_json():
    """The llm layer on the local model: response_format json_object comes back as JSON (the
    judges and Mem0 ask for it), usage from the server. (Asked to echo an object, the 135M
    model instead repeats its contents until the 512-token cap cuts the JSON short.)"""
    from memplug.llm import LLM

    messages = [
        {"role": "system", "content": "You are a grader. Reply in JSON."},
        {
            "role": "user",
            "content": "Question: What is the capital of France? Gold answer: Paris. Response: "
            'Paris. Is the response correct? Reply as {"correct": true} or '
            '{"correct": false}.',
        },
    ]
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
    spec = RunSpec(
        agent="mem0",
        dataset="counting",
        llm="local",
        reader="llm",
        top_k=2,
        concurrency=1,
        dataset_options={"samples": "2", "questions": "1", "messages": "4"},
    )
    rd = RunDir(Evaluation(spec).run(output=tmp_path / "runs"))
    records = {r.sample_id: r for r in rd.records()}
    assert set(records) == {"s0", "s1"} and not any(r.error for r in records.values())
    for record in records.values():
        assert record.ingest_usage is not None
        assert record.ingest_usage.calls >= 1 and record.ingest_usage.prompt_tokens > 8000
    first, second = records["s0"].timings.ingest_s, records["s1"].timings.ingest_s
    assert first is not None and second is not None
    assert second < first / 3, (first, second)  # the long prefix came from the prompt cache
    assert rd.info().resolved["local_models"]["llm"]["window"] == 16384


#: a short conversation in the `conversations` layout (docs/datasets/conversations.md): one
#: 512-token chunk, so one Graphiti episode and one Cognee document
TRIP = {
    "id": "trip",
    "sessions": [
        {
            "id": "S1",
            "date": "2024-03-02T10:00",
            "turns": [
                {"speaker": "Ana", "text": "We land in Lisbon on Friday the 8th."},
                {"speaker": "Ben", "text": "Great, I'll book the tram tour for Saturday."},
            ],
        },
        {
            "id": "S2",
            "date": "2024-03-09T21:30",
            "turns": [
                {"speaker": "Ana", "text": "The tram tour was cancelled, so we took a boat on the Tagus instead."},
                {"speaker": "Ben", "text": "The boat was better anyway."},
            ],
        },
    ],
    "qa": [
        {"id": "q1", "question": "Which city do Ana and Ben fly to?", "answers": ["Lisbon"], "evidence": ["S1:1"]},
        {
            "id": "q2",
            "question": "What did they do instead of the tram tour?",
            "answers": ["a boat on the Tagus"],
            "evidence": ["S1:2", "S2:1"],
        },
    ],
}
TURNS = {"S1:1", "S1:2", "S2:1", "S2:2"}


def _eval_trip(tmp_path: Path, agent: str, *args: str) -> RunDir:
    """`memplug eval --agent AGENT --dataset conversations` on TRIP with the local model as the
    agent's LLM and the reader; exit 0, every question answered, no server left."""
    data = tmp_path / "trip.jsonl"
    data.write_text(json.dumps(TRIP) + "\n")
    cmd = [
        sys.executable,
        "-m",
        "memplug.cli",
        "eval",
        "--agent",
        agent,
        "--dataset",
        "conversations",
        "--data",
        str(data),
        "--llm",
        "local",
        "--reader",
        "llm",
        "--output",
        str(tmp_path / "runs"),
        "--quiet",
        *args,
    ]
    result = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MEMPLUG_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rd = _run_dir(result)
    records = rd.records()
    assert len(records) == 2 and not any(r.error for r in records), [r.error for r in records]
    assert all(r.reply and r.reply.strip() for r in records)
    assert not _servers_of(tmp_path)
    return rd


@pytest.mark.skipif(importlib.util.find_spec("graphiti_core") is None, reason="memplug[graphiti] not installed")
def test_graphiti_builds_its_graph_with_the_local_model(tmp_path):
    """Graphiti's structured outputs (entities, edges, summaries) from the 135M model, each
    reply JSON: the server bounds each schema's lists and strings, so a model that repeats
    itself is made to close them (unbounded, its ExtractedEdges ran into the 512-token cap
    and the episode failed). The facts it stores carry the episode's message ids; what they
    say is the tiny model's."""
    from memplug import stored

    rd = _eval_trip(tmp_path, "graphiti")
    records = rd.records()
    usage = records[0].ingest_usage  # graphiti's calls, counted by the server
    assert usage is not None and usage.calls >= 3 and usage.prompt_tokens > 1000 and usage.completion_tokens > 10
    (line,) = stored.read(rd.path).values()
    assert line["total"] == len(line["items"]) >= 1
    assert all(set(item["message_ids"]) == TURNS and item["text"] for item in line["items"])
    model = rd.info().resolved["local_models"]["llm"]
    assert model["schema_bounds"] == {"items": 8, "chars": 200, "max_tokens": 2048}


@pytest.mark.skipif(importlib.util.find_spec("cognee") is None, reason="memplug[cognee] not installed")
def test_cognee_cognifies_with_the_local_model(tmp_path):
    """Cognee's own litellm calls and embeddings go to the local server: its schemas as
    grammars (the model listed with litellm as taking one), its vectors from the same GGUF
    served as an embedding model (--embedder litellm:local). The chunk is found and
    credited with its turns; the summary and entity cognify drew from it are the model's."""
    from memplug import stored

    rd = _eval_trip(tmp_path, "cognee", "--embedder", "litellm:local")
    assert rd.summary().metrics.overall["recall@5"] == 1.0
    (line,) = stored.read(rd.path).values()
    kinds = [item["meta"]["type"] for item in line["items"]]
    assert kinds[0] == "DocumentChunk" and set(line["items"][0]["message_ids"]) == TURNS
    assert "TextSummary" in kinds  # cognify's summary call was answered in its schema
    described = rd.info().resolved["local_models"]["llm"]
    assert described["embedding_pooling"] == "mean" and described["embedding_window"] == 2048


@pytest.mark.timeout(600)
def test_letta_agent_on_the_local_model(tmp_path, monkeypatch):
    """The real Letta server (tests/letta_server.py) with the local server as its OpenAI
    endpoint: the agent is created on the local model's handle, its archival passages are
    embedded by the local embedding model (whatever embedding model Letta names) and
    searched, and asked a question the agent answers with the local model. It answers in
    one step, without calling archival_memory_search: Letta's agent sends tool_choice
    "auto", which the server's chat format (the GGUF's own template) ignores."""
    pytest.importorskip("letta_client", reason="memplug[letta] not installed")
    from letta_server import LettaServer, missing, tail

    from memplug.llm import local
    from memplug.runner import Evaluation, RunSpec

    reason = missing()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the real Letta server cannot start: {reason}")
        pytest.skip(reason)
    data = tmp_path / "trip.jsonl"
    data.write_text(json.dumps(TRIP) + "\n")
    server = local.acquire(local.LocalModel.parse("local"))  # the run's LLM joins it: one server
    try:
        with LettaServer(llm_base_url=server.url, llm_api_key=server.key) as letta:
            monkeypatch.setenv("LETTA_BASE_URL", letta.base_url)
            spec = RunSpec(
                agent="letta",
                dataset="conversations",
                data=str(data),
                llm="local",
                reader="llm",
                agent_options={
                    "mode": "message",
                    "passage": "message",
                    # Letta names the models of an OpenAI provider at a custom URL
                    # openai-proxy/<id>; its embedding handle is its own
                    "model": f"openai-proxy/{server.alias}",
                    "embedding": "openai/text-embedding-3-small",
                },
            )
            rd = RunDir(Evaluation(spec).run(output=tmp_path / "runs"))
            records = rd.records()
            assert len(records) == 2 and not any(r.error for r in records), (
                [r.error for r in records],
                tail(letta.log),
            )
    finally:
        local.release(server)
    for record in records:
        assert record.agent_answered and record.reply and record.reply.strip()
        assert record.recalled and all(len(i.message_ids) == 1 and set(i.message_ids) <= TURNS for i in record.recalled)
        usage = record.meta["letta_usage"]  # counted by Letta from the local server's replies
        assert usage["prompt_tokens"] > 100 and usage["completion_tokens"] >= 1
        assert usage["step_count"] == 1  # no tool call: see the docstring
