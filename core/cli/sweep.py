"""`memplug sweep`: run a grid of evaluations from a TOML file (see memplug.sweep, docs/scale.md)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import textwrap
import threading
from pathlib import Path
from types import FrameType
from typing import Any, Iterator, Mapping

import click

from memplug.errors import one_line
from memplug.errors import MemplugError


def executor_options(command: Any, sweep: bool = True) -> Any:
    """--executor, --address, --workers, --llm-limit, --llm-tpm, --ray-runtime-env: shared by eval
    and sweep (``sweep=False``: eval's help, where --workers is for Ray only)."""
    workers_help = (
        "Ray: worker actors (default: the cluster's CPUs). Local: cells side by side in processes (default 1)."
        if sweep
        else "Ray: worker actors (default: the cluster's CPUs); refused "
        "locally, where --concurrency sets the samples side by side."
    )
    for option in reversed(
        [
            click.option(
                "--executor",
                type=click.Choice(["local", "ray"]),
                default=None,
                help="Where samples (eval) or cells (sweep) run: local (this process; default) or ray "
                "(pip install 'memplug[ray]'; a local Ray on loopback, or the cluster at --address).",
            ),
            click.option(
                "--address",
                default=None,
                help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray bound to 127.0.0.1).",
            ),
            click.option("--workers", type=click.IntRange(min=1, max=4096), default=None, help=workers_help),
            click.option(
                "--llm-limit",
                default=None,
                metavar="N|MODEL=N,...",
                help="Ray: LLM calls in flight per model across all workers, e.g. 16 or "
                "openai/gpt-4o-mini=8,*=32 (default: only each worker's --concurrency).",
            ),
            click.option(
                "--llm-tpm",
                default=None,
                metavar="N|MODEL=N,...",
                help="Tokens a minute (prompt and completion) per model, e.g. 200000 or "
                "openai/gpt-4o-mini=200000,*=30000: a call waits while the budget is spent; in this "
                "process, or across all Ray workers (default: no limit).",
            ),
            click.option(
                "--ray-runtime-env",
                default=None,
                metavar="JSON",
                help='Ray runtime environment for the workers, as JSON (e.g. \'{"pip": ["my-plugin"]}\'); '
                "MEMPLUG_* and provider key variables are forwarded as env_vars.",
            ),
        ]
    ):
        command = option(command)
    return command


def cell_lines(manifest: Mapping[str, Any], folder: Path, width: int | None = None) -> list[str]:
    """A few lines per cell at the end of a sweep: its axes, its status and its overall
    means, wrapped to ``width`` columns (default: the console's, as the tables are; a
    metric's name and value kept together). Every cell's full tables were printed here
    (419 lines for 18 cells); `memplug report SWEEP_DIR` prints them on request."""
    from memplug.display import console
    from memplug.results import RunDir

    width = width or console().width
    out: list[str] = []
    for cell in manifest["cells"]:
        a = cell["axes"]
        options = " ".join(f"{k}={v}" for k, v in (a.get("options") or {}).items())
        head = (
            f"c{cell['index']:03d} {a['agent']} on {a['dataset']}, seed {a['seed']}"
            f"{', -o ' + options if options else ''}: {cell['status']}"
        )
        try:
            means = RunDir(folder / cell["path"]).summary().metrics.overall
        except (MemplugError, OSError):  # a cell that never ran has no summary
            means = {}
        # a no-break space between a metric and its value: textwrap breaks at ASCII spaces only
        scores = ", ".join(f"{m}\xa0{v:.3f}" for m, v in means.items() if isinstance(v, float))
        text = one_line(f"{head}{'; ' + scores if scores else ''}")
        wrapped = textwrap.wrap(text, width, subsequent_indent=" " * 5, break_long_words=False, break_on_hyphens=False)
        out.extend(line.replace("\xa0", " ") for line in wrapped)
    return out


def _wrapped(text: str, stderr: bool = False) -> str:
    """``text`` wrapped at spaces to the console's width (of stderr: a progress line), the
    lines after the first indented: a run id or a path is never broken, so it can be copied
    whole (one longer than the terminal has a line of its own)."""
    from memplug.display import console

    width = console(stderr=stderr).width
    return "\n".join(textwrap.wrap(text, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False))


@contextlib.contextmanager
def interrupts(sweep_dir: Path) -> Iterator[None]:
    """While the cells run, Ctrl-C raises KeyboardInterrupt once (each cell's run ends as
    interrupted, then the sweep); a second one ends the process at once, with one line that
    names the sweep's resume command. A run's own handler for the second Ctrl-C (see
    memplug.driver) would name its cell's ``eval --resume``, which finishes that cell alone:
    it yields to a handler set here, which marks sweep.json ``interrupted`` as the first
    would have. Not the main thread, or a handler of the caller's own: nothing changes."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    seen: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if not seen:
            seen.append(signum)
            raise KeyboardInterrupt
        from memplug.sweep import Sweep, mark_interrupted

        with contextlib.suppress(Exception):  # the first one's write cut short, or not made yet
            mark_interrupted(Sweep(sweep_dir))
        with contextlib.suppress(Exception):
            sys.stderr.write(
                f"memplug: interrupted again: stopped at once; finish the sweep with: "
                f"memplug sweep --resume {sweep_dir}\n"
            )
            sys.stderr.flush()
        mp_util = sys.modules.get("multiprocessing.util")
        if mp_util is not None:  # the pool's semaphores, else the resource tracker warns of them as leaked
            with contextlib.suppress(Exception):
                mp_util._run_finalizers(0)
        os._exit(130)  # the pool's processes die with this one (memplug.executors)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def build_executor(
    executor: str | None,
    address: str | None,
    workers: int | None,
    llm_limit: Any,
    ray_runtime_env: str | None,
    default: str = "local",
    llm_tpm: Any = None,
) -> Any:
    from memplug.executors import make_executor, parse_llm_limit, parse_llm_tpm

    runtime_env = None
    if ray_runtime_env:
        try:
            runtime_env = json.loads(ray_runtime_env)
        except json.JSONDecodeError as exc:
            raise MemplugError(f"--ray-runtime-env: not JSON ({exc})") from None
        if not isinstance(runtime_env, dict):
            raise MemplugError("--ray-runtime-env: expected a JSON object")
    name = executor or default
    if name == "local" and runtime_env:
        raise MemplugError("--ray-runtime-env is for --executor ray")
    return make_executor(
        name,
        address=address,
        workers=workers,
        llm_limit=parse_llm_limit(llm_limit),
        llm_tpm=parse_llm_tpm(llm_tpm),
        runtime_env=runtime_env,
    )


def sweep_executor(
    settings: Mapping[str, Any],
    path: Path,
    executor: str | None,
    address: str | None,
    workers: int | None,
    llm_limit: str | None,
    ray_runtime_env: str | None,
    llm_tpm: str | None,
) -> Any:
    """The executor of a sweep: the command line's options over the file's (``settings``),
    built but not started (so --dry-run refuses what a run would). The file's Ray settings
    do not apply when --executor local overrides its ``executor = "ray"``; a file that runs
    locally with ``address`` or ``llm_limit`` is refused, as the command line's are."""
    from memplug.executors import parse_llm_limit, parse_llm_tpm

    chosen = executor or settings.get("executor") or "local"
    on_ray = chosen == "ray"
    overridden = settings.get("executor") == "ray" and not on_ray
    if not on_ray and not overridden:
        for key in ("address", "llm_limit"):
            if settings.get(key) is not None:
                raise MemplugError(f"{path}: {key} is for --executor ray (locally, --concurrency bounds the LLM calls)")
    limit = (
        parse_llm_limit(llm_limit)
        if llm_limit is not None
        else parse_llm_limit(settings.get("llm_limit"), f"{path}: llm_limit")
        if on_ray
        else None
    )
    tpm = parse_llm_tpm(llm_tpm) if llm_tpm is not None else parse_llm_tpm(settings.get("llm_tpm"), f"{path}: llm_tpm")
    return build_executor(
        chosen,
        address or (settings.get("address") if on_ray else None),
        workers or settings.get("workers"),
        limit or None,
        ray_runtime_env,
        llm_tpm=tpm or None,
    )


@click.command("sweep")
@click.argument("config", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=Path("sweeps"),
    show_default=True,
    help="Folder that receives the sweep directory.",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path, file_okay=False),
    help="Finish a sweep directory: finished cells are kept, the others run or resume.",
)
@click.option("--dry-run", is_flag=True, help="List the cells and exit.")
@click.option("--quiet", is_flag=True, help="No line per cell and no table.")
@executor_options
@click.pass_context
def sweep_command(
    ctx: click.Context,
    config: Path | None,
    output: Path,
    resume: Path | None,
    dry_run: bool,
    quiet: bool,
    executor: str | None,
    address: str | None,
    workers: int | None,
    llm_limit: str | None,
    ray_runtime_env: str | None,
    llm_tpm: str | None = None,
) -> None:
    """Run a grid of evaluations: one run directory per cell, a manifest, resume.

    The TOML file lists axes under [grid] (agents, datasets, seeds, llms, readers, judges,
    options) and fields every cell shares under [base]; see docs/scale.md. The sweep
    directory holds sweep.json (each cell's spec, run id and status) and runs/; compare
    the cells with `memplug report SWEEP_DIR`. Exit 0 when every cell finished, 1 when
    some did not, 3 when a finished cell scores below its fail_under.

    \b
    Examples:
      memplug sweep sweep.toml
      memplug sweep sweep.toml --executor ray --llm-limit 16
      memplug sweep --resume sweeps/retrievers-20250101-120000-a1b2c3
      memplug report sweeps/retrievers-20250101-120000-a1b2c3
    """
    from memplug import gates
    from memplug.results import RunDir
    from memplug.sweep import Sweep, SweepInterrupted, check_cells, load_config, plan_cells, run_sweep

    if config is None and resume is None:
        raise MemplugError("give a sweep file, or --resume SWEEP_DIR")
    lists_file = dry_run and config is not None  # a dry run of a file lists its cells, --resume aside
    sweep = Sweep(resume) if resume is not None and not lists_file else None
    stored = sweep.read() if sweep is not None else {}
    if sweep is None:
        settings = load_config(config)  # type: ignore[arg-type]
    else:
        if config is not None:  # the file given beside --resume must be the sweep's own
            sweep.check_config(config)
        settings = stored.get("config") or {}
    # what a run would refuse (executor options, the file's limits) is refused here, dry run too
    runner = sweep_executor(
        settings,
        config or resume / "sweep.toml",  # type: ignore[operator]
        executor,
        address,
        workers,
        llm_limit,
        ray_runtime_env,
        llm_tpm,
    )
    if dry_run:
        cells = stored["cells"] if config is None else plan_cells(settings, "DRYRUN")
        if config is not None:  # what `memplug eval` refuses before its first question (run: Sweep.create)
            check_cells(cells)
        for cell in cells:
            a = cell["axes"]
            extras = ", ".join(f"{k} {a[k]}" for k in ("llm", "reader", "judge", "data") if a.get(k))
            options = " ".join(f"{k}={v}" for k, v in a["options"].items())
            click.echo(
                one_line(
                    f"c{cell['index']:03d} {a['agent']} on {a['dataset']}, seed {a['seed']}"
                    f"{', ' + extras if extras else ''}{', -o ' + options if options else ''}"
                )
            )
        click.echo(f"{len(cells)} cell{'' if len(cells) == 1 else 's'}")
        return
    if sweep is None:
        sweep = Sweep.create(config, output, runner.describe())  # type: ignore[arg-type]

    def said(cell: dict[str, Any], done: int, total: int) -> None:
        if quiet:
            return
        error = f": {one_line(cell['error'], 300)}" if cell.get("error") and cell["status"] != "finished" else ""
        click.echo(_wrapped(f"[{done}/{total}] {cell['status']} {cell['run_id']}{error}", stderr=True), err=True)

    with interrupts(sweep.path):
        try:
            runner.__enter__()  # Ray: the session and its workers started
            manifest = run_sweep(sweep, runner, said)
        except KeyboardInterrupt:  # also while Ray starts: the sweep directory exists by now
            runner.close(now=True)  # Ray: its workers killed, the session left to end with the process
            raise SweepInterrupted(sweep.path) from None
        finally:
            runner.close()  # once closed, nothing
    if not quiet:
        for line in cell_lines(manifest, sweep.path):
            click.echo(line)
        click.echo(_wrapped(f"tables, intervals and paired comparisons: memplug report {sweep.path}"))
    click.echo(str(sweep.path))
    unfinished = [c for c in manifest["cells"] if c["status"] != "finished"]
    if unfinished:
        click.echo(
            f"memplug: {len(unfinished)} of {len(manifest['cells'])} cells did not finish; "
            f"finish them with: memplug sweep --resume {sweep.path}",
            err=True,
        )
        ctx.exit(1)
    # each cell's --fail-under, as `memplug eval` checks its run's (a sweep file's fail_under
    # was recorded and never checked: a cell below it left the sweep's exit 0)
    below = [
        (cell, line)
        for cell in manifest["cells"]
        for line in gates.below(
            gates.thresholds(cell["spec"].get("fail_under") or ()), RunDir(sweep.path / cell["path"]).summary()
        )
    ]
    for cell, line in below:
        click.echo(_wrapped(f"memplug: below --fail-under: {line} ({cell['run_id']})", stderr=True), err=True)
    if below:
        ctx.exit(gates.EXIT_BELOW)
