"""A run's answers in the file its benchmark's own scripts read, so anyone can regrade them.

``memplug report RUNS --export DIR`` writes, for each run, ``DIR/<run id><suffix>``: the
file of the export registered under the run's dataset name (``register_exports``,
docs/hooks.md). memplug's datasets register LongMemEval's ``hypotheses.jsonl`` and
LoCoMo's prediction file (``memplug.datasets.plugin``; the formats, with their upstream
sources, are documented where they live and in docs/fairness.md).

An export is a hook, not an optional method of the dataset builder, because it reads a
finished run, never the data: ``report`` then imports one small function, not a builder
and the libraries it loads, and an author may add the official file of a dataset that is
not theirs, as they may add its metric or judge. Its absence is a name missing from the
registry, said in one line, not an attribute probed for.

This module keeps what every export shares: reading the runs, choosing each one's
exporter, the questions it is given, and the files' atomic writes with their errors.
An exporter gets only the questions memplug scored (no error, a prediction: those that
failed or that the reader could not answer are left out of memplug's means), so the
official scripts average over the same questions as memplug did.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from memplug.errors import MemplugError, OutputError
from memplug.plugins import Plugins, get_plugins
from memplug.record import QuestionRecord
from memplug.results import RunDir, write_lines_atomic

#: what a suffix may hold: it ends a file name in the export folder
_SUFFIX = re.compile(r"\.[A-Za-z0-9][A-Za-z0-9_.-]*")


class Exporter(Protocol):
    """The target of an export: the scored questions of one run, in the run's order, to
    the file's lines (without their newline; memplug ends each with one). A one-document
    JSON file is ``json.dumps(doc, indent=2).split("\\n")``."""

    def __call__(self, records: Sequence[QuestionRecord]) -> Iterable[str]: ...


def scored(records: Iterable[QuestionRecord]) -> list[QuestionRecord]:
    """The questions memplug averaged over: no error, and a prediction."""
    return [r for r in records if r.error is None and r.prediction is not None]


def _exporter(dataset: str, plugins: Plugins) -> tuple[Exporter, str]:
    """The registered exporter of ``dataset`` and the suffix of its file."""
    entry = plugins.registry("exports").get(dataset)
    suffix = entry.info.get("suffix")
    if not isinstance(suffix, str) or not _SUFFIX.fullmatch(suffix):
        raise MemplugError(
            f"export {dataset!r} from plugin {entry.plugin!r}: suffix={suffix!r} is not a "
            "file name's ending such as '.hypotheses.jsonl'"
        )
    function = entry.load()
    if not callable(function):
        raise MemplugError(
            f"export {dataset!r} from plugin {entry.plugin!r}: {entry.target} is a "
            f"{type(function).__name__}, not a function of the run's records"
        )
    return function, suffix


def export(paths: Iterable[Path], folder: Path, plugins: Plugins | None = None) -> list[Path]:
    """Write each run's official file into ``folder`` (created); the files written. A run
    on a dataset without an export is refused (MemplugError) before anything is written,
    naming the datasets that have one."""
    plugins = plugins or get_plugins()
    registry = plugins.registry("exports")
    runs = [RunDir(p) for p in paths]
    datasets = [str(run.info().dataset) for run in runs]
    for run, dataset in zip(runs, datasets):
        if dataset not in registry:
            # short, to fit 80 columns: the dataset's name tells which run it is
            have = f"{', '.join(registry.names())} do" if registry.names() else "no dataset has one"
            raise MemplugError(f"--export: {dataset} has no official export; {have}")
    exporters = {dataset: _exporter(dataset, plugins) for dataset in dict.fromkeys(datasets)}
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"--export {folder}: cannot create ({exc.strerror or exc})") from None
    written = []
    for run, dataset in zip(runs, datasets):
        function, suffix = exporters[dataset]
        target = folder / f"{run.info().run_id or run.path.name}{suffix}"
        lines = list(function(scored(run.records())))  # its errors are not the folder's
        try:
            write_lines_atomic(target, lines)
        except OSError as exc:
            raise OutputError(f"--export {folder}: cannot write {target.name} ({exc.strerror or exc})") from None
        written.append(target)
    return written
