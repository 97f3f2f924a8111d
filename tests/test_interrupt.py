"""Ctrl-C stops a run within a second whatever the agent does, and a hung agent is its
sample's error (--sample-timeout), never the run's end (issue 26)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest

from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec


def _start(env: dict[str, str], cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "memplug.cli", "eval", *args, "--quiet"],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_records(cwd: Path, n: int, process: subprocess.Popen[str], timeout: float = 60) -> RunDir:
    """The run directory once its samples.jsonl holds ``n`` lines."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        for path in (cwd / "runs").glob("*/samples.jsonl") if (cwd / "runs").exists() else ():
            if path.read_bytes().count(b"\n") >= n:
                return RunDir(path.parent)
        time.sleep(0.05)
    raise AssertionError(f"no {n} records within {timeout} s")


def _interrupt(process: subprocess.Popen[str], times: int = 1) -> tuple[float, str]:
    """Send Ctrl-C (``times``, 0.1 s apart); the seconds until the process ended, and its stderr."""
    t0 = time.monotonic()
    for i in range(times):
        if i:
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("the process did not end within 60 s of Ctrl-C") from None
    return time.monotonic() - t0, err


def test_a_hung_agent_fails_its_sample_and_the_run_goes_on(testkit, tmp_path):
    """A plugin that hung in ingest hung the run forever; with --concurrency 1 every later
    sample would also queue behind the hung thread if it were not given up."""
    spec = RunSpec(agent="lookup", dataset="counting", agent_options={"hang": "s1"}, concurrency=1, sample_timeout=0.5)
    try:
        path = Evaluation(spec).run(output=tmp_path)
    finally:
        testkit.RELEASE.set()
    run = RunDir(path)
    assert run.info().status == "partial"
    records = run.records()
    failed = {r.sample_id for r in records if r.error}
    assert failed == {"s1"} and len(records) == 18
    assert all(
        "ingest did not return within 0.5 s (--sample-timeout)" in str(r.error) for r in records if r.sample_id == "s1"
    )


def test_an_agent_that_hangs_while_it_is_made_fails_its_sample_in_words(testkit, tmp_path):
    spec = RunSpec(
        agent="lookup", dataset="counting", agent_options={"hang_setup": "s1"}, concurrency=1, sample_timeout=0.5
    )
    try:
        path = Evaluation(spec).run(output=tmp_path)
    finally:
        testkit.RELEASE.set()
    errors = {r.error for r in RunDir(path).records() if r.sample_id == "s1"}
    assert errors == {
        "agent set-up failed: the agent's set-up did not return within 0.5 s (--sample-timeout): given up"
    }


def test_sample_timeout_is_an_option_of_eval(testkit_env, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplug.cli",
            "eval",
            "--agent",
            "lookup",
            "--dataset",
            "counting",
            "-o",
            "hang=s0",
            "--sample-timeout",
            "1",
            "--concurrency",
            "1",
            "--quiet",
        ],
        env=testkit_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert "3 of 18 questions failed" in result.stderr and "--sample-timeout" in result.stderr


def test_ctrl_c_stops_a_hung_agent_at_once_and_writes_what_it_has(testkit_env, tmp_path):
    """The resume line was printed but the process stayed alive, waiting for the hung thread."""
    process = _start(
        testkit_env, tmp_path, "--agent", "lookup", "--dataset", "counting", "-o", "hang=s2", "--concurrency", "1"
    )
    run = _wait_for_records(tmp_path, 6, process)
    time.sleep(0.3)  # s2 is in its ingest now
    elapsed, err = _interrupt(process)
    assert process.returncode == 130, err
    assert err == f"memplug: interrupted; finish the run with: memplug eval --resume runs/{run.path.name}\n"
    assert elapsed < 5, elapsed
    assert run.info().status == "interrupted"
    outcome = run.summary().outcome
    assert outcome is not None and (outcome.status, outcome.n_answered, outcome.n_expected) == ("interrupted", 6, 18)


def test_sigterm_stops_a_run_as_ctrl_c_does(testkit_env, tmp_path):
    """`timeout 3 memplug eval ...` (and schedulers, CI runners) send SIGTERM, which killed
    the process at once: run.json stayed "running" with no end, and its lock stayed."""
    process = _start(
        testkit_env, tmp_path, "--agent", "lookup", "--dataset", "counting", "-o", "delay=0.05", "--concurrency", "1"
    )
    run = _wait_for_records(tmp_path, 3, process)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err == f"memplug: interrupted; finish the run with: memplug eval --resume runs/{run.path.name}\n"
    assert run.info().status == "interrupted" and run.info().ended is not None
    assert not (run.path / ".lock").exists()


def test_a_second_ctrl_c_exits_at_once_without_a_traceback(testkit_env, tmp_path):
    process = _start(
        testkit_env, tmp_path, "--agent", "lookup", "--dataset", "counting", "-o", "hang=s1", "--concurrency", "1"
    )
    _wait_for_records(tmp_path, 3, process)
    time.sleep(0.3)
    _, err = _interrupt(process, times=2)
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.startswith("memplug: interrupted"), err
    assert len(err.splitlines()) <= 2, err


def test_ctrl_c_stops_a_run_started_in_the_background_of_a_script(testkit_env, tmp_path):
    """`memplug eval ... &` in a script: the shell starts the job with SIGINT ignored, and
    Python kept it ignored, so `kill -INT` did nothing and the run went on to its end (the
    report: `-o n=20000` not stopped within 3 s). The command takes SIGINT back."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memplug.cli",
            "eval",
            "--agent",
            "lookup",
            "--dataset",
            "counting",
            "-o",
            "samples=2000",
            "-o",
            "delay=0.05",
            "--quiet",
        ],
        env=testkit_env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # what `sh -c 'cmd &'` does
    )
    run = _wait_for_records(tmp_path, 6, process)
    elapsed, err = _interrupt(process)
    assert process.returncode == 130, err
    assert err == f"memplug: interrupted; finish the run with: memplug eval --resume runs/{run.path.name}\n"
    assert elapsed < 5, elapsed


def test_ctrl_c_stops_an_agent_that_holds_the_event_loop(testkit_env, tmp_path):
    """An agent that declares blocking = False runs on the event loop, whose awaits then never
    suspend: the cancellation of a Ctrl-C was seen only when every sample had run."""
    process = _start(
        testkit_env,
        tmp_path,
        "--agent",
        "lookup",
        "--dataset",
        "counting",
        "-o",
        "inline=true",
        "-o",
        "delay=0.005",
        "-o",
        "samples=1000",
        "--concurrency",
        "1",
    )
    run = _wait_for_records(tmp_path, 30, process)
    elapsed, err = _interrupt(process)
    assert process.returncode == 130, err
    assert elapsed < 5, elapsed
    assert run.info().status == "interrupted"
    assert run.summary().n_questions < 2000


@pytest.mark.slow
def test_ctrl_c_stops_bm25_on_8000_memsim_samples(tmp_path):
    """The case of the issue: `memplug eval --agent bm25 --dataset memsim -o n=8000` ran all
    8,000 samples, 21 s past the signal, and wrote no summary.json."""
    process = _start(dict(__import__("os").environ), tmp_path, "--agent", "bm25", "--dataset", "memsim", "-o", "n=8000")
    run = _wait_for_records(tmp_path, 50, process, timeout=240)
    elapsed, err = _interrupt(process)
    assert process.returncode == 130, err
    assert elapsed < 5, elapsed
    assert run.summary().outcome.status == "interrupted"  # type: ignore[union-attr]


# --- what a failure leaves ------------------------------------------------------------


def test_a_full_disk_leaves_a_stopped_status_and_no_lock_temp_file_or_torn_line(testkit, tmp_path, monkeypatch):
    """run.json still said "running", with a stale .lock, two empty temp files and a torn last line."""
    import errno
    import os

    from memplug.errors import RunStopped
    from memplug.results import RecordWriter

    real_flush, real_open = RecordWriter.flush, Path.open
    disk = {"flushes": 1, "full": False}

    def flush(self: RecordWriter) -> None:
        if disk["flushes"] <= 0 and not self._closed:
            disk["full"] = True
            os.write(self._fh.fileno(), b'{"sample_id": "s1", "ques')  # what reached the disk of a line
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._fh.fileno())  # nothing more reaches it
            os.close(null)
            self._failed(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
            return
        disk["flushes"] -= 1
        real_flush(self)

    def open_(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> IO[Any]:
        fh = real_open(self, mode, *args, **kwargs)
        if disk["full"] and "w" in mode:  # a new file gets its name, never its content
            fh.close()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return fh

    monkeypatch.setattr(RecordWriter, "flush", flush)
    monkeypatch.setattr(Path, "open", open_)
    spec = RunSpec(agent="lookup", dataset="counting", agent_options={"delay": "0.02"}, concurrency=1)
    with pytest.raises(RunStopped, match="No space left on device"):
        Evaluation(spec).run(output=tmp_path / "runs")
    monkeypatch.undo()
    (path,) = (tmp_path / "runs").iterdir()
    run = RunDir(path)
    assert run.info().status in ("partial", "failed")
    assert sorted(p.name for p in path.iterdir() if p.name.startswith(".")) == []
    assert run.samples.read_bytes().endswith(b"\n")
    Evaluation(spec).run(resume=path)
    assert run.info().status == "finished" and len(run.records()) == 18 and not (path / ".lock").exists()


# --- a Ctrl-C once the run has its status -------------------------------------------

#: `python -m memplug.cli eval ...` with something that holds the process after the last
#: line: an object freed slowly at the interpreter's teardown, or a thread not a daemon
AFTER_THE_LAST_LINE = """
import sys, threading, time
class Slow:
    def __del__(self, open=open, sleep=time.sleep):
        open("tearing", "w").close()
        sleep(3)
if sys.argv[1] == "teardown":
    sys.modules["memplug_slow_teardown"] = Slow()  # freed after Python reset its handlers
else:
    threading.Thread(target=time.sleep, args=(30,)).start()  # waited for before the atexit handlers
sys.argv = ["memplug", "eval", "--agent", "bm25", "--dataset", "memsim", "-o", "n=2", "--quiet"]
import runpy
runpy.run_module("memplug.cli", run_name="__main__")
"""


@pytest.mark.parametrize("holder", ["teardown", "thread"])
def test_a_ctrl_c_after_the_last_line_keeps_the_runs_exit_status(tmp_path, holder):
    """A Ctrl-C while the interpreter was torn down after a finished run killed it: exit
    status -2 and no line (Python resets its signal handlers then); one while Python waited
    for a thread gave a traceback. The finished run's status 0 stands, at once."""
    process = subprocess.Popen(
        [sys.executable, "-c", AFTER_THE_LAST_LINE, holder],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # the run directory: the command's last line
    assert line.startswith("runs/"), process.communicate()
    deadline = time.monotonic() + 30
    while holder == "teardown" and not (tmp_path / "tearing").exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.01)
    time.sleep(0.3)
    elapsed, err = _interrupt(process)
    assert process.returncode == 0, (process.returncode, err)
    assert err == ""
    assert elapsed < 1 if holder == "thread" else elapsed < 5, elapsed
