"""A run never reports failure as success (issue 14).

Bad configuration ends before the first question with one line and exit 2; a run with
failed questions exits 1 and says so in run.json, summary.json and its last line;
``--resume`` retries the failed questions; errors are told apart by kind; nothing
secret reaches a file; a full disk, a second process and Ctrl-C are handled.

Whole ``memplug`` processes talk to the loopback stub (tests/openai_stub.py) and find
the testkit (dataset ``counting``, agent ``lookup``) through a real entry point.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from memplug.errors import RunInterrupted, RunStopped
from memplug.results import RecordWriter, RunDir, RunLock
from memplug.runner import Evaluation, RunSpec

if TYPE_CHECKING:
    from openai_stub import OpenAIStub

    from memplug.llm import LLM

LOOKUP = [
    "--agent",
    "lookup",
    "--dataset",
    "counting",
    "-o",
    "answer=false",
    "--reader",
    "llm",
    "--llm",
    "openai/stub",
    "--llm-timeout",
    "1",
    "--llm-retries",
    "1",
    "--quiet",
]


def memplug(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`memplug ARGS` in process, through the console script's entry (tests/inprocess.py)."""
    from inprocess import memplug_main

    return memplug_main(args, env=env, cwd=cwd)


def real_memplug(env: dict[str, str], *args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m memplug.cli ARGS`, for what only a process of its own shows: its whole terminal
    output (file descriptors 1 and 2), a lock held by another process."""
    return subprocess.run(
        [sys.executable, "-m", "memplug.cli", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def only_run(root: Path) -> RunDir:
    runs = [p for p in (root / "runs").iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return RunDir(runs[0])


@pytest.fixture
def env(testkit_env: dict[str, str], openai_stub: OpenAIStub) -> dict[str, str]:
    """The testkit through its entry point, no key in the environment, the stub on loopback."""
    out = {k: v for k, v in testkit_env.items() if not k.endswith("_API_KEY")}
    out["no_proxy"] = out["NO_PROXY"] = "127.0.0.1,localhost"
    out["COLUMNS"] = "80"
    return out


# --- preflight: bad configuration fails before the first question --------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--api-base", "http://127.0.0.1:{closed}/v1"], "does not answer"),
        (["--embedder", "bogus"], "unknown embedder 'bogus'"),
        (["--llm-timeout", "inf"], "--llm-timeout"),
        (["--concurrency", "100000"], "--concurrency"),
        (["--llm-deadline", "0.5"], "--llm-deadline"),
    ],
)
def test_bad_configuration_is_one_line_and_exit_2(env, openai_stub, tmp_path, extra, expected):
    args = [a.replace("{closed}", str(closed_port())) for a in extra]
    if "--api-base" not in args:
        args += ["--api-base", openai_stub.base_url]
    result = memplug(env, "eval", *LOOKUP, *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert not openai_stub.chat_requests  # not one question was asked
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_hosted_model_without_its_key_fails_at_once(env, tmp_path):
    result = memplug(
        env, "eval", "--agent", "bm25", "--dataset", "counting", "--llm", "openai/gpt-4o-mini", "--quiet", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "OPENAI_API_KEY" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("model", "key", "base"),
    [
        ("anthropic/claude-3-5-haiku-latest", "ANTHROPIC_API_KEY", "ANTHROPIC_API_BASE"),
        ("gemini/gemini-1.5-flash", "GEMINI_API_KEY", "GEMINI_API_BASE"),
    ],
)
def test_other_hosted_providers_out_of_reach_fail_before_the_first_question(
    env, openai_stub, tmp_path, model, key, base
):
    """Offline with a key set, an Anthropic or Gemini model retried each question's
    connection error for 20 s, 199 LoCoMo questions for an hour (only OpenAI was checked).
    Their server's reach is checked first now: any HTTP answer will do, since their APIs
    are not OpenAI's."""
    from memplug import preflight
    from memplug.llm import LLM

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    args = ["eval", "--agent", "bm25", "--dataset", "counting", "--llm", model, "--reader", "llm", "--quiet"]
    down = {**env, key: "x", base: f"http://127.0.0.1:{closed}"}
    result = memplug(down, *args, cwd=tmp_path)
    assert result.returncode == 2
    line = last_line(result.stderr)
    assert f"--llm {model}: http://127.0.0.1:{closed} does not answer" in line and "offline by default" in line
    assert len(result.stderr.strip().splitlines()) == 1 and not list(tmp_path.glob("runs/*"))
    with pytest.MonkeyPatch.context() as mp:  # a server that answers (404 here) is there
        mp.setenv(key, "x")
        mp.setenv(base, openai_stub.base_url.removesuffix("/v1") + "/nothing-here")
        preflight.check_llm(LLM(model, use_cache=False))


def test_a_hosted_model_out_of_reach_fails_before_the_first_question(env, openai_stub, tmp_path):
    """Offline, an OpenAI model without --api-base would retry a connection error for its
    whole deadline, question after question: its endpoint is checked first (where
    OPENAI_BASE_URL points, else api.openai.com), and one line says why and what to do."""
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    args = ["eval", "--agent", "bm25", "--dataset", "counting", "--llm", "openai/gpt-4o-mini", "--reader", "llm"]
    down = {**env, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": f"http://127.0.0.1:{closed}/v1"}
    result = memplug(down, *args, "--quiet", cwd=tmp_path)
    assert result.returncode == 2
    line = last_line(result.stderr)
    assert f"127.0.0.1:{closed}/v1 does not answer" in line and "offline by default" in line
    assert len(result.stderr.strip().splitlines()) == 1 and not list(tmp_path.glob("runs/*"))
    up = {**env, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai_stub.base_url}
    result = memplug(up, *args, "--quiet", cwd=tmp_path)  # checked, then called through litellm
    assert result.returncode == 0, result.stderr
    assert openai_stub.chat_requests


def test_an_endpoint_that_refuses_the_key_fails_before_the_first_question(env, openai_stub, tmp_path, monkeypatch):
    import openai_stub as stub_module

    def refuse(handler: Any) -> None:
        handler._send_json(401, {"error": {"message": "Incorrect API key provided: sk-wrong"}})

    monkeypatch.setattr(stub_module._Handler, "do_GET", refuse)
    result = memplug(
        {**env, "OPENAI_API_KEY": "sk-wrong-key-123"}, "eval", *LOOKUP, "--api-base", openai_stub.base_url, cwd=tmp_path
    )
    assert result.returncode == 2
    assert "refused the key (HTTP 401)" in result.stderr
    assert "sk-wrong-key-123" not in result.stderr
    assert not openai_stub.chat_requests


def test_an_endpoint_that_never_answers_fails_within_the_probe_timeout(env, tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)  # accepts connections (the backlog) and never answers
    try:
        result = memplug(
            {**env, "MEMPLUG_PROBE_TIMEOUT": "0.5"},
            "eval",
            *LOOKUP,
            "--api-base",
            f"http://127.0.0.1:{server.getsockname()[1]}/v1",
            cwd=tmp_path,
        )
        assert result.returncode == 2
        assert "no answer within 0.5s" in result.stderr  # the probe's timeout ended it, nothing later
    finally:
        server.close()


def test_an_agent_that_needs_an_llm_stops_before_loading_data(env, tmp_path):
    result = memplug(
        env, "eval", "--agent", "emg", "--dataset", "counting", "-o", "extractor=llm", "--quiet", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "needs an LLM for -o extractor=llm: set --llm MODEL" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_mem0_without_an_llm_chooses_its_offline_mode_and_says_so():
    from memplug.adapters.mem0 import Mem0Agent
    from memplug.errors import MemplugError

    from memplug.adapters.mem0 import search_gaps

    plan = Mem0Agent.preflight({"infer": True, "threshold": 0.1}, {}, None)
    assert plan.values["infer"] is False and plan.note is not None
    lines = plan.note.splitlines()
    assert lines[0] == "mem0 keeps messages verbatim (infer=false); give --llm to extract facts"
    assert all(len(f"memplug: {line}") <= 80 for line in lines)  # as `eval` prints them
    with pytest.raises(MemplugError, match="infer=true needs an LLM"):
        Mem0Agent.preflight({"infer": True, "threshold": 0.1}, {"infer": "true"}, None)
    # any LLM at all: preflight only asks whether one was given; what search lacks is said either way
    with_llm = Mem0Agent.preflight({"infer": True, "threshold": 0.1}, {}, cast("LLM", object()))
    assert with_llm.values["infer"] is True
    assert with_llm.note == (lines[1] if search_gaps() else None)


def test_mem0_offline_says_its_search_lacks_bm25_and_spacy(monkeypatch, tmp_path):
    """mem0ai 2.x downloads fastembed's Qdrant/bm25 and spaCy's model on first use; offline it
    logged three lines of failure a sample and searched by embedding alone, unrecorded."""
    pytest.importorskip("mem0")
    from memplug.adapters import mem0

    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))  # an empty cache: nothing to load
    mem0.search_gaps.cache_clear()
    try:
        gaps = mem0.search_gaps()
    finally:
        mem0.search_gaps.cache_clear()
    assert mem0.BM25_GAP in gaps
    note = mem0.Mem0Agent.preflight({"infer": False, "threshold": 0.1}, {"infer": "false"}, None).note
    assert note is not None and "mem0 search has no BM25 (Qdrant/bm25)" in note


# --- errors by kind, and the outcome -------------------------------------------------


def test_a_bad_request_stops_the_run_at_once_and_keeps_it_resumable(env, openai_stub, tmp_path):
    calls = 0

    def third_fails(body: dict[str, Any]) -> str:
        return "apple"

    openai_stub.reply = third_fails
    admit = openai_stub._admit

    def every_third_400(path: str, body: dict[str, Any], auth: str) -> str | None:
        nonlocal calls
        calls += 1
        return admit(path, body, auth) or ("400" if calls % 3 == 0 else None)

    openai_stub._admit = every_third_400
    result = memplug(env, "eval", *LOOKUP, "--api-base", openai_stub.base_url, "--concurrency", "1", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    line = last_line(result.stderr)
    assert "HTTP 400" in line and "memplug eval --resume" in line
    assert len(openai_stub.chat_requests) == 3  # stopped at the first 400, not retried, no question after it
    run = only_run(tmp_path)
    stored = run.info()
    assert stored.status == "partial" and stored.outcome is not None and stored.outcome.stopped is not None
    assert "HTTP 400" in stored.outcome.stopped
    assert (stored.outcome.n_failed, stored.outcome.n_unasked) == (0, 16)  # none failed on its own: it stopped
    assert len(run.records()) == 2 and not any(r.error for r in run.records())


def test_calls_in_flight_when_a_run_stops_end_quietly(env, openai_stub, tmp_path):
    """A fatal error stops the run while other samples' calls are in flight: they are
    cancelled before their connection pool is closed, so memplug.log shows no attempt of
    theirs failing "with no answer" and being retried."""
    openai_stub.latency = 0.5
    openai_stub.fail_next(1, "401")
    at = LOOKUP.index("--llm-timeout")
    args = LOOKUP[:at] + LOOKUP[at + 2 :]  # a timeout no call of this test can reach
    result = memplug(
        env,
        "eval",
        *args,
        "--llm-timeout",
        "20",
        "--api-base",
        openai_stub.base_url,
        "--concurrency",
        "4",
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert "HTTP 401" in last_line(result.stderr)
    log = (only_run(tmp_path).path / "memplug.log").read_text()
    assert "retrying" not in log and "no answer" not in log, log


def test_failed_questions_exit_1_and_resume_retries_them(env, openai_stub, tmp_path):
    openai_stub.reply = lambda body: "" if "item 2-1" in body["messages"][-1]["content"] else "apple"
    result = memplug(env, "eval", *LOOKUP, "--api-base", openai_stub.base_url, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    run = only_run(tmp_path)
    line = last_line(result.stderr)
    assert line.startswith("memplug: partial: 1 of 18 questions failed; first error:")
    assert "empty reply" in line and line.endswith(f"memplug eval --resume runs/{run.path.name}")
    outcome = run.summary().outcome
    assert run.info().status == "partial" and outcome is not None and outcome.status == "partial"
    assert run.summary().n_errors == 1
    # the empty reply was not cached: the resume asks again, and now gets an answer
    openai_stub.reply = lambda body: "apple"
    asked_before = len(openai_stub.chat_requests)
    again = memplug(env, "eval", "--resume", str(run.path), "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert last_line(again.stdout) == str(run.path)
    records = run.records()
    assert len(records) == 18 and not any(r.error for r in records)
    assert len({r.key for r in records}) == 18  # replaced, never duplicated
    # only the failed question reaches the server: its sample's other two come from the cache
    assert len(openai_stub.chat_requests) - asked_before == 1
    outcome = run.summary().outcome
    assert run.info().status == "finished" and outcome is not None and outcome.status == "finished"


def test_every_question_failing_is_a_failed_run(env, openai_stub, tmp_path):
    openai_stub.fail_next(10_000, "context")
    result = memplug(env, "eval", *LOOKUP, "--api-base", openai_stub.base_url, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert last_line(result.stderr).startswith("memplug: failed: 18 of 18 questions failed")
    assert only_run(tmp_path).info().status == "failed"
    assert len(openai_stub.chat_requests) == 18  # too long for the model: that question's error, never retried


def test_a_null_reply_is_an_error_not_an_empty_answer(openai_stub, testkit, tmp_path):
    openai_stub.reply = lambda body: None
    path = Evaluation(
        RunSpec(
            agent="lookup",
            dataset="counting",
            llm="openai/stub",
            api_base=openai_stub.base_url,
            reader="llm",
            agent_options={"answer": "false"},
            llm_retries=0,
            dataset_options={"samples": "1"},
        )
    ).run(output=tmp_path)
    records = RunDir(path).records()
    assert all(
        r.error is not None and "empty reply" in r.error and r.prediction is None and r.scores == {} for r in records
    )


# --- the run directory: lock, full disks, interruptions ------------------------------


def test_a_second_process_cannot_resume_a_run_in_progress(env, testkit, tmp_path):
    path = Evaluation(RunSpec(agent="lookup", dataset="counting")).run(output=tmp_path / "runs")
    lock = RunLock(path).acquire()
    try:
        result = real_memplug(env, "eval", "--resume", str(path), "--quiet", cwd=tmp_path)
    finally:
        lock.release()
    assert result.returncode == 2
    assert "is being run by another memplug process" in result.stderr
    assert memplug(env, "eval", "--resume", str(path), "--quiet", cwd=tmp_path).returncode == 0


def test_a_full_output_disk_is_one_line_and_the_run_stays_resumable(testkit, tmp_path, monkeypatch):
    real_flush = RecordWriter.flush
    budget = {"flushes": 1}

    def flush(self: RecordWriter) -> None:
        if budget["flushes"] <= 0:
            self._failed(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
            return
        budget["flushes"] -= 1
        real_flush(self)

    monkeypatch.setattr(RecordWriter, "flush", flush)
    spec = RunSpec(agent="lookup", dataset="counting", agent_options={"delay": "0.02"}, concurrency=1)
    with pytest.raises(RunStopped, match="No space left on device.*memplug eval --resume"):
        Evaluation(spec).run(output=tmp_path / "runs")
    run = only_run(tmp_path)
    assert run.info().status in ("running", "partial", "failed")
    monkeypatch.setattr(RecordWriter, "flush", real_flush)
    Evaluation(spec).run(resume=run.path)
    assert run.info().status == "finished" and len(run.records()) == 18


def test_a_full_cache_disk_warns_once_and_keeps_every_answer(openai_stub, testkit, tmp_path, monkeypatch, capfd):
    import memplug.cache

    def full(*args: Any, **kwargs: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(memplug.cache.ResponseCache, "put", full)
    monkeypatch.setattr(memplug.cache.ResponseCache, "put_many", full)
    monkeypatch.setattr(memplug.cache, "_WARNED_CACHE", False)
    openai_stub.reply = lambda body: "apple"
    path = Evaluation(
        RunSpec(
            agent="lookup",
            dataset="counting",
            llm="openai/stub",
            api_base=openai_stub.base_url,
            reader="llm",
            agent_options={"answer": "false"},
        )
    ).run(output=tmp_path)
    run = RunDir(path)
    assert run.info().status == "finished"
    assert not any(r.error for r in run.records())
    err = capfd.readouterr().err
    assert err.count("cannot be written (database or disk is full); going on uncached") == 1


def test_an_unwritable_cache_directory_is_one_warning_line(env, openai_stub, tmp_path):
    """Before a run has its memplug.log, the warning's log record went to Python's last-resort
    handler too: the terminal showed the line twice, once without "memplug: warning:"."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = real_memplug(
        {**env, "MEMPLUG_CACHE_DIR": str(blocker / "cache")},
        "eval",
        *LOOKUP,
        "--api-base",
        openai_stub.base_url,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "cannot be written" in line]
    assert len(warnings) == 1 and warnings[0].startswith("memplug: warning: cache "), result.stderr


def test_a_new_run_directory_holds_its_run_json_from_the_start(testkit, tmp_path):
    evaluation = Evaluation(RunSpec(agent="lookup", dataset="counting"))
    run_id, path = evaluation.new_run_dir(tmp_path)
    assert RunDir(path).info().status == "running"
    assert [p.name for p in tmp_path.iterdir()] == [run_id]  # no staging folder left behind
    Evaluation(RunSpec(agent="lookup", dataset="counting")).run(resume=path)
    assert RunDir(path).info().status == "finished"


def _before_memplug_ran(err: str) -> bool:
    """A KeyboardInterrupt traceback from before the console script called memplug's ``main``
    (whose first act is to catch it): Python's own start-up (``site``), the script's import
    line, the package's ``__init__`` and what the standard library imports for them."""
    frames = [line.strip() for line in err.splitlines() if line.strip().startswith("File ")]
    return (
        err.rstrip().endswith("KeyboardInterrupt")
        and bool(frames)
        and not any("_console.py" in frame and frame.endswith(", in main") for frame in frames)
    )


@pytest.mark.slow
@pytest.mark.parametrize("after_s", [0.05, 0.2, 0.4, 0.7, 1.2])
def test_ctrl_c_at_any_moment_is_one_line_without_a_traceback(env, tmp_path, after_s):
    console = Path(sys.executable).parent / "memplug"  # the installed command, as a user starts it
    process = subprocess.Popen(
        [
            str(console),
            "eval",
            "--agent",
            "lookup",
            "--dataset",
            "counting",
            "-o",
            "delay=0.05",
            "--concurrency",
            "1",
            "--quiet",
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(after_s)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    if _before_memplug_ran(err):  # on a loaded 2-core machine start-up alone has taken over 0.2 s
        pytest.skip(
            f"SIGINT arrived {after_s} s after the start, while Python was still starting (site, the "
            "console script's own import), before memplug's main ran: no program can catch that"
        )
    assert "Traceback" not in err, err
    if process.returncode == 130:
        assert len(err.strip().splitlines()) == 1 and err.startswith("memplug: interrupted")
    runs = tmp_path / "runs"
    for run in runs.iterdir() if runs.exists() else []:
        assert RunDir(run).info().run_id == run.name  # whatever was created can be resumed
        if process.returncode == 130:
            assert f"memplug eval --resume runs/{run.name}" in err


# --- secrets -------------------------------------------------------------------------


def test_no_secret_reaches_a_file_or_the_terminal(env, openai_stub, tmp_path):
    secrets = {"password": "pa55w0rdXY", "query key": "QUERYKEY77", "short env key": "sk9"}
    host, port = openai_stub.base_url.split("//")[1].split("/")[0].split(":")
    api_base = f"http://user:{secrets['password']}@{host}:{port}/v1?api-key={secrets['query key']}"
    openai_stub.reply = lambda body: "" if "item 1-1" in body["messages"][-1]["content"] else "apple"
    run_env = {**env, "OPENAI_API_KEY": secrets["short env key"]}
    result = real_memplug(run_env, "eval", *LOOKUP[:-1], "--api-base", api_base, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    run = only_run(tmp_path)
    report = real_memplug(run_env, "report", str(run.path), "--html", str(tmp_path / "page.html"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    # the key did reach the server, so it was used, and only there
    assert any(auth == f"Bearer {secrets['short env key']}" for _, _, auth in openai_stub.log)
    texts = {"stdout": result.stdout, "stderr": result.stderr, "report": report.stdout + report.stderr}
    for file in [*run.path.rglob("*"), tmp_path / "page.html"]:
        if file.is_file():
            texts[str(file)] = file.read_text(encoding="utf-8", errors="replace")
    assert "run.json" in " ".join(texts) and "memplug.log" in " ".join(texts)
    for what, secret in secrets.items():
        for where, text in texts.items():
            assert secret not in text, f"{what} found in {where}"
    # resuming asks for the --api-base that run.json cannot keep whole
    again = memplug(run_env, "eval", "--resume", str(run.path), cwd=tmp_path)
    assert again.returncode == 2 and "pass --api-base again" in again.stderr


def test_ctrl_c_while_the_run_directory_is_made_leaves_no_empty_directory(testkit, tmp_path, monkeypatch):
    """The name is claimed by an empty directory, then filled by a rename: Ctrl-C in between left
    a directory without run.json, which --resume refuses (seen once in the Ctrl-C test above)."""
    import memplug.driver as driver_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(driver_module, "write_json_atomic", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Evaluation(RunSpec(agent="lookup", dataset="counting")).new_run_dir(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_just_after_the_run_directory_exists_names_it_for_resume(testkit, tmp_path, monkeypatch):
    """Between the new directory and the sample loop (the lock, the log file, the first
    run.json write) a Ctrl-C ended in "memplug: interrupted" without the resume command."""

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(RunLock, "acquire", interrupted)
    with pytest.raises(RunInterrupted) as caught:
        Evaluation(RunSpec(agent="lookup", dataset="counting")).run(output=tmp_path)
    (run,) = tmp_path.iterdir()
    assert caught.value.run_dir == str(run)
    monkeypatch.undo()
    Evaluation(RunSpec(agent="lookup", dataset="counting")).run(resume=run)
    assert RunDir(run).info().status == "finished"


def test_ctrl_c_while_the_command_line_is_parsed_is_one_line(env, tmp_path, monkeypatch):
    """click's own main() answered a Ctrl-C during parsing with a blank line before ours
    (seen once by the Ctrl-C test above under load)."""
    from inprocess import memplug_main

    from memplug.cli import cli

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "make_context", interrupted)
    result = memplug_main(["list"], env=env, cwd=tmp_path)
    assert result.returncode == 130 and result.stderr == "memplug: interrupted\n"
