"""Ctrl-C in `memplug sweep` (issue 26): within a second, in this process or with a pool of
cells (--workers), every finished record and cell kept, one line naming the sweep's own
resume command (it named one cell's `eval --resume`, and the pool ran every cell left
before it ended), exit 130; a second Ctrl-C ends it at once. Ray: tests/integration/test_ray.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memplug import ray_reaper
from memplug.results import RunDir
from memplug.sweep import Sweep, cell_state

#: cell 0 short (6 questions), the others 400 samples of 50 ms each: running when Ctrl-C comes
CONFIG = """
[base]
agent = "lookup"
dataset = "counting"
concurrency = 1
options = { delay = "0.05" }
[grid]
options = [{ samples = "2" }, { samples = "400" }, { samples = "400" }]
"""


def _start(env: dict[str, str], cwd: Path, *args: str, config: str = CONFIG) -> subprocess.Popen[str]:
    """`memplug sweep` of ``config``, in a session of its own (so that a test can send a
    Ctrl-C to its process group as a terminal does)."""
    (cwd / "s.toml").write_text(config)
    return subprocess.Popen(
        [sys.executable, "-m", "memplug.cli", "sweep", "s.toml", "--output", "sw", "--quiet", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _wait_for_cells(cwd: Path, process: subprocess.Popen[str], running: int) -> Sweep:
    """The sweep once ``running`` of its long cells have 10 records each."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        busy = [p for p in cwd.glob("sw/*/runs/*-c00[12]-*/samples.jsonl") if p.read_bytes().count(b"\n") >= 10]
        if len(busy) >= running:
            (path,) = (cwd / "sw").iterdir()
            return Sweep(path)
        time.sleep(0.05)
    raise AssertionError(f"no {running} cells running within 60 s")


def _lines(cwd: Path, cells: str) -> list[int]:
    """The records on file of the sweep's cells whose index matches ``cells`` (a glob)."""
    return [p.read_bytes().count(b"\n") for p in sorted(cwd.glob(f"sw/*/runs/*-{cells}-*/samples.jsonl"))]


def _interrupt(process: subprocess.Popen[str], times: int = 1, group: bool = False) -> tuple[float, str]:
    """Ctrl-C (``times``, 0.1 s apart) to the process, or to its group; the seconds until it
    ended, and its stderr."""
    t0 = time.monotonic()
    for i in range(times):
        if i:
            time.sleep(0.1)
        if group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError("the sweep did not end within 60 s of Ctrl-C") from None
    return time.monotonic() - t0, err


def _statuses(sweep: Sweep) -> tuple[str, list[str], list[str]]:
    """The manifest's status, its cells', and what --resume would do with each cell."""
    manifest = sweep.read()
    cells = manifest["cells"]
    return manifest["status"], [c["status"] for c in cells], [cell_state(sweep.path, c) for c in cells]


def _run_status(sweep: Sweep, index: int) -> tuple[str | None, int, int]:
    """A cell's run.json status, its questions on file and those its summary counts."""
    run = RunDir(sweep.path / sweep.read()["cells"][index]["path"])
    outcome = run.summary().outcome
    assert outcome is not None
    return run.info().status, len(run.records()), outcome.n_answered


def test_ctrl_c_names_the_sweeps_resume_and_keeps_every_finished_cell(testkit_env, tmp_path):
    """The line named cell c001's `memplug eval --resume`, which finishes that cell alone,
    and sweep.json still said "running" with the cell "pending"."""
    process = _start(testkit_env, tmp_path)
    sweep = _wait_for_cells(tmp_path, process, running=1)
    elapsed, err = _interrupt(process)
    assert process.returncode == 130, err
    assert err == f"memplug: interrupted; finish the sweep with: memplug sweep --resume sw/{sweep.path.name}\n"
    assert elapsed < 3, elapsed
    assert _statuses(sweep) == ("interrupted", ["finished", "interrupted", "pending"], ["finished", "resume", "new"])
    status, on_file, answered = _run_status(sweep, 1)
    assert status == "interrupted" and on_file == answered >= 10


def test_a_second_ctrl_c_ends_a_sweep_at_once_without_a_traceback(testkit_env, tmp_path):
    process = _start(testkit_env, tmp_path)
    sweep = _wait_for_cells(tmp_path, process, running=1)
    _, err = _interrupt(process, times=2)
    assert process.returncode == 130, err
    assert "Traceback" not in err and len(err.splitlines()) <= 2, err
    assert err.splitlines()[-1].endswith(f"finish the sweep with: memplug sweep --resume sw/{sweep.path.name}"), err


@pytest.mark.parametrize("group", [False, True], ids=["to-the-sweep", "to-every-process"])
def test_ctrl_c_stops_every_process_of_a_pool_of_cells(testkit_env, tmp_path, group):
    """--workers 2: the pool's exit waited for its cells, then ran the one left (over a
    minute here); with the Ctrl-C of a terminal, which every process gets, as well. Now the
    running cells end as interrupted, the third never starts, no process outlives the sweep."""
    process = _start(testkit_env, tmp_path, "--workers", "2")
    sweep = _wait_for_cells(tmp_path, process, running=2)
    table = ray_reaper.processes()
    family = ray_reaper.descendants({(process.pid, table[process.pid][1])}, table)
    assert len(family) >= 3  # the sweep and its two processes (and multiprocessing's resource tracker)
    elapsed, err = _interrupt(process, group=group)
    assert process.returncode == 130, err
    assert err == f"memplug: interrupted; finish the sweep with: memplug sweep --resume sw/{sweep.path.name}\n"
    assert elapsed < 3, elapsed
    deadline = time.monotonic() + 5
    while ray_reaper.descendants(family, ray_reaper.processes()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ray_reaper.descendants(family, ray_reaper.processes())
    manifest_status, cells, states = _statuses(sweep)
    assert (manifest_status, states) == ("interrupted", ["finished", "resume", "resume"]), (cells, states)
    for index in (1, 2):
        status, on_file, answered = _run_status(sweep, index)
        assert status == "interrupted" and on_file == answered >= 10


def test_a_second_ctrl_c_leaves_no_process_of_the_pool(testkit_env, tmp_path):
    """sweep.json said "running", the two cells stopped "pending" (the first Ctrl-C's
    write was cut short, or not made yet): it says what a single Ctrl-C has it say."""
    process = _start(testkit_env, tmp_path, "--workers", "2")
    sweep = _wait_for_cells(tmp_path, process, running=2)
    table = ray_reaper.processes()
    family = ray_reaper.descendants({(process.pid, table[process.pid][1])}, table)
    _, err = _interrupt(process, times=2)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "leaked" not in err and len(err.splitlines()) <= 2, err
    deadline = time.monotonic() + 5
    while ray_reaper.descendants(family, ray_reaper.processes()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ray_reaper.descendants(family, ray_reaper.processes())
    assert json.loads(next((tmp_path / "sw").glob("*/sweep.json")).read_text())["cells"][0]["status"] == "finished"
    assert _statuses(sweep) == (
        "interrupted",
        ["finished", "interrupted", "interrupted"],
        ["finished", "resume", "resume"],
    )


def test_ctrl_c_ends_a_pool_process_that_an_agents_hung_thread_holds(testkit_env, tmp_path):
    """A process whose agent hangs in ingest cannot end (Python waits for the thread): it
    is killed once its cell's files are written, and the sweep still ends within ~a second."""
    hung = CONFIG.replace('delay = "0.05" }', 'delay = "0.05", hang = "s5" }')  # the 6th sample hangs
    process = _start(testkit_env, tmp_path, "--workers", "2", config=hung)
    sweep = _wait_for_cells(tmp_path, process, running=2)
    deadline = time.monotonic() + 30  # both cells hang in s5 once their first 5 samples (15 records) are on file
    while _lines(tmp_path, "c00[12]") != [15, 15] and time.monotonic() < deadline:
        time.sleep(0.05)
    table = ray_reaper.processes()
    family = ray_reaper.descendants({(process.pid, table[process.pid][1])}, table)
    elapsed, err = _interrupt(process)
    assert process.returncode == 130, err
    assert elapsed < 3, elapsed
    assert err == f"memplug: interrupted; finish the sweep with: memplug sweep --resume sw/{sweep.path.name}\n"
    deadline = time.monotonic() + 5
    while ray_reaper.descendants(family, ray_reaper.processes()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ray_reaper.descendants(family, ray_reaper.processes())
    for index in (1, 2):
        assert _run_status(sweep, index) == ("interrupted", 15, 15)


POOL_HELD = """
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

from memplug.cli import _exit

if __name__ == "__main__":
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    pool.submit(abs, -1).result()
    held = (pool._call_queue, pool._result_queue)  # as the frames of a Ctrl-C's traceback held them
    pool.shutdown()
    _exit(130, now=True)
"""


def test_the_exit_after_a_ctrl_c_leaves_no_semaphore_of_a_pool_to_warn_of(testkit_env, tmp_path):
    """A sweep of two processes stopped by one Ctrl-C printed, after its line, the resource
    tracker's "There appear to be 5 leaked semaphore objects" (the pool's two queues')."""
    (tmp_path / "held.py").write_text(POOL_HELD)
    done = subprocess.run(
        [sys.executable, "held.py"], env=testkit_env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130 and done.stderr == "", done.stderr
