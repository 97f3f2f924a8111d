"""``memplug ...`` in process for tests: exit code, output and the run directory it wrote."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import attrs
from click.testing import CliRunner

from memplug.record import QuestionRecord, RunSummary, Timings


@attrs.frozen
class CliResult:
    """What one command did. ``run_dir`` is the run directory an ``eval`` wrote (None if none)."""

    exit_code: int
    stdout: str
    stderr: str
    run_dir: Path | None = None

    @property
    def summary(self) -> RunSummary:
        """The run's summary.json (an ``eval`` that wrote a run only)."""
        from memplug.results import RunDir

        if self.run_dir is None:
            raise AssertionError(f"the command wrote no run (exit {self.exit_code}): {self.stderr[-500:]}")
        return RunDir(self.run_dir).summary()


@contextmanager
def _cwd(path: Path) -> Iterator[None]:
    # contextlib.chdir is 3.11+; memplug supports 3.10
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _runs(folder: Path) -> set[Path]:
    return {p.parent for p in folder.glob("*/run.json")} if folder.is_dir() else set()


def run_cli(
    args: Sequence[str | os.PathLike[str]], cwd: Path | str | None = None, env: dict[str, str] | None = None
) -> CliResult:
    """Run ``memplug ARGS`` in this process (click's CliRunner) from ``cwd``; a path among
    ARGS is given as its string.

    The run directory is the one that appeared under ``--output`` (default ``runs``)
    during the call. Plugins registered in this process (``memplug.plugins``) are
    the ones the command sees.
    """
    from memplug.cli import cli

    argv = [str(a) for a in args]
    where = Path(cwd) if cwd is not None else Path.cwd()
    output = Path(argv[argv.index("--output") + 1]) if "--output" in argv else Path("runs")
    folder = output if output.is_absolute() else where / output
    before = _runs(folder)
    with _cwd(where):
        result = CliRunner().invoke(cli, argv, env=env, catch_exceptions=False)
    new = sorted(_runs(folder) - before)
    return CliResult(result.exit_code, result.stdout, result.stderr, new[-1] if new else None)


def comparable_records(run_dir: Path) -> list[QuestionRecord]:
    """A run's records without their timings, in (sample, question) order: what two runs of
    one spec must agree on, whatever ran them (in process, a pool, Ray) and in whatever order."""
    from memplug.results import RunDir

    records = [attrs.evolve(r, timings=Timings()) for r in RunDir(run_dir).records()]
    return sorted(records, key=lambda r: r.key)
