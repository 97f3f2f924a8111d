"""Errors a user can fix. The CLI prints them as one line on stderr and exits 2."""

from __future__ import annotations

import difflib
from typing import Iterable


class MemplugError(Exception):
    """Bad input, bad configuration, or a missing install: the user's to fix, no traceback."""


class DataError(MemplugError):
    """A data file that cannot be read, naming the file, the place in it and the problem."""

    def __init__(self, path: object, problem: str, place: str | None = None) -> None:
        self.path, self.problem, self.place = str(path), problem, place
        where = f"{self.path}: {place}" if place else self.path
        super().__init__(f"{where}: {problem}")


class MissingExtra(MemplugError):
    """An agent or dataset needs an optional dependency that is not installed."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' (did you mean "x"?)' for the closest known name, or '' when nothing is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


class OutputError(MemplugError):
    """The run directory cannot be written (a full disk, a read-only folder)."""


class RunStopped(MemplugError):
    """A run that stopped before its end for a reason no later question would escape (a
    bad key, an unknown model, a full disk); the run directory stays resumable."""

    def __init__(self, message: str, run_dir: object) -> None:
        self.run_dir = str(run_dir)
        super().__init__(f"{message}; the run is kept: fix this, then finish it with "
                         f"memplug eval --resume {self.run_dir}")


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run, carrying the run directory that ``--resume`` finishes."""

    def __init__(self, run_dir: object) -> None:
        self.run_dir = str(run_dir)
        super().__init__(self.run_dir)
