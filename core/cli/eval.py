"""`memplug eval`: run one agent on one dataset and write a run directory."""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import attrs

from memplug import gates, stats
from memplug.errors import one_line
from memplug.errors import MemplugError
from memplug.options import parse_pairs
from memplug.files import read_json
from memplug.cli.sweep import build_executor, executor_options
from memplug.cli.tables import print_repeats
from memplug.record import Outcome
from memplug.results import RunDir, write_json_atomic


#: samples side by side under ``--concurrency auto`` (the most calls the LLM may have in flight)
AUTO_CEILING = 64


if TYPE_CHECKING:  # ParamType is generic in click's newer releases only (a runtime subscript fails on 8.1)
    _ParamType = click.ParamType[tuple[int, bool]]
else:
    _ParamType = click.ParamType


class _Concurrency(_ParamType):
    """``N`` (1-512), ``auto`` or ``auto:N``, as (samples side by side, adaptive or not)."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, bool]:
        if isinstance(value, tuple):
            return value
        text = str(value).strip().lower()
        auto = text == "auto" or text.startswith("auto:")
        number = text.removeprefix("auto").removeprefix(":") if auto else text
        try:
            count = int(number) if number or not auto else AUTO_CEILING
        except ValueError:
            self.fail(f"{value!r}: give a number, auto or auto:N", param, ctx)
        if not 1 <= count <= 512:
            self.fail(f"{value!r}: the number must be from 1 to 512", param, ctx)
        return count, auto


@click.command("eval")
@click.option("--agent", help="Memory agent name (see `memplug list --kind agents`).")
@click.option("--dataset", help="Dataset name (see `memplug list --kind datasets`).")
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    help="Release file or folder for a loader, or a samples .jsonl written by `memplug generate`.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    help="Ask N questions, drawn as --limit-by says; samples left without a question are not ingested.",
)
@click.option(
    "--limit-by",
    type=click.Choice(["stratified", "first"]),
    default="stratified",
    show_default=True,
    help="stratified: by category and abstention, in proportion, drawn with --seed; first: the "
    "first N in dataset order (fewest samples to ingest).",
)
@click.option(
    "--context-tokens",
    type=click.IntRange(min=1, max=10_000_000),
    help="Hand the reader at most N "
    "tokens of recalled items (cl100k_base for every system; items whole, in rank order).",
)
@click.option(
    "--settle-timeout",
    type=click.FloatRange(min=1, max=7 * 86400),
    default=600.0,
    show_default=True,
    help="Seconds an agent's settle() (ingestion finished in the background) may take.",
)
@click.option(
    "--max-errors",
    metavar="N|P%",
    help="Stop the run once N questions (or P% of them) have failed: status failed, exit 1.",
)
@click.option(
    "--fail-under",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit 3 when the overall mean of METRIC (METRIC[CATEGORY]=VALUE: a category's) is below VALUE (repeatable).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for generators and agents.")
@click.option(
    "--llm",
    default=lambda: os.environ.get("MEMPLUG_LLM"),
    help="litellm model string, "
    "e.g. openai/gpt-4o-mini, or local (a tiny model served by llama.cpp here, no key: "
    "memplug[local]) or local:PATH.gguf (default: $MEMPLUG_LLM).",
)
@click.option("--api-base", help="Base URL of an OpenAI-compatible endpoint for --llm/--judge.")
@click.option(
    "--reader",
    help="How answers are written from recalled items: extractive (offline, "
    "default without --llm) or llm (default with --llm).",
)
@click.option(
    "--judge", help="litellm model (or local, local:PATH.gguf) for LLM-as-judge scoring (adds the judge metric)."
)
@click.option(
    "--judge-prompt",
    default=lambda: os.environ.get("MEMPLUG_JUDGE_PROMPT") or None,
    help="Judge (prompts) that scores every question with --judge, e.g. longmemeval, locomo-j, "
    "memplug (see `memplug list --kind judges`; default: $MEMPLUG_JUDGE_PROMPT, else the dataset's "
    "official judge: longmemeval's for longmemeval, locomo-j for locomo, else memplug).",
)
@click.option(
    "--embedder",
    default="wordllama",
    show_default=True,
    help="Embedder for agents that embed: wordllama (offline), litellm:<model>, st:<model>.",
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=1, max=1_000_000),
    help="Tokens per ingestion chunk (default: the agent's, else the dataset's).",
)
@click.option(
    "--top-k",
    type=click.IntRange(min=1, max=10_000),
    help="Items an agent recalls per question; K of recall@K (default: the dataset protocol's official depth, else 5).",
)
@click.option(
    "--concurrency",
    type=_Concurrency(),
    default="4",
    show_default=True,
    help="Samples evaluated side by side (and concurrent LLM calls). `auto`: up to "
    f"{AUTO_CEILING} side by side (`auto:N`: N), the LLM calls in flight finding each model's level "
    "(raised while throughput rises, lowered on 429s and on latency that grows without it; in run.json).",
)
@click.option("--no-cache", is_flag=True, help="Do not read or write the on-disk caches (LLM responses, token counts).")
@click.option(
    "--llm-timeout",
    type=click.FloatRange(min=0.1, max=3600),
    default=60.0,
    show_default=True,
    help="Seconds to wait for one LLM answer before retrying.",
)
@click.option(
    "--llm-retries",
    type=click.IntRange(min=0, max=20),
    default=6,
    show_default=True,
    help="Retries of a failed LLM call (429 honours Retry-After; 5xx, timeouts, bad bodies). "
    "401/403/404/400 are never retried: they stop the run.",
)
@click.option(
    "--llm-deadline",
    type=click.FloatRange(min=1, max=86400),
    default=600.0,
    show_default=True,
    help="Seconds one LLM call may take in all, retries and waits included.",
)
@click.option(
    "--sample-timeout",
    type=click.FloatRange(min=1, max=7 * 86400),
    default=1800.0,
    show_default=True,
    help="Seconds one agent call (set-up, the ingestion of a chunk, a recall) may take: a call "
    "that hangs longer fails its sample (an error on its questions, retried by --resume) and "
    "the run goes on.",
)
@click.option(
    "--verbose",
    is_flag=True,
    help="Show the log (memplug's and the agent's libraries') on "
    "stderr too; it is always in memplug.log in the run directory.",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Folder that receives the run directory.",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path, file_okay=False),
    help="Finish an interrupted run directory (finished samples are kept).",
)
@click.option(
    "--from",
    "from_run",
    type=click.Path(path_type=Path, file_okay=False),
    help="Answer and score again the recalled items a finished run stored, with another "
    "--reader/--llm/--judge or protocol option: no agent is built, nothing is re-ingested.",
)
@click.option(
    "-o",
    "pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Agent or dataset option (repeatable); prefix with agent. or dataset. if both accept it.",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run N times with seeds S, S+1, ... and report mean, spread and each repeat.",
)
@click.option("--quiet", is_flag=True, help="No progress bar and no table.")
@functools.partial(executor_options, sweep=False)
@click.pass_context
def eval_command(
    ctx: click.Context,
    pairs: tuple[str, ...],
    quiet: bool,
    resume: Path | None,
    from_run: Path | None,
    output: Path,
    repeats: int,
    verbose: bool,
    executor: str | None,
    address: str | None,
    workers: int | None,
    llm_limit: str | None,
    ray_runtime_env: str | None,
    llm_tpm: str | None,
    **given: Any,
) -> None:
    """Evaluate a memory agent on a dataset.

    Bad configuration (an unknown name, a missing key, a server that does not answer)
    fails before the first question: one line, exit 2. The exit code is 0 only when
    every question was answered and scored; a run with failed questions exits 1 and
    its last line says how many, the first error and the --resume command, which
    retries them (--max-errors stops it early). A finished run below a --fail-under
    threshold exits 3. The log of the agent's libraries goes to memplug.log in the run
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
      memplug eval --agent hybrid --dataset locomo --data locomo10.json \\
        --limit 200 --context-tokens 2000 --max-errors 5% \\
        --fail-under locomo_f1=0.3
    """
    from memplug.api import resolve_spec

    if resume is not None and repeats > 1:
        raise MemplugError("--resume finishes one run; resume each repeat's run directory on its own")
    defaults = (click.core.ParameterSource.DEFAULT, click.core.ParameterSource.DEFAULT_MAP)
    given["fail_under"] = list(given["fail_under"])
    explicit = {k for k in given if ctx.get_parameter_source(k) not in defaults}
    given["concurrency"], given["concurrency_auto"] = given["concurrency"]
    if "concurrency" in explicit:
        explicit.add("concurrency_auto")
    spec = resolve_spec(given, parse_pairs(pairs), resume=resume, from_run=from_run, explicit=explicit)
    if "limit_by" in explicit and spec.limit is None:  # it was ignored, the run asking every question
        raise MemplugError(f"--limit-by {spec.limit_by} draws the questions of --limit N: give --limit, or drop it")
    if resume is not None:
        from memplug.driver import nothing_to_resume

        if nothing_to_resume(resume, spec):  # nothing asked, nothing rewritten, no gate checked
            click.echo(f"{resume} is finished: nothing to resume (memplug report {resume} shows it)", err=True)
            return
    # --executor ray: the samples spread over Ray workers, the records written here (memplug.executors)
    if workers is not None and (executor or "local") != "ray":
        raise MemplugError("--workers is for --executor ray (locally, --concurrency sets the samples side by side)")
    runner = (
        build_executor(executor, address, workers, llm_limit, ray_runtime_env, llm_tpm=llm_tpm)
        if executor or workers or any(v is not None for v in (address, llm_limit, llm_tpm, ray_runtime_env))
        else None
    )
    with runner or contextlib.nullcontext():
        try:
            paths = _run_repeats(spec, repeats, output, resume, quiet, verbose, runner)
        except KeyboardInterrupt:
            if runner is not None:  # the process ends at once after the line (memplug.cli.main)
                runner.close(now=True)
            raise
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
    if quiet:  # no table, but a judge that left questions unscored is still said (on stderr), and
        from memplug.cli.report import empty_store_line, unscored_lines  # an agent that stored nothing

        for p in paths:
            for line in [*unscored_lines(RunDir(p).summary()), empty_store_line(p)]:
                if line:
                    click.echo(f"memplug: {p.name}: {line}", err=True)
    outcomes = [(p, RunDir(p).summary().outcome) for p in paths]
    failed = [(p, o) for p, o in outcomes if o is not None and o.status != "finished"]
    for path, outcome in failed:
        click.echo(outcome_line(path, outcome), err=True)
    if failed:
        ctx.exit(1)
    below = [(p, line) for p in paths for line in gates.below(gates.thresholds(spec.fail_under), RunDir(p).summary())]
    for path, line in below:
        click.echo(f"memplug: below --fail-under: {line} ({path})", err=True)
    if below:
        ctx.exit(gates.EXIT_BELOW)


def _run_repeats(
    spec: Any, repeats: int, output: Path, resume: Path | None, quiet: bool, verbose: bool, runner: Any
) -> list[Path]:
    """Run (or resume) the spec, ``repeats`` times with seeds S, S+1, ...; the run directories.
    The agent's note and the data's warnings are said once, before the first. Two or more
    repeats share one stem, named once before the first (:func:`repeat_names`)."""
    from memplug.api import run_spec
    from memplug.driver import run_stem

    def say(line: str) -> None:
        click.echo(line, err=True)

    # 60: room for the -<n> of a taken stem and the -r<i>, within a run id's 80 characters
    names = repeat_names(output, run_stem(spec, limit=60), repeats) if repeats > 1 else [None]
    return [
        run_spec(
            attrs.evolve(spec, seed=spec.seed + i),
            output=output,
            resume=resume,
            progress=not quiet,
            verbose=verbose,
            executor=runner,
            say=say if i == 0 else lambda line: None,
            name=name,
        )
        for i, name in enumerate(names)
    ]


def repeat_names(output: Path, stem: str, repeats: int) -> list[str]:
    """``<stem>-r1`` ... ``-r<repeats>``, or with ``<stem>-1``, ``-2`` ... where one of those
    names is taken in ``output``: the repeats of one command share a stem, whatever the clock
    does between them. (A directory another process makes meanwhile still gets a -1 of its
    own from :meth:`memplug.driver.Driver.new_run_dir`.)"""
    n = 0
    while True:  # ends: a folder holds finitely many names
        base = stem if n == 0 else f"{stem}-{n}"
        names = [f"{base}-r{i}" for i in range(1, repeats + 1)]
        if not any((Path(output) / name).exists() for name in names):
            return names
        n += 1


def outcome_line(path: Path, outcome: Outcome) -> str:
    """The last line of a run that did not answer every question: how many failed (and how
    many were not asked), the first error and the command that retries them."""
    first = one_line(str(outcome.first_error or "unknown"), 300)
    stopped = f"{one_line(outcome.stopped, 200)}; " if outcome.stopped else ""  # e.g. --max-errors
    of = f"of {outcome.n_expected} questions "
    counts = ", ".join(
        [f"{outcome.n_failed} {of}failed"] * bool(outcome.n_failed)
        + [f"{outcome.n_unasked} {'' if outcome.n_failed else of}not asked"] * bool(outcome.n_unasked)
    )
    return (
        f"memplug: {outcome.status}: {stopped}{counts or 'no question failed'}; first error: {first}; "
        f"retry them with: memplug eval --resume {path}"
    )


def write_repeats(paths: list[Path], output: Path) -> Path:
    """repeats-<first run id>.json beside the runs: per metric mean, spread and each repeat."""
    summaries = [RunDir(p).summary() for p in paths]
    metrics = sorted({m for s in summaries for m in s.metrics.overall})
    out = {
        "runs": [s.run_id for s in summaries],
        "seeds": [RunDir(p).info().seed for p in paths],
        "overall": {
            m: stats.repeat_summary([s.metrics.overall[m] for s in summaries if m in s.metrics.overall])
            for m in metrics
        },
    }
    path = Path(output) / f"repeats-{summaries[0].run_id}.json"
    write_json_atomic(path, out)
    return path
