"""memplug from Python: :func:`evaluate` runs what `memplug eval` runs; :func:`read_run` and
:func:`read_runs` read run directories as the report does.

One path: `memplug eval` resolves its command line with :func:`resolve_spec` and runs it
with :func:`run_spec`, the functions :func:`evaluate` calls, so a notebook and the command
line resolve options, preflight, write, resume and fail alike. What the command line turns
into exit codes is here an exception or a status: bad configuration raises
:class:`~memplug.errors.MemplugError` before any work (the command's exit 2); a run with
failed questions returns a :class:`Run` whose ``status`` is ``partial`` or ``failed`` (exit
1); Ctrl-C raises KeyboardInterrupt after the run directory is left resumable.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from memplug.errors import MemplugError, one_line
from memplug.record import QuestionRecord, RunInfo, RunSummary
from memplug.results import RunDir

if TYPE_CHECKING:
    import pandas
    from rich.progress import Progress

    from memplug.plan import Plan
    from memplug.specs import RunSpec


def resolve_spec(
    fields: Mapping[str, Any],
    options: Mapping[str, str] | None = None,
    *,
    explicit: Iterable[str] = (),
    resume: Path | None = None,
    from_run: Path | None = None,
) -> RunSpec:
    """The :class:`~memplug.specs.RunSpec` of an evaluation, as `memplug eval` builds it.

    ``fields``: RunSpec fields (``agent``, ``dataset``, ``data``, ``llm`` ...; ``no_cache``
    as the command line spells ``cache``); ``options``: the ``-o KEY=VALUE`` pairs, split
    between agent and dataset by what each declares (``agent.KEY`` / ``dataset.KEY`` where
    both accept KEY). With ``resume`` or ``from_run`` the stored run's spec is the start
    and only the ``explicit`` fields override it (a default must not undo a stored value).
    An unknown field, agent, dataset or option is a MemplugError.
    """
    from memplug import specs
    from memplug.secrets import is_redacted

    explicit = set(explicit)
    if resume is not None and from_run is not None:
        raise MemplugError("--resume finishes a run, --from starts one from another: give one of them")
    source = resume or from_run
    stored: dict[str, Any] | None = None
    if source is not None:  # start from the stored spec; options given now override it
        stored = specs.stored_fields(RunDir(source))
        if from_run is not None:
            stored["from_run"] = str(from_run)
            for gate in specs.GATE_FIELDS:  # the source's --fail-under is not this run's
                stored.pop(gate, None)
    if from_run is not None and stored is not None:
        _check_replay(from_run, stored, fields, explicit)
    raw = dict(options or {})
    # resumed without -o: the run's own agent and dataset options
    spec = specs.spec_fields(fields, raw if resume is None or raw else None, stored=stored, explicit=explicit)
    if resume is not None and is_redacted(spec.get("api_base")) and "api_base" not in explicit:
        raise MemplugError(
            f"{resume}: run.json keeps --api-base without its password "
            f"({spec['api_base']}): pass --api-base again to resume"
        )
    return specs.build(spec)


#: what ``--from`` cannot change: the stored recalls are that agent's, on that dataset and
#: seed, ingested in those chunks with that embedder
REPLAY_FIXED = ("agent", "dataset", "seed", "chunk_size", "embedder")


def _check_replay(source: Path, stored: Mapping[str, Any], fields: Mapping[str, Any], explicit: set[str]) -> None:
    """A field given with ``--from`` that would change what was recalled is refused: `--from
    RUN --agent hybrid` ran on bm25's recalls and recorded the run as hybrid's."""
    for name in REPLAY_FIXED:
        if name in explicit and fields.get(name) is not None and fields[name] != stored.get(name):
            flag = "--" + name.replace("_", "-")
            raise MemplugError(
                f"--from {source} answers that run's recalls ({name} {stored.get(name)!r}): "
                f"{flag} {fields[name]!r} cannot change them; drop {flag}, or run the agent"
            )


def run_spec(
    spec: RunSpec,
    *,
    output: Path,
    resume: Path | None = None,
    progress: bool = False,
    verbose: bool = False,
    executor: Any = None,
    say: Callable[[str], None] | None = None,
    name: str | None = None,
) -> Path:
    """Run (or resume) one spec and return its run directory: the agent's note and what the
    loader skipped are said (one line each, through ``say``) before the first question;
    ``progress``: a rich progress bar on stderr (a live widget in a notebook); ``name``: the
    new run's id, ``<stamp>-<agent>-<dataset>`` by default."""
    from memplug.runner import Evaluation

    evaluation = Evaluation(spec)
    tell = say or _stderr
    for note in (evaluation.agent_note or "").splitlines():  # a line each (an agent may say several)
        tell(f"memplug: {one_line(note)}")
    _say_data_warnings(evaluation, tell)
    if not progress:
        return evaluation.run(
            output=output, resume=resume, capture_logs=True, verbose=verbose, executor=executor, name=name
        )
    bar, start = progress_bar()
    with bar:
        return evaluation.run(
            output=output,
            resume=resume,
            progress=start,
            capture_logs=True,
            verbose=verbose,
            executor=executor,
            name=name,
        )


def progress_bar() -> tuple[Progress, Callable[[int, int], Callable[[], None]]]:
    """A rich progress bar on stderr (stdout stays clean) and the runner's callback.

    While the LLM layer backs off (a 429, a 5xx, a timeout) the bar says what it waits
    for, so that a run held up by a rate limit does not look stuck. In Jupyter, rich draws
    the same bar as a notebook widget.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from memplug.display import console, visible
    from memplug.llm import on_wait
    from memplug.text import clip

    class Bar(Progress):
        """rich's bar, without the blank line rich prints on a stderr that is no terminal
        when the bar never had a task: a run refused before its first question (a bad
        --fail-under, a run already in progress) is then one line, not a blank and a line."""

        def stop(self) -> None:
            if self.task_ids or self.console.is_interactive or self.console.is_jupyter:
                super().stop()
            else:
                self.live.stop()

    # the reason is a provider's error text: shown as text, never read as markup
    bar = Bar(
        TextColumn("questions"),
        BarColumn(bar_width=20),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[waiting]}", style="yellow", markup=False),
        console=console(stderr=True),
        transient=False,
    )

    def start(total: int, finished: int) -> Callable[[], None]:
        task = bar.add_task("eval", total=total, completed=finished, waiting="")
        # "questions", the bar, "M/N", elapsed, "eta", remaining and the spaces between: the
        # reason gets what is left of the line (rich shrank the others to "questio…" instead)
        room = bar.console.width - (53 + 2 * len(str(total)))

        def waiting(reason: str | None) -> None:
            text = f"waiting: {visible(reason)}" if reason else ""
            if len(text) > room:
                text = clip(text, room) if room >= 30 else "waiting (memplug.log)"[: max(room, 0)]
            bar.update(task, waiting=text)

        on_wait(waiting)
        return lambda: bar.advance(task)

    return bar, start


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def _say_data_warnings(evaluation: Plan, say: Callable[[str], None]) -> None:
    """Load the data now, so that what the loader skipped is one line before the run, not many."""
    evaluation.samples()  # loaded once: the run uses these
    found = evaluation.data_warnings
    if found:
        more = f" (and {len(found) - 1} more, listed in run.json)" if len(found) > 1 else ""
        say(f"memplug: warning: {one_line(found[0], 300)}{more}")


def _interactive() -> bool:
    """A terminal or a notebook is watching: the default for ``evaluate(progress=None)``."""
    if sys.stderr is not None and sys.stderr.isatty():
        return True
    return "ipykernel" in sys.modules


def evaluate(
    agent: str | None = None,
    dataset: str | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    output: str | Path = "runs",
    resume: str | Path | None = None,
    from_run: str | Path | None = None,
    progress: bool | None = None,
    verbose: bool = False,
    executor: str | None = None,
    **settings: Any,
) -> Run:
    """Evaluate a memory agent on a dataset, exactly as `memplug eval` does, and return the run.

    ``options`` are the command line's ``-o`` pairs (``{"n": 50}``; ``agent.KEY`` or
    ``dataset.KEY`` where both accept KEY); ``settings`` are its other options by their
    Python names: ``data``, ``limit``, ``seed``, ``llm``, ``api_base``, ``reader``,
    ``judge``, ``judge_prompt``, ``embedder``, ``chunk_size``, ``top_k``, ``concurrency``,
    ``cache``, ``llm_timeout``, ``llm_retries``, ``llm_deadline``, ``sample_timeout`` ...
    ``resume``: finish that run directory (the stored spec, overridden by what is given);
    ``from_run``: answer a stored run's recalls again. ``executor="ray"`` spreads the samples
    over Ray. ``progress``: a progress bar (default: when a terminal or notebook watches).

    Raises MemplugError before any work for bad configuration. A run with failed questions
    returns normally: check ``run.status`` (``finished``, ``partial``, ``failed``).

    >>> run = memplug.evaluate("bm25", "memsim", options={"n": 20}, output="runs")  # doctest: +SKIP
    >>> run.overall["accuracy"]  # doctest: +SKIP
    """
    fields: dict[str, Any] = dict(settings)
    if agent is not None:
        fields["agent"] = agent
    if dataset is not None:
        fields["dataset"] = dataset
    from memplug.specs import typed

    typed(fields)  # click checks the command line's types; a Python caller's are checked here
    if options is not None and not isinstance(options, Mapping):
        raise MemplugError(f"options={options!r}: give the -o pairs as a mapping, e.g. {{'n': 3}}")
    pairs = {str(k): _option_text(v) for k, v in (options or {}).items()}
    resume_path = Path(resume) if resume is not None else None
    spec = resolve_spec(
        fields, pairs, explicit=fields, resume=resume_path, from_run=Path(from_run) if from_run is not None else None
    )
    runner = None
    if executor is not None:
        from memplug.executors import make_executor

        runner = make_executor(executor)
    show = _interactive() if progress is None else progress
    if runner is None:
        path = run_spec(spec, output=Path(output), resume=resume_path, progress=show, verbose=verbose)
    else:
        with runner:
            path = run_spec(
                spec, output=Path(output), resume=resume_path, progress=show, verbose=verbose, executor=runner
            )
    return read_run(path)


def _option_text(value: Any) -> str:
    """An option's value as `-o KEY=VALUE` would give it (options parse their text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@attrs.define
class Run:
    """One run directory, read as `memplug report` reads it: run.json (``spec``, ``resolved``,
    ``status`` ...), summary.json (``summary``), and the question records, read when first used."""

    path: Path
    #: run.json (checked for its schema)
    info: RunInfo
    summary: RunSummary

    @property
    def run_id(self) -> str:
        return self.summary.run_id or self.path.name

    @property
    def status(self) -> str:
        """finished, partial (some questions failed) or failed (none answered)."""
        outcome = self.summary.outcome
        return outcome.status if outcome is not None else str(self.info.status or "finished")

    @property
    def spec(self) -> dict[str, Any]:
        """The run's spec as run.json stores it (secrets masked)."""
        return dict(self.info.spec)

    @property
    def overall(self) -> dict[str, float]:
        """Each metric's mean over the answered questions."""
        return dict(self.summary.metrics.overall)

    @cached_property
    def records(self) -> list[QuestionRecord]:
        """The question records (samples.jsonl), read on first use."""
        return RunDir(self.path).records()

    def to_pandas(self) -> pandas.DataFrame:
        """One row per question: the spec's fields, the question's ids and category, each
        metric's score as a column (NaN where it does not apply), its error and timings."""
        pd = _pandas()
        return pd.DataFrame(list(_question_rows(self)))

    def _repr_html_(self) -> str:
        """The score table in a notebook: each metric overall and per category, with n."""
        from html import escape

        metrics = sorted(self.summary.metrics.overall)
        blocks = [("overall", self.summary.metrics.overall)] + sorted(self.summary.metrics.by_category.items())
        counts = self.summary.n
        head = "".join(f"<th>{escape(m)}</th>" for m in metrics)
        rows = []
        for name, values in blocks:
            n = counts.get(None if name == "overall" else name) if counts is not None else {}
            cells = "".join(
                f"<td>{values[m]:.3f}</td>" if isinstance(values.get(m), (int, float)) else "<td></td>" for m in metrics
            )
            size = max(n.values()) if n else ""
            rows.append(f"<tr><td>{escape(name)}</td><td>{size}</td>{cells}</tr>")
        title = (
            f"<p><b>{escape(self.run_id)}</b>: {escape(self.summary.agent)} on "
            f"{escape(self.summary.dataset)}, {escape(self.status)}</p>"
        )
        return (
            f"{title}<table><thead><tr><th>category</th><th>n</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )


@attrs.define
class Runs:
    """Several runs (a list of directories, or a sweep's finished cells)."""

    runs: list[Run]

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, index: int) -> Run:
        return self.runs[index]

    def to_pandas(self) -> pandas.DataFrame:
        """One row per run: its id, status, path, the spec's fields and each metric's overall mean."""
        pd = _pandas()
        return pd.DataFrame([_run_row(r) for r in self.runs])

    def questions(self) -> pandas.DataFrame:
        """One row per question of every run (:meth:`Run.to_pandas`, concatenated)."""
        pd = _pandas()
        return pd.DataFrame([row for r in self.runs for row in _question_rows(r)])


def read_run(path: str | Path) -> Run:
    """A run directory, schema-checked: MemplugError when it is not a finished memplug run
    (a run without summary.json is unfinished: finish it with ``evaluate(resume=path)``)."""
    run_dir = RunDir(Path(path)).check()
    return Run(run_dir.path, run_dir.info(), run_dir.summary())


def read_runs(paths: str | Path | Iterable[str | Path]) -> Runs:
    """Run directories, or a sweep directory (its finished cells), or a folder holding runs."""
    from memplug.sweep import Sweep, expand

    given = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    found: list[Path] = []
    for path in given:
        if Sweep.is_sweep(path):
            found.extend(expand(path))
        elif path.is_dir() and not (path / "run.json").exists():
            found.extend(sorted(p.parent for p in path.glob("*/run.json")))
        else:
            found.append(path)
    if not found:
        raise MemplugError(f"no run directories in {', '.join(map(str, given))}")
    return Runs([read_run(p) for p in found])


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise MemplugError("to_pandas() needs pandas: pip install 'memplug[pandas]'") from None
    return pandas


def _spec_columns(run: Run) -> dict[str, Any]:
    spec = run.spec
    return {
        "run_id": run.run_id,
        "agent": spec.get("agent", run.summary.agent),
        "dataset": spec.get("dataset", run.summary.dataset),
        **{k: v for k, v in spec.items() if k not in ("agent", "dataset") and not isinstance(v, dict)},
        **{f"agent.{k}": v for k, v in (spec.get("agent_options") or {}).items()},
        **{f"dataset.{k}": v for k, v in (spec.get("dataset_options") or {}).items()},
    }


def _run_row(run: Run) -> dict[str, Any]:
    llm = run.summary.llm
    return {
        **_spec_columns(run),
        "status": run.status,
        "path": str(run.path),
        "n_questions": run.summary.n_questions,
        "n_errors": run.summary.n_errors,
        "cost_usd": llm.cost_usd,
        "prompt_tokens": llm.prompt_tokens,
        "completion_tokens": llm.completion_tokens,
        **run.overall,
    }


def _question_rows(run: Run) -> Iterator[dict[str, Any]]:
    base = _spec_columns(run)
    metrics = sorted({m for r in run.records for m in r.scores})
    for r in run.records:
        yield {
            **base,
            "sample_id": r.sample_id,
            "question_id": r.question_id,
            "category": r.category,
            "question": r.question,
            "gold": r.gold[0] if len(r.gold) == 1 else r.gold,
            "prediction": r.prediction,
            "error": r.error,
            **{m: (float("nan") if r.scores.get(m) is None else r.scores[m]) for m in metrics},
            "recall_s": r.timings.recall_s,
            "read_s": r.timings.read_s,
            "cost_usd": r.usage.cost_usd if r.usage is not None else None,
        }
