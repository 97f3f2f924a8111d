"""Re-running a finished run from its run.json, and whether its numbers come out the same.

A published table is only worth something if a reader can check a row of it. run.json
holds everything that defines a run (the spec, the plugin and dataset versions, and the
sha256 of every file read from ``--data``), so a reproduction needs the same inputs and
nothing else: the data is checked against the stored hashes before anything runs, the
evaluation is run again as a new run, and every metric mean (overall and per category)
is compared with the original.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import attrs

from memplug import specs
from memplug.errors import MemplugError
from memplug.record import RunSummary
from memplug.results import RunDir
from memplug.plan import Plan
from memplug.runner import Evaluation
from memplug.specs import RunSpec
from memplug.secrets import is_redacted


@attrs.frozen
class Compared:
    """One metric mean of the original run beside the reproduction's."""

    metric: str
    category: str  # "overall" or a category name
    original: float | None
    reproduced: float | None
    tolerance: float = 0.0

    @property
    def same(self) -> bool:
        if self.original is None or self.reproduced is None:
            return self.original is self.reproduced
        return abs(self.original - self.reproduced) <= self.tolerance


@attrs.frozen
class Reproduction:
    original: Path
    reproduced: Path
    rows: tuple[Compared, ...]
    #: what differs between the two runs' set-ups without being an error (versions)
    notes: tuple[str, ...] = ()

    @property
    def matches(self) -> bool:
        return all(row.same for row in self.rows)

    def as_dict(self) -> dict[str, Any]:
        return {
            "original": str(self.original),
            "reproduced": str(self.reproduced),
            "matches": self.matches,
            "notes": list(self.notes),
            "metrics": [{**attrs.asdict(r), "same": r.same} for r in self.rows],
        }


def stored_spec(
    run: RunDir, api_base: str | None = None, data: Path | None = None, cache: bool | None = None
) -> RunSpec:
    """The run's spec from run.json, with the inputs a reproducer may point elsewhere."""
    fields: dict[str, Any] = {}  # the inputs a reproducer may point elsewhere
    if data is not None:
        fields["data"] = data
    if api_base is not None:
        fields["api_base"] = api_base
    if cache is not None:
        fields["cache"] = cache
    spec = specs.spec_fields(fields, stored=specs.stored_fields(run))
    if api_base is None and is_redacted(spec.get("api_base")):
        raise MemplugError(
            f"{run.path}: run.json keeps --api-base without its password ({spec['api_base']}): pass --api-base"
        )
    return specs.build(spec, run.run_json)


def check_data(run: RunDir, evaluation: Plan) -> None:
    """The files at --data have the sha256 the original run recorded (MemplugError if not,
    naming the files that differ, those not found and those the original did not read)."""
    stored = run.info().data_sha256
    if stored is None:
        return
    if evaluation.data is not None and not evaluation.data.exists():
        raise MemplugError(
            f"--data {evaluation.data}: not found (the data of {run.path}; pass --data with the same release)"
        )
    now = evaluation.data_sha256() or {}
    differ = sorted(name for name in stored.keys() & now.keys() if stored[name] != now[name])
    missing, extra = sorted(stored.keys() - now.keys()), sorted(now.keys() - stored.keys())
    problems = []
    if differ:
        verb = "differs" if len(differ) == 1 else "differ"
        problems.append(f"{_names(differ)} {verb} from the sha256 in its run.json")
    if missing:
        problems.append(f"{_names(missing)} not found")
    if extra:
        problems.append(f"{_names(extra)} not in its run.json")
    if problems:
        raise MemplugError(
            f"--data {evaluation.data} is not the data of {run.path}: "
            f"{'; '.join(problems)} (pass --data with the same release)"
        )


def _names(names: list[str]) -> str:
    """Up to five file names, and how many more."""
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _version_notes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    notes = []
    for key in ("memplug", "python"):
        if before.get(key) != after.get(key):
            notes.append(f"{key} {before.get(key)} -> {after.get(key)}")
    old_plugins, new_plugins = before.get("plugins") or {}, after.get("plugins") or {}
    for name in sorted(old_plugins.keys() | new_plugins.keys()):
        if old_plugins.get(name) != new_plugins.get(name):
            notes.append(f"plugin {name} {old_plugins.get(name)} -> {new_plugins.get(name)}")
    old_reader, new_reader = before.get("reader") or {}, after.get("reader") or {}
    if old_reader.get("version") != new_reader.get("version"):  # a run from before: no version
        notes.append(
            f"reader {new_reader.get('name')} version {old_reader.get('version')} -> {new_reader.get('version')}"
        )
    return notes


def compare_summaries(before: RunSummary, after: RunSummary, tolerance: float = 0.0) -> list[Compared]:
    """Every metric mean of either summary, overall then per category."""
    rows = []
    blocks = [("overall", before.metrics.overall, after.metrics.overall)]
    cats_a, cats_b = before.metrics.by_category, after.metrics.by_category
    blocks += [(c, cats_a.get(c, {}), cats_b.get(c, {})) for c in sorted(cats_a.keys() | cats_b.keys())]
    for category, a, b in blocks:
        for metric in sorted(a.keys() | b.keys()):
            rows.append(Compared(metric, category, a.get(metric), b.get(metric), tolerance))
    return rows


def reproduce(
    path: Path,
    output: Path,
    api_base: str | None = None,
    data: Path | None = None,
    cache: bool | None = None,
    tolerance: float = 0.0,
    progress: Callable[..., Any] | None = None,
) -> Reproduction:
    """Run ``path`` again from its run.json into ``output`` and compare the numbers."""
    run = RunDir(path).check()
    stored = run.info()
    if stored.status != "finished":
        raise MemplugError(
            f"{path}: only a finished run can be reproduced (its status is "
            f"{stored.status!r}; finish it with memplug eval --resume {path})"
        )
    evaluation = Evaluation(stored_spec(run, api_base, data, cache))
    check_data(run, evaluation)
    new_path = evaluation.run(output=output, progress=progress, capture_logs=True)
    new = RunDir(new_path)
    rows = compare_summaries(run.summary(), new.summary(), tolerance)
    notes = _version_notes(stored.versions, new.info().versions)
    return Reproduction(run.path, new_path, tuple(rows), tuple(notes))
