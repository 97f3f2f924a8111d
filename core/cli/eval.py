"""`memplug eval`: run one agent on one dataset and write a run directory."""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import Any, Callable

import click

import attrs

from memplug import stats
from memplug.cli import one_line
from memplug.errors import MemplugError
from memplug.secrets import is_redacted
from memplug.options import parse_pairs, split_for
from memplug.preflight import declared_options
from memplug.files import read_json
from memplug.cli.sweep import build_executor, executor_options
from memplug.record import Outcome
from memplug.results import RunDir, write_json_atomic


def _progress_factory() -> tuple[Any, Callable[[int, int], Callable[[], None]]]:
    """A rich progress bar on stderr (stdout stays clean) and the runner's callback.

    While the LLM layer backs off (a 429, a 5xx, a timeout) the bar says what it waits
    for, so that a run held up by a rate limit does not look stuck.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from memplug.llm import on_wait

    bar = Progress(TextColumn("questions"), BarColumn(bar_width=20), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[waiting]}", style="yellow"),
                   console=Console(stderr=True), transient=False)

    def start(total: int, finished: int) -> Callable[[], None]:
        task = bar.add_task("eval", total=total, completed=finished, waiting="")

        def waiting(reason: str | None) -> None:
            bar.update(task, waiting=f"waiting: {reason[:60]}" if reason else "")

        on_wait(waiting)
        return lambda: bar.advance(task)

    return bar, start


@click.command("eval")
@click.option("--agent", help="Memory agent name (see `memplug list --kind agents`).")
@click.option("--dataset", help="Dataset name (see `memplug list --kind datasets`).")
@click.option("--data", type=click.Path(path_type=Path), help="Release file or folder for a loader, "
              "or a samples .jsonl written by `memplug generate`.")
@click.option("--limit", type=click.IntRange(min=1), help="Keep the first N questions in dataset order.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for generators and agents.")
@click.option("--llm", default=lambda: os.environ.get("MEMPLUG_LLM"), help="litellm model string, "
              "e.g. openai/gpt-4o-mini (default: $MEMPLUG_LLM).")
@click.option("--api-base", help="Base URL of an OpenAI-compatible endpoint for --llm/--judge.")
@click.option("--reader", help="How answers are written from recalled items: extractive (offline, "
              "default without --llm) or llm (default with --llm).")
@click.option("--judge", help="litellm model for LLM-as-judge scoring (adds the judge metric).")
@click.option("--judge-prompt", default=lambda: os.environ.get("MEMPLUG_JUDGE_PROMPT") or None,
              help="Judge (prompts) that scores every question with --judge, e.g. longmemeval, locomo-j, "
              "memplug (see `memplug list --kind judges`; default: $MEMPLUG_JUDGE_PROMPT, else the dataset's "
              "official judge: longmemeval's for longmemeval, locomo-j for locomo, else memplug).")
@click.option("--embedder", default="wordllama", show_default=True,
              help="Embedder for agents that embed: wordllama (offline), litellm:<model>, st:<model>.")
@click.option("--chunk-size", type=click.IntRange(min=1, max=1_000_000), help="Tokens per ingestion chunk "
              "(default: the agent's, else the dataset's).")
@click.option("--top-k", type=click.IntRange(min=1, max=10_000),
              help="Items an agent recalls per question; K of recall@K (default: the dataset protocol's "
              "official depth, else 5).")
@click.option("--concurrency", type=click.IntRange(min=1, max=512), default=4, show_default=True,
              help="Samples evaluated side by side (and concurrent LLM calls).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the on-disk caches (LLM responses, token counts).")
@click.option("--llm-timeout", type=click.FloatRange(min=0.1, max=3600), default=60.0, show_default=True,
              help="Seconds to wait for one LLM answer before retrying.")
@click.option("--llm-retries", type=click.IntRange(min=0, max=20), default=6, show_default=True,
              help="Retries of a failed LLM call (429 honours Retry-After; 5xx, timeouts, bad bodies). "
              "401/403/404/400 are never retried: they stop the run.")
@click.option("--llm-deadline", type=click.FloatRange(min=1, max=86400), default=600.0, show_default=True,
              help="Seconds one LLM call may take in all, retries and waits included.")
@click.option("--verbose", is_flag=True, help="Show the log (memplug's and the agent's libraries') on "
              "stderr too; it is always in memplug.log in the run directory.")
@click.option("--output", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
              help="Folder that receives the run directory.")
@click.option("--resume", type=click.Path(path_type=Path, file_okay=False),
              help="Finish an interrupted run directory (finished samples are kept).")
@click.option("--from", "from_run", type=click.Path(path_type=Path, file_okay=False),
              help="Answer and score again the recalled items a finished run stored, with another "
              "--reader/--llm/--judge or protocol option: no agent is built, nothing is re-ingested.")
@click.option("-o", "pairs", multiple=True, metavar="KEY=VALUE",
              help="Agent or dataset option (repeatable); prefix with agent. or dataset. if both accept it.")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run N times with seeds S, S+1, ... and report mean, spread and each repeat.")
@click.option("--quiet", is_flag=True, help="No progress bar and no table.")
@functools.partial(executor_options, sweep=False)
@click.pass_context
def eval_command(ctx: click.Context, pairs: tuple[str, ...], quiet: bool, resume: Path | None,
                 from_run: Path | None, output: Path, repeats: int, verbose: bool, executor: str | None,
                 address: str | None, workers: int | None, llm_limit: str | None, ray_runtime_env: str | None,
                 llm_tpm: str | None,
                 **given: Any) -> None:
    """Evaluate a memory agent on a dataset.

    Bad configuration (an unknown name, a missing key, a server that does not answer)
    fails before the first question: one line, exit 2. The exit code is 0 only when
    every question was answered and scored; a run with failed questions exits 1 and
    its last line says how many, the first error and the --resume command, which
    retries them. The log of the agent's libraries goes to memplug.log in the run
    directory (--verbose: also to stderr).

    \b
    Examples:
      memplug eval --agent bm25 --dataset memsim -o n=20
      memplug eval --agent bm25 --dataset memdaily --data ../shared/data/memdaily
      memplug eval --agent mem0 --dataset factcon --llm openai/gpt-4o-mini
      memplug eval --agent hybrid --dataset locomo --data locomo10.json \\
        --llm openai/gpt-4o-mini --judge openai/gpt-4o --judge-prompt memplug
      memplug eval --agent bm25 --dataset memsim -o n=50 --repeats 5
      memplug eval --resume runs/20250101-120000-bm25-memsim
      memplug eval --from runs/20250101-120000-mem0-locomo --llm openai/gpt-4o
      memplug eval --agent bm25 --dataset memsim -o n=200 --executor ray
    """
    from memplug.runner import RunSpec

    raw = parse_pairs(pairs)
    fields: dict[str, Any] = {}
    if resume is not None and from_run is not None:
        raise MemplugError("--resume finishes a run, --from starts one from another: give one of them")
    source = resume or from_run
    if source is not None:  # start from the stored spec; options given now override it
        fields.update(RunDir(source).check().spec().get("spec", {}))
    if from_run is not None:
        fields["from_run"] = str(from_run)
    defaults = (click.core.ParameterSource.DEFAULT, click.core.ParameterSource.DEFAULT_MAP)
    for key, value in given.items():
        if source is not None and ctx.get_parameter_source(key) in defaults:
            continue
        if key == "no_cache":
            fields["cache"] = not value
        else:
            fields[key] = str(value) if key == "data" and value is not None else value
    if not fields.get("agent") or not fields.get("dataset"):
        raise MemplugError("--agent and --dataset are required (or --resume RUN_DIR)")
    if resume is None or raw:
        from memplug.plugins import get_plugins

        reg = get_plugins().registry
        # --from replays the stored recalls: no agent is built, and its options are the stored run's
        agent_opts = () if fields.get("from_run") else declared_options(reg("agents").get(fields["agent"]).load(),
                                                                         f"agent {fields['agent']!r}")
        dataset_opts = declared_options(reg("datasets").get(fields["dataset"]).load(), f"dataset {fields['dataset']!r}")
        given_agent, given_dataset = split_for(raw, agent_opts, dataset_opts)
        if fields.get("from_run"):  # the same data as the stored run, with the protocol options given now
            fields["dataset_options"] = {**(fields.get("dataset_options") or {}), **given_dataset}
        else:
            fields["agent_options"], fields["dataset_options"] = given_agent, given_dataset
    if resume is not None and repeats > 1:
        raise MemplugError("--resume finishes one run; resume each repeat's run directory on its own")
    if resume is not None and is_redacted(fields.get("api_base")) and ctx.get_parameter_source("api_base") in defaults:
        raise MemplugError(f"{resume}: run.json keeps --api-base without its password "
                           f"({fields['api_base']}): pass --api-base again to resume")
    known = {a.name for a in RunSpec.__attrs_attrs__}
    spec = RunSpec(**{k: v for k, v in fields.items() if k in known})
    # --executor ray: the samples spread over Ray workers, the records written here (memplug.executors)
    if workers is not None and (executor or "local") != "ray":
        raise MemplugError("--workers is for --executor ray (locally, --concurrency sets the samples side by side)")
    runner = (build_executor(executor, address, workers, llm_limit, ray_runtime_env, llm_tpm=llm_tpm)
              if executor or workers or any(v is not None for v in (address, llm_limit, llm_tpm, ray_runtime_env))
              else None)
    with runner or contextlib.nullcontext():
        paths = _run_repeats(spec, repeats, output, resume, quiet, verbose, runner)
    if not quiet:
        from memplug.cli.report import print_tables

        # repeats differ only in their seed: the repeats table below sums them up, not pairs
        print_tables(paths, pairs=[] if repeats > 1 else None)
    if repeats > 1:
        summary_path = write_repeats(paths, output)
        if not quiet:
            print_repeats(read_json(summary_path))
        click.echo(str(summary_path))
    else:
        click.echo(str(paths[0]))
    outcomes = [(p, RunDir(p).summary().outcome) for p in paths]
    failed = [(p, o) for p, o in outcomes if o is not None and o.status != "finished"]
    for path, outcome in failed:
        click.echo(outcome_line(path, outcome), err=True)
    if failed:
        ctx.exit(1)


def _run_repeats(spec: Any, repeats: int, output: Path, resume: Path | None, quiet: bool, verbose: bool,
                 runner: Any) -> list[Path]:
    """Run (or resume) the spec, ``repeats`` times with seeds S, S+1, ...; the run directories."""
    from memplug.runner import Evaluation

    paths = []
    for i in range(repeats):
        evaluation = Evaluation(attrs.evolve(spec, seed=spec.seed + i))
        if evaluation.agent_note and i == 0:
            click.echo(f"memplug: {evaluation.agent_note}", err=True)
        if i == 0:
            _say_data_warnings(evaluation)
        if quiet:
            paths.append(evaluation.run(output=output, resume=resume, capture_logs=True, verbose=verbose,
                                        executor=runner))
        else:
            bar, start = _progress_factory()
            with bar:
                paths.append(evaluation.run(output=output, resume=resume, progress=start, capture_logs=True,
                                            verbose=verbose, executor=runner))
    return paths


def _say_data_warnings(evaluation: Any) -> None:
    """Load the data now, so that what the loader skipped is one line before the run, not many."""
    evaluation.samples()  # loaded once: the run uses these
    found = evaluation.data_warnings
    if found:
        more = f" (and {len(found) - 1} more, listed in run.json)" if len(found) > 1 else ""
        click.echo(f"memplug: warning: {one_line(found[0], 300)}{more}", err=True)


def outcome_line(path: Path, outcome: Outcome) -> str:
    """The last line of a run that did not answer every question: how many failed, the
    first error and the command that retries them."""
    first = one_line(str(outcome.first_error or "unknown"), 300)
    return (f"memplug: {outcome.status}: {outcome.n_failed} of {outcome.n_expected} questions failed; "
            f"first error: {first}; retry them with: memplug eval --resume {path}")


def write_repeats(paths: list[Path], output: Path) -> Path:
    """repeats-<first run id>.json beside the runs: per metric mean, spread and each repeat."""
    summaries = [RunDir(p).summary() for p in paths]
    metrics = sorted({m for s in summaries for m in s.metrics.overall})
    out = {
        "runs": [s.run_id for s in summaries],
        "seeds": [RunDir(p).spec()["spec"]["seed"] for p in paths],
        "overall": {m: stats.repeat_summary([s.metrics.overall[m] for s in summaries
                                             if m in s.metrics.overall]) for m in metrics},
    }
    path = Path(output) / f"repeats-{summaries[0].run_id}.json"
    write_json_atomic(path, out)
    return path


def print_repeats(result: dict[str, Any]) -> None:
    """The mean, spread and each value of a repeats-*.json, per metric: a table whose cells wrap
    (at 80 columns, many repeats take more lines, never a cut number); its title names the
    first run whole."""
    from rich.console import Console

    from memplug.cli.tables import table as make_table

    table = make_table(f"{len(result['runs'])} repeats of {result['runs'][0]} "
                       f"(seeds {', '.join(map(str, result['seeds']))})",
                       "metric", "mean", "std", "min", "max", "each repeat")
    for metric, r in result["overall"].items():
        table.add_row(metric, f"{r['mean']:.3f}", f"{r['std']:.3f}", f"{r['min']:.3f}", f"{r['max']:.3f}",
                      " ".join(f"{v:.3f}" for v in r["values"]))
    Console().print(table)
