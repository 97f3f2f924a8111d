"""The reaper of a local Ray session that memplug started: when the memplug process dies,
even by SIGKILL, the session's processes end within a second or two.

Ray starts its head processes (``gcs_server``, ``raylet``, ...) so that the kernel kills
them with the driver (``PR_SET_PDEATHSIG``), but the raylet's children do not share that
fate: ``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent`` (about 200 MB) find the raylet
gone by polling it, then report its death to the GCS, which died too, and lived on for one
to two minutes after a killed ``memplug eval --executor ray`` (ray 2.60,
``ray/_private/process_watcher.py``: ``_check_parent``, then ``report_raylet_error_logs``).

:func:`memplug.executors.ray_init` starts this script for the local session it started
(never for a cluster joined by address), in a process session of its own (a Ctrl-C at the
terminal does not reach it), with the processes ``ray.init`` started as arguments and the
read end of a pipe as stdin whose write end only the driver holds. Every REFRESH_S it
notes those processes and their descendants; when the driver is gone (the pipe is closed:
its death, or the executor's close) or the processes ``ray.init`` started are (a
``ray.shutdown()``), it ends what is left of them: SIGTERM, then SIGKILL after GRACE_S.
A process is known by its pid and start time, so a pid used again is never signalled.

It reads ``/proc`` (Linux, where Ray runs its clusters); elsewhere it is not started. It
imports nothing outside the standard library and runs with ``python -I -S``: a few MB.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

#: seconds between two looks at the session's processes
REFRESH_S = 0.5
#: seconds the processes left have to end on SIGTERM before SIGKILL
GRACE_S = 1.0

#: a process: its pid and its start time (in clock ticks since boot)
Process = tuple[int, int]


def processes() -> dict[int, tuple[int, int]]:
    """Every live process of this machine: pid -> (parent pid, start time); zombies left out."""
    found: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:  # ended meanwhile
            continue
        # after "pid (comm) ": state, ppid, ... starttime is the 20th field from the state
        fields = stat[stat.rindex(b")") + 2 :].split()
        if fields[0] not in (b"Z", b"X"):
            found[int(name)] = (int(fields[1]), int(fields[19]))
    return found


def descendants(known: set[Process], table: dict[int, tuple[int, int]]) -> set[Process]:
    """``known`` still alive, with every live descendant of them."""
    alive = {(pid, start) for pid, start in known if table.get(pid, (0, -1))[1] == start}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    todo = [pid for pid, _ in alive]
    while todo:
        for child in children.get(todo.pop(), ()):
            entry = (child, table[child][1])
            if entry not in alive:
                alive.add(entry)
                todo.append(child)
    return alive


def end(session: set[Process], grace: float = GRACE_S) -> None:
    """SIGTERM to the processes of ``session`` still alive, SIGKILL to those alive after ``grace``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = descendants(session, processes())
        for pid, _ in left:
            try:
                os.kill(pid, sig)
            except OSError:  # ended meanwhile
                pass
        deadline = time.monotonic() + grace
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = descendants(left, processes())
        if not left:
            return


def watch(roots: list[int], driver: int, refresh: float = REFRESH_S) -> None:
    """Until ``driver`` (a file descriptor, the read end of the driver's pipe) is closed or
    every root has ended, note the roots' descendants; then end them."""
    table = processes()
    started = {(pid, table[pid][1]) for pid in roots if pid in table}
    session = descendants(started, table)
    while True:
        readable, _, _ = select.select([driver], [], [], refresh)
        if readable and not os.read(driver, 4096):
            break  # the driver is gone
        table = processes()
        if not descendants(started, table):
            break  # the session was shut down
        session = descendants(session, table)
    end(session)


def main(argv: list[str]) -> int:
    """``ray_reaper.py ROOT_PID...`` with the driver's pipe as stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        roots = [int(pid) for pid in argv]
    except ValueError:
        sys.stderr.write("usage: ray_reaper.py ROOT_PID... (the driver's pipe as stdin)\n")
        return 2
    watch(roots, sys.stdin.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
