"""A command's exit status stands once it has one: a Ctrl-C after the last line neither kills
the process nor changes its status (used by the ``memplug`` command and ``python -m
memplug.cli``, never by :func:`memplug.cli.main`, which tests call in their own process).

Python resets its signal handlers to the default while it tears the interpreter down
(after the atexit handlers), so a Ctrl-C then, say while the objects of a large run were
freed, killed a finished run: exit status -2 and no line; one while Python waited for a
thread a plugin left gave a traceback. From the status on, a Ctrl-C ends the process at
once with it, and from the last atexit handler on it is ignored.

It imports only builtin modules: :func:`install` runs before the command line is imported.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys

#: typing's constant without importing typing (as in memplug/__init__.py)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import Callable

#: the command's exit status, once it has one
_status: list[int] = []


def install() -> None:
    """Call first: registered before the libraries the command imports register theirs, the
    handler that ignores Ctrl-C runs last of the atexit handlers (they run in reverse).

    A Ctrl-C must stop the command however it was started. A non-interactive shell starts
    a background job (``memplug eval ... &`` in a script) with SIGINT ignored, and Python
    then leaves it ignored: ``kill -INT`` did nothing and the run went on to its end. The
    command takes SIGINT back (Python's own handler, a KeyboardInterrupt) as it would have
    had it in the foreground.

    SIGTERM (what ``kill``, ``timeout``, schedulers and CI runners send) is taken as a
    Ctrl-C: by default it killed the process at once, leaving run.json "running" with
    no end and its lock behind. Now the run stops as it does on Ctrl-C (interrupted, its
    resume command said); a second one, or one after the exit status stands, does what a
    Ctrl-C then does. A SIGTERM ignored by the parent stays ignored."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _as_interrupt)
    atexit.register(_ignore_interrupts)


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM: whatever SIGINT's handler is now (a KeyboardInterrupt, the run's "interrupted
    again" exit, the standing status's exit, or nothing once ignored)."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    elif handler == signal.SIG_DFL:
        raise KeyboardInterrupt


def run(main: Callable[[], None]) -> None:
    """``main()``, whose SystemExit gives the process its status."""
    try:
        main()
    except SystemExit as exc:
        _stands(exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1)
        raise


def _stands(code: int) -> None:
    """From now on a Ctrl-C ends the process at once with ``code``."""
    _status.append(code)

    def end(signum: int, frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed pipe: nothing more to say
                pass
        os._exit(code)

    signal.signal(signal.SIGINT, end)


def _ignore_interrupts() -> None:
    """The last atexit handler: what follows is the interpreter's teardown, where Python puts
    the default handler back (a Ctrl-C would kill the process): ignore it instead."""
    if _status:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
