"""The hooks a memplug plugin may implement (pluggy project name "memplug").

Registration hooks hand the plugin a ``register`` callback instead of asking it to
return things, so one plugin can register several items and the host validates
names and targets in one place. ``register(name, target, **info)`` takes a lazy
``"module:attr"`` target that is imported only when the item is used.
"""

from __future__ import annotations

from typing import Any, Callable

import pluggy

hookspec = pluggy.HookspecMarker("memplug")
hookimpl = pluggy.HookimplMarker("memplug")

Register = Callable[..., None]


@hookspec
def register_datasets(register: Register) -> None:
    """Register dataset builders.

    :param register: ``register(name, "module:BuilderClass", **info)``; the class has
        ``info: DatasetInfo``, ``options`` and ``build(options) -> Iterable[Sample]``.
    """


@hookspec
def register_agents(register: Register) -> None:
    """Register memory agents.

    :param register: ``register(name, "module:factory", **info)``; the factory is called
        as ``factory(config: AgentConfig, workdir: Path)`` once per sample. Info keys:
        ``description``, ``requires`` (modules that must be importable), ``extra``
        (the pip extra that installs them), ``reference=True`` for baselines that use
        the targets side channel.
    """


@hookspec
def register_metrics(register: Register) -> None:
    """Register metrics.

    :param register: ``register(name, "module:factory", **info)``; the factory is called
        as ``factory(config: MetricConfig)`` and returns an object with ``name``,
        ``version`` and ``score(ctx: ScoreContext) -> float | None``.
    """


@hookspec
def register_readers(register: Register) -> None:
    """Register readers, which write an answer from recalled items.

    :param register: ``register(name, "module:factory", **info)``; the factory is called
        as ``factory(config: ReaderConfig)`` and returns an object with
        ``async answer(question, items, info) -> str``.
    """


@hookspec
def register_judges(register: Register) -> None:
    """Register LLM judges: named, versioned sets of judging prompts.

    :param register: ``register(name, "module:JUDGE", **info)``; the target is a
        :class:`memplug.judge.JudgeSet` (prompts, which prompt a question gets, the gold it
        is shown, call parameters). Select one with ``-o judge=NAME`` (datasets that offer
        it) or ``memplug eval --judge-prompt NAME``; run.json records its name and prompts' sha256.
    """


@hookspec
def register_exports(register: Register) -> None:
    """Register a dataset's official export: the file its benchmark's own scripts read,
    written by ``memplug report RUNS --export DIR`` for each run on that dataset.

    :param register: ``register(dataset, "module:function", suffix=..., description=...)``;
        the name is the dataset's (one export per dataset), ``suffix`` ends the file's name
        (``DIR/<run id><suffix>``). The function is an :class:`memplug.exports.Exporter`:
        called with the run's scored questions (:class:`memplug.record.QuestionRecord`,
        in the run's order), it returns the file's lines; memplug writes them atomically.
    """


@hookspec
def register_commands(cli: Any) -> None:
    """Add sub-commands to the ``memplug`` command line.

    :param cli: the root ``click.Group``; call ``cli.command()`` / ``cli.add_command``.
    """


@hookspec
def memplug_run_start(run: Any) -> None:
    """Observe the start of an evaluation.

    :param run: the :class:`memplug.driver.Run` (spec, run directory, run id).
    """


@hookspec
def memplug_sample_end(run: Any, sample: Any, records: list[Any]) -> None:
    """Observe a finished sample.

    :param run: the running :class:`memplug.driver.Run`.
    :param sample: the :class:`memplug.models.Sample` that finished.
    :param records: the :class:`memplug.record.QuestionRecord` written for each of its
        questions (``to_json()``: the line of samples.jsonl).
    """


@hookspec
def memplug_run_end(run: Any, summary: Any) -> None:
    """Observe the end of an evaluation.

    :param run: the finished :class:`memplug.driver.Run`.
    :param summary: the :class:`memplug.record.RunSummary` written to summary.json
        (``to_json()``: its content).
    """


@hookspec(firstresult=True)
def memplug_check_embedder(name: str, llm: Any) -> bool | None:
    """Check an embedder that ``--embedder NAME`` names, before the first question.

    :param name: the name as given (``st:<model>``); ``wordllama`` and ``litellm:<model>``
        are checked by memplug itself.
    :param llm: the run's :class:`memplug.llm.LLM` (its endpoint and key), or None.
    :return: True when this plugin knows the name and built its embedder (a model missing
        locally raises MemplugError now, in one line); None to leave it to other plugins.
        The first result that is not None wins (``firstresult``).
    """


@hookspec(firstresult=True)
def memplug_report_table(paths: list[Any], fmt: str) -> str | None:
    """A dataset's own table of runs for ``memplug report``, in place of the score table
    (MemoryAgentBench's runs: the paper's table by competency).

    :param paths: the run directories reported, as :class:`pathlib.Path`.
    :param fmt: ``terminal``, ``markdown``, ``latex`` or ``html`` (the page's section).
    :return: the table as text in ``fmt``, or None when the runs are not this plugin's.
        The first result that is not None wins (``firstresult``).
    """
