"""`memplug sweep`: a grid of runs (agents x datasets x options x seeds x LLMs x readers x
judges) from one TOML file, one run directory per cell, a manifest, resume.

A sweep directory::

    SWEEP_DIR/
      sweep.json        the manifest: the sweep's id, its config, each cell's axes, spec,
                        run id, path and status (rewritten atomically as cells end)
      sweep.toml        the config as given
      runs/<run id>/    one ordinary run directory per cell

Run ids are ``<sweep id>-c<index>-<agent>-<dataset>-s<seed>``: the sweep id is a time stamp
and a random part, so cells of sweeps started in the same second, on any node, never
collide (a plain run's id, a second stamp + agent + dataset, can).

The config (see docs/scale.md)::

    name = "retrievers"            # default: the file's stem
    executor = "local"             # or "ray"; --executor overrides
    workers = 2                    # local: cells side by side (processes); ray: workers
    # llm_limit = 16               # ray only (a local sweep refuses it, as --llm-limit): LLM calls
    #                              # in flight per model, cluster-wide
    llm_tpm = 200000               # tokens a minute per model (local: shared out among the
                                   # processes; ray: cluster-wide)

    [base]                         # every cell: RunSpec fields
    limit = 40
    options = { n = "20" }         # -o pairs of every cell

    [grid]                         # each list an axis; a missing axis is the base's value
    agents = ["bm25", "embedding"]
    datasets = ["memsim"]          # or [{ name = "memdaily", data = "../shared/data/memdaily" }]
    seeds = [0, 1]
    llms = ["openai/gpt-4o-mini"]
    readers = ["llm"]
    judges = ["openai/gpt-4o-mini"]
    options = [{ feedback = "0.5" }, { feedback = "0" }]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

from memplug import gates, preflight, specs
from memplug.errors import MemplugError, RunStopped, one_line
from memplug.files import read_json
from memplug.results import RunDir, safe_name, write_json_atomic

MANIFEST = "sweep.json"
CONFIG_COPY = "sweep.toml"
#: grid axes and the RunSpec field each one sets
AXES = {
    "agents": "agent",
    "datasets": "dataset",
    "seeds": "seed",
    "llms": "llm",
    "readers": "reader",
    "judges": "judge",
    "options": "options",
}
TOP_KEYS = {"name", "executor", "workers", "llm_limit", "llm_tpm", "address", "base", "grid"}
DONE = "finished"


def _toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # tomllib's backport, a dependency on 3.10 (pyproject.toml)
        import tomli as tomllib
    try:
        with Path(path).open("rb") as fh:
            loaded: dict[str, Any] = tomllib.load(fh)
            return loaded
    except FileNotFoundError:
        raise MemplugError(f"{path}: no such sweep file") from None
    except tomllib.TOMLDecodeError as exc:
        raise MemplugError(f"{path}: not valid TOML ({exc})") from None


def load_config(path: Path) -> dict[str, Any]:
    """A sweep file, checked for unknown keys and empty axes."""
    config = _toml(path)
    unknown = set(config) - TOP_KEYS
    if unknown:
        raise MemplugError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}; a sweep file has {', '.join(sorted(TOP_KEYS))}"
        )
    grid = config.get("grid") or {}
    bad = set(grid) - set(AXES)
    if bad:
        raise MemplugError(f"{path}: [grid] has no axis {', '.join(sorted(bad))}; axes: {', '.join(AXES)}")
    for axis, values in grid.items():
        if not isinstance(values, list) or not values:
            raise MemplugError(f"{path}: [grid] {axis} must be a non-empty list")
    from memplug.executors import EXECUTORS, parse_llm_limit, parse_llm_tpm

    if config.get("executor", "local") not in EXECUTORS:
        raise MemplugError(f"{path}: executor: {config['executor']!r} is not one of {', '.join(EXECUTORS)}")
    parse_llm_limit(config.get("llm_limit"), f"{path}: llm_limit")  # checked here, so --dry-run checks them too
    parse_llm_tpm(config.get("llm_tpm"), f"{path}: llm_tpm")
    config.setdefault("name", Path(path).stem)
    return config


def plan_cells(config: Mapping[str, Any], sweep_id: str) -> list[dict[str, Any]]:
    """Every cell of the grid: its axes, its RunSpec fields and its run id, in a fixed order
    (agents vary slowest, option sets fastest)."""
    base = dict(config.get("base") or {})
    base_options = {str(k): str(v) for k, v in (base.pop("options", None) or {}).items()}
    known = specs.field_names()
    unknown = set(base) - known - {"no_cache"}
    if unknown:
        raise MemplugError(f"[base] has unknown field(s) {', '.join(sorted(unknown))}")
    if "no_cache" in base:
        if not isinstance(base["no_cache"], bool):
            raise MemplugError(f"[base] no_cache = {base['no_cache']!r}: expected true or false")
        base["cache"] = not base.pop("no_cache")
    grid = config.get("grid") or {}
    axes = {axis: grid.get(axis) or [None] for axis in AXES}
    if axes["agents"] == [None] and not base.get("agent"):
        raise MemplugError("a sweep needs [grid] agents (or [base] agent)")
    if axes["datasets"] == [None] and not base.get("dataset"):
        raise MemplugError("a sweep needs [grid] datasets (or [base] dataset)")
    cells = []
    for index, combo in enumerate(itertools.product(*axes.values())):
        chosen = dict(zip(AXES, combo))
        fields = {k: v for k, v in base.items() if k not in ("agent_options", "dataset_options")}
        for axis, field in AXES.items():
            value = chosen[axis]
            if value is None or axis in ("datasets", "options"):
                continue
            if axis == "seeds" and (isinstance(value, bool) or not isinstance(value, int)):
                raise MemplugError(f"[grid] seeds: {value!r} is not a whole number")
            fields[field] = value if axis == "seeds" else str(value)
        dataset = chosen["datasets"]
        if isinstance(dataset, Mapping):
            if "name" not in dataset:
                raise MemplugError(f"[grid] datasets: {dict(dataset)} has no name")
            fields["dataset"] = str(dataset["name"])
            if dataset.get("data") is not None:
                fields["data"] = str(dataset["data"])
            extra = {str(k): str(v) for k, v in (dataset.get("options") or {}).items()}
        else:
            if dataset is not None:
                fields["dataset"] = str(dataset)
            extra = {}
        option_set = {str(k): str(v) for k, v in (chosen["options"] or {}).items()}
        raw = {**base_options, **extra, **option_set}
        try:
            fields = specs.spec_fields(fields, raw)
        except MemplugError as exc:  # which cell (and so which agent, dataset and option set) it is
            raise MemplugError(
                f"cell c{index:03d} ({fields['agent']} on {fields['dataset']}, options {raw or 'none'}): {exc}"
            ) from None
        seed = fields.get("seed", 0)
        run_id = _safe(f"{sweep_id}-c{index:03d}-{fields['agent']}-{fields['dataset']}-s{seed}")
        cells.append(
            {
                "index": index,
                "run_id": run_id,
                "path": f"runs/{run_id}",
                "axes": {
                    "agent": fields["agent"],
                    "dataset": fields["dataset"],
                    "data": fields.get("data"),
                    "seed": seed,
                    "llm": fields.get("llm"),
                    "reader": fields.get("reader"),
                    "judge": fields.get("judge"),
                    "options": raw,
                },
                "spec": fields,
                "status": "pending",
                "error": None,
            }
        )
    return cells


#: the bounds the cell check words as the file does ("limit = -3"): --limit's from
#: preflight.LIMITS (check_spec holds it for every path), and eval's --sample-timeout option
#: bound (the Python API allows less: a test times a hung agent out in 0.5 s); the other
#: numbers it leaves to Plan's check_spec ("--concurrency 0")
BOUNDS: Mapping[str, tuple[float, float]] = {"limit": preflight.LIMITS["limit"], "sample_timeout": (1.0, 7 * 86400.0)}


def check_cells(cells: list[dict[str, Any]]) -> None:
    """Every cell's spec checked as `memplug eval` checks its own before the first question,
    so that a bad sweep file is one line (exit 2) before the sweep directory is made, and
    on --dry-run: each field of the type the RunSpec declares (a TOML file, unlike eval's
    options, can give ``limit = "x"``), and a :class:`~memplug.plan.Plan` made with
    ``check=True`` (options resolved, numbers bounded, provider keys, models, judges,
    embedder, the agent's own preflight). A cell that only failed at run time was recorded
    as failed, and ``memplug sweep --resume`` could never finish it. Cells that differ in
    their seed alone are planned once."""
    from memplug.plan import Plan

    planned: set[str] = set()
    for cell in cells:
        a = cell["axes"]
        options = " ".join(f"{k}={v}" for k, v in (a.get("options") or {}).items())
        where = f"cell c{cell['index']:03d} ({a['agent']} on {a['dataset']}, seed {a['seed']!r}{', -o ' + options if options else ''})"
        try:
            spec = specs.build(specs.typed(cell["spec"], BOUNDS, " = "))
            key = json.dumps({**cell["spec"], "seed": None}, sort_keys=True, default=str)
            if key not in planned:
                planned.add(key)
                plan = Plan(spec, check=True)
                # a threshold's metric is known now, its category once the data is read (the run)
                gates.check_names(gates.thresholds(spec.fail_under), [m.name for m in plan.metrics], None)
                plan.close()
        except MemplugError as exc:
            raise MemplugError(f"{where}: {exc}") from None


def _safe(name: str) -> str:
    return safe_name(name, limit=120)


def new_sweep_id(name: str) -> str:
    """``<name>-<stamp>-<6 random hex>``: unique across processes and nodes."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return _safe(f"{name}-{stamp}-{secrets.token_hex(3)}")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Sweep:
    """A sweep directory: its manifest and cells."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.manifest_path = self.path / MANIFEST

    @staticmethod
    def is_sweep(path: Path) -> bool:
        return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()

    @classmethod
    def create(cls, config_path: Path, output: Path, executor: Mapping[str, Any]) -> "Sweep":
        config = load_config(config_path)
        sweep_id = new_sweep_id(str(config["name"]))
        cells = plan_cells(config, sweep_id)  # unknown names and options fail here, before any directory
        check_cells(cells)  # and what `memplug eval` refuses before its first question
        path = Path(output) / sweep_id
        try:
            (path / "runs").mkdir(parents=True)
            (path / CONFIG_COPY).write_bytes(Path(config_path).read_bytes())
        except OSError as exc:
            raise MemplugError(
                f"--output {output}: cannot create the sweep directory ({exc.strerror or exc})"
            ) from None
        sweep = cls(path)
        sweep.write(
            {
                "sweep_id": sweep_id,
                "name": config["name"],
                "created": _now(),
                "status": "running",
                "config": config,
                "executor": dict(executor),
                "cells": cells,
            }
        )
        return sweep

    def read(self) -> dict[str, Any]:
        if not self.manifest_path.is_file():
            raise MemplugError(f"{self.path}: not a memplug sweep (no {MANIFEST})")
        manifest: dict[str, Any] = read_json(self.manifest_path)
        return manifest

    def write(self, manifest: Mapping[str, Any]) -> None:
        write_json_atomic(self.manifest_path, manifest)

    def run_dirs(self) -> list[Path]:
        """The run directories of the cells that finished, in cell order: a partial cell (its
        failed questions left out of its means) or an interrupted one has a summary too, and
        was reported beside the others as if it had finished."""
        return [self.path / c["path"] for c in self.read()["cells"] if c["status"] == DONE]

    def not_finished(self) -> list[str]:
        """One text per cell that did not finish ("c001 failed: <its error>"), in cell order."""
        return [
            f"c{c['index']:03d} {c['status']}{': ' + one_line(c['error'], 200) if c.get('error') else ''}"
            for c in self.read()["cells"]
            if c["status"] != DONE
        ]

    def check_config(self, config_path: Path) -> None:
        """Resuming with a config: it must plan the same cells as the manifest holds."""
        manifest = self.read()
        cells = plan_cells(load_config(config_path), manifest["sweep_id"])
        mine = [(c["run_id"], c["spec"]) for c in cells]
        stored = [(c["run_id"], c["spec"]) for c in manifest["cells"]]
        if mine != stored:
            raise MemplugError(
                f"cannot resume {self.path}: {config_path} plans other cells than its "
                f"{MANIFEST} (start a new sweep, or resume without the file)"
            )


def cell_state(sweep_path: Path, cell: Mapping[str, Any]) -> str:
    """``finished`` (nothing to do), ``resume`` (a run directory to finish) or ``new``."""
    path = sweep_path / cell["path"]
    if not (path / "run.json").is_file():
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()  # a name claimed by a run killed before its run.json landed
        return "new"
    run = RunDir(path)
    if run.summary_json.is_file():
        outcome = run.summary().outcome
        if (outcome is None or outcome.status == DONE) and run.info().status == DONE:
            return DONE
    return "resume"


def run_cell(job: Mapping[str, Any], executor: Any = None) -> dict[str, Any]:
    """Run or resume one cell (in this process or a pool's); its outcome for the manifest.

    ``job``: the cell's ``spec`` fields, the sweep's ``runs`` folder, the ``run_id``, and
    ``resume`` (a path) for a cell started before."""
    from memplug.runner import Evaluation

    status, error = "failed", None
    try:
        evaluation = Evaluation(specs.build(job["spec"], f"cell {job['run_id']}"))
        resume = Path(job["resume"]) if job.get("resume") else None
        path = evaluation.run(
            output=Path(job["runs"]), resume=resume, name=job["run_id"], executor=executor, capture_logs=True
        )
        outcome = RunDir(path).summary().outcome
        status, error = (outcome.status, outcome.first_error) if outcome is not None else (DONE, None)
    except RunStopped as exc:
        status, error = "stopped", str(exc)
    except MemplugError as exc:
        status, error = "failed", str(exc)
    return {"index": job["index"], "status": status, "error": error}


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep. ``finish``: the command that finishes it (a cell's own
    ``eval --resume`` would finish that cell alone)."""

    def __init__(self, sweep_dir: object) -> None:
        self.sweep_dir = str(sweep_dir)
        self.finish = f"finish the sweep with: memplug sweep --resume {self.sweep_dir}"
        super().__init__(self.sweep_dir)


def run_sweep(
    sweep: Sweep, executor: Any, on_cell: Callable[[dict[str, Any], int, int], None] | None = None
) -> dict[str, Any]:
    """Run every unfinished cell of ``sweep`` with ``executor``; the manifest after it. A
    Ctrl-C raises :class:`SweepInterrupted` once the manifest says ``interrupted``."""
    manifest = sweep.read()
    todo = []
    for cell in manifest["cells"]:
        state = cell_state(sweep.path, cell)
        if state == DONE:
            cell["status"], cell["error"] = DONE, None
            continue
        todo.append(
            {
                "index": cell["index"],
                "spec": cell["spec"],
                "runs": str(sweep.path / "runs"),
                "run_id": cell["run_id"],
                "resume": str(sweep.path / cell["path"]) if state == "resume" else None,
            }
        )
    manifest["status"] = "running"
    manifest["executor"] = executor.describe()
    sweep.write(manifest)
    cells = manifest["cells"]
    done = [len(cells) - len(todo)]

    ended: set[int] = set()

    def on_done(job: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        ended.add(job["index"])
        cell = cells[job["index"]]
        cell["status"], cell["error"] = result["status"], result["error"]
        done[0] += 1
        sweep.write(manifest)
        if on_cell is not None:
            on_cell(cell, done[0], len(cells))

    try:
        executor.map_cells(todo, run_cell, on_done)
    except KeyboardInterrupt:
        mark_interrupted(sweep, manifest, [job["index"] for job in todo if job["index"] not in ended])
        raise SweepInterrupted(sweep.path) from None
    manifest["status"] = DONE if all(c["status"] == DONE for c in cells) else "partial"
    manifest["ended"] = _now()
    sweep.write(manifest)
    return manifest


def mark_interrupted(sweep: Sweep, manifest: dict[str, Any] | None = None, stopped: list[int] | None = None) -> None:
    """sweep.json after a Ctrl-C: ``interrupted``, and so is each cell of ``stopped`` (the
    indexes of those that were to run and did not end; None: every unfinished one) that
    has a run directory for `--resume` to finish. ``manifest``: the one in memory (None:
    the one on file, as a second Ctrl-C finds it, which left it saying ``running``)."""
    manifest = sweep.read() if manifest is None else manifest
    for cell in manifest["cells"]:
        to_run = cell["status"] != DONE if stopped is None else cell["index"] in stopped
        if to_run and (sweep.path / cell["path"] / "run.json").is_file():
            cell["status"], cell["error"] = "interrupted", None
    manifest["status"] = "interrupted"
    sweep.write(manifest)


def sweep_comparisons(paths: list[Path]) -> list[dict[str, Any]]:
    """Paired comparisons within the cells that asked the same questions: same dataset, data,
    dataset options, seed and limit; the first cell of each such group against the others."""
    from memplug import compare

    groups: dict[str, list[Path]] = {}
    for path in paths:
        spec = RunDir(path).info().spec
        key = repr([spec.get(k) for k in ("dataset", "data", "dataset_options", "seed", "limit")])
        groups.setdefault(hashlib.sha1(key.encode()).hexdigest(), []).append(path)
    out: list[dict[str, Any]] = []
    for group in groups.values():
        out.extend(compare.comparisons(group))
    return out


def expand(path: Path) -> list[Path]:
    """A sweep directory's finished cells (for `memplug report SWEEP_DIR`)."""
    runs = Sweep(path).run_dirs()
    if not runs:
        raise MemplugError(f"{path}: no cell of this sweep has finished yet (memplug sweep --resume {path})")
    return runs
