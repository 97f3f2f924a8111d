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


def one_line(text: str, limit: int = 600) -> str:
    """An error message as one line of bounded length: line breaks become spaces, other
    control characters are written out (an ESC quoted from a data file is shown as ``\\x1b``,
    never sent to the terminal: :func:`memplug.display.visible`), and the middle of an
    overlong message (a value quoted from a data file) is cut out."""
    from memplug.display import visible  # here: importing rich costs every command's start

    text = visible(" ".join(text.splitlines()))
    if len(text) <= limit:
        return text
    return f"{text[: limit - 200]} [...{len(text) - limit} characters cut...] {text[-200:]}"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' (did you mean "x"?)' for the closest known name, or '' when nothing is close.
    Letter case does not count against a name: "BM25" is close to "bm25" (difflib alone
    finds them too far apart to say)."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f' (did you mean "{by_lower[close[0]]}"?)' if close else ""


class OutputError(MemplugError):
    """The run directory cannot be written (a full disk, a read-only folder)."""


class RunStopped(MemplugError):
    """A run that stopped before its end for a reason no later question would escape (a
    bad key, an unknown model, a full disk); the run directory stays resumable."""

    def __init__(self, message: str, run_dir: object) -> None:
        self.run_dir = str(run_dir)
        super().__init__(
            f"{message}; the run is kept: fix this, then finish it with memplug eval --resume {self.run_dir}"
        )


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run, carrying the run directory that ``--resume`` finishes."""

    def __init__(self, run_dir: object) -> None:
        self.run_dir = str(run_dir)
        super().__init__(self.run_dir)
