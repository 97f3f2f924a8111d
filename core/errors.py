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
