"""The reaper of a local Ray session (memplug.ray_reaper): after a SIGKILL of a driver of
`memplug eval --executor ray`, ray::DashboardAgent and ray::RuntimeEnvAgent (about 200 MB)
lived on for one to two minutes (issue 26). Here on a stand-in session of plain processes,
without Ray: a root (as the raylet) whose child outlives it (as the agents)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any, Iterator

import pytest

from memplug import executors, ray_reaper

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="the reaper reads /proc (Linux)")

ROOT = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); time.sleep(120)"
)


def _alive(pid: int) -> bool:
    return pid in ray_reaper.processes()


def _wait(predicate: Any, timeout: float) -> float:
    """Seconds until ``predicate()`` held; fails after ``timeout``."""
    t0 = time.monotonic()
    while not predicate():
        assert time.monotonic() - t0 < timeout, f"not within {timeout} s"
        time.sleep(0.05)
    return time.monotonic() - t0


@pytest.fixture
def session() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A root process and the child it started (its "agent"), both killed after the test."""
    root = subprocess.Popen([sys.executable, "-c", ROOT])
    found: list[int] = []

    def child_started() -> bool:
        found[:] = [pid for pid, (ppid, _) in ray_reaper.processes().items() if ppid == root.pid]
        return bool(found)

    _wait(child_started, 30)
    yield root, found[0]
    for pid in (root.pid, found[0]):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    root.wait()
    executors.stop_ray_reaper()


def test_the_session_ends_when_the_driver_is_gone(session):
    """The driver's end of the pipe closed (its death, whatever the signal, or its close)."""
    root, child = session
    executors._start_reaper([root.pid])
    assert executors._reaper is not None
    reaper = executors._reaper[0]
    time.sleep(2 * ray_reaper.REFRESH_S)
    assert _alive(root.pid) and _alive(child)  # the driver lives: nothing is touched
    executors.stop_ray_reaper()
    assert reaper.returncode == 0
    assert not _alive(root.pid) and not _alive(child)


def test_a_child_left_by_its_ended_root_is_ended_too(session):
    """As the raylet, killed with the driver by the kernel, leaves its agents behind."""
    root, child = session
    executors._start_reaper([root.pid])
    assert executors._reaper is not None
    reaper = executors._reaper[0]
    time.sleep(2 * ray_reaper.REFRESH_S)  # the reaper has seen the child
    os.kill(root.pid, signal.SIGKILL)
    root.wait()
    elapsed = _wait(lambda: not _alive(child), 5)
    assert elapsed < 2 * ray_reaper.REFRESH_S + ray_reaper.GRACE_S + 1, elapsed
    assert reaper.wait(timeout=5) == 0  # and the reaper is gone with the session


def test_a_pid_used_again_is_never_signalled():
    """A process is known by its pid and its start time."""
    table = {10: (1, 500), 11: (10, 501), 12: (11, 502), 20: (1, 900)}
    assert ray_reaper.descendants({(10, 500)}, table) == {(10, 500), (11, 501), (12, 502)}
    assert ray_reaper.descendants({(10, 400)}, table) == set()  # pid 10 is another process now
    assert ray_reaper.descendants({(11, 501), (30, 1)}, table) == {(11, 501), (12, 502)}


def test_the_reaper_refuses_bad_arguments():
    result = subprocess.run(
        [sys.executable, "-I", "-S", ray_reaper.__file__, "x"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and result.stderr.startswith("usage:")


def test_only_a_session_started_here_is_reaped(monkeypatch):
    """Never a cluster given with --address: its processes are not this run's."""
    ray = pytest.importorskip("ray")
    from ray._private import ray_constants

    started: list[list[int]] = []
    # what ray_init sets for a session on loopback, put back after the test
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", ray_constants.ENABLE_RAY_CLUSTER)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: None)
    monkeypatch.setattr(executors, "_start_reaper", started.append)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    executors.ray_init(address="ray://10.1.2.3:10001")
    executors.ray_init(address="127.0.0.1:6379")  # a `ray start` on this machine: not ours either
    assert started == []
    executors.ray_init()
    assert started == [[]]  # (the stub started no process)
