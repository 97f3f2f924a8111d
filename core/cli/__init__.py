"""The `memplug` command line: one module per command, plugins may add more.

User errors (:class:`memplug.errors.MemplugError`) print one line on stderr and exit 2,
without a traceback; set MEMPLUG_DEBUG=1 to see it.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
from typing import Any

import click

from memplug.errors import MemplugError, did_you_mean, one_line
from memplug.secrets import scrub


#: the built-in commands, each imported when it is first used: `memplug --version` or
#: `memplug report` need not import what `eval` needs (numpy for its statistics, the judges)
BUILTIN_COMMANDS = {
    "list": "memplug.cli.list:list_command",
    "eval": "memplug.cli.eval:eval_command",
    "generate": "memplug.cli.generate:generate_command",
    "report": "memplug.cli.report:report_command",
    "rescore": "memplug.cli.rescore:rescore_command",
    "judge-check": "memplug.cli.judge_check:judge_check_command",
    "reproduce": "memplug.cli.reproduce:reproduce_command",
    "sweep": "memplug.cli.sweep:sweep_command",
}
#: each built-in command's line in `memplug --help`, so listing them imports none of them
#: (importing `eval` to read its docstring cost a third of a second: numpy, the judges);
#: tests/test_cli.py checks each against the command's own docstring
BUILTIN_SUMMARIES = {
    "list": "List installed datasets, agents, metrics, readers, judges and exports.",
    "eval": "Evaluate a memory agent on a dataset.",
    "generate": "Generate a dataset offline and write it as JSON lines.",
    "report": "Compare one or more finished runs.",
    "rescore": "Recompute metrics and judge verdicts of a finished run without re-running it.",
    "judge-check": "Check LLM judges against exact scoring on a run's objective questions, and their leniency.",
    "reproduce": "Run RUN_DIR again from its run.json and say whether every number matches.",
    "sweep": "Run a grid of evaluations: one run directory per cell, a manifest, resume.",
}

#: views of a run that are options of `report`, not commands: `memplug why RUN` says so
REPORT_VIEWS = {
    view: f" (it is an option of report: memplug report --{view} {usage}RUN...)"
    for view, usage in (("why", ""), ("html", "FILE "), ("export", "DIR "))
}


class MemplugGroup(click.Group):
    """Imports a built-in command when it is used, adds plugin commands on first use and
    turns MemplugError into exit code 2."""

    _plugins_loaded = False

    def _load_plugin_commands(self) -> None:
        if not self._plugins_loaded:
            self._plugins_loaded = True
            from memplug.plugins import get_plugins

            get_plugins().hook.register_commands(cli=self)

    def _load_builtin_command(self, name: str) -> click.Command | None:
        where = BUILTIN_COMMANDS.get(name)
        if where is None:
            return None
        module, attribute = where.split(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command), where
        self.add_command(command, name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands()
        return sorted({*super().list_commands(ctx), *BUILTIN_COMMANDS})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's list of commands, with the built-in ones not imported for it
        (:data:`BUILTIN_SUMMARIES`); plugin commands give their own help."""
        names = self.list_commands(ctx)
        commands = {name: super(MemplugGroup, self).get_command(ctx, name) for name in names}
        shown = [
            name
            for name, command in commands.items()
            if command is None and name in BUILTIN_SUMMARIES or command is not None and not command.hidden
        ]
        if not shown:
            return
        limit = formatter.width - 6 - max(map(len, shown))
        rows = []
        for name in shown:
            command = commands[name]
            # a command not imported is shown as click shows its docstring's first sentence
            shown_as = command if command is not None else click.Command(name, help=BUILTIN_SUMMARIES[name])
            rows.append((name, shown_as.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name) or self._load_builtin_command(name)
        if command is None:
            self._load_plugin_commands()
            command = super().get_command(ctx, name)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, with "did you mean" for an unknown command (`memplug evl`)."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            name = args[0] if args else ""
            if name.startswith("-") or self.get_command(ctx, name) is not None:
                raise
            hint = REPORT_VIEWS.get(name) or did_you_mean(name, self.list_commands(ctx))
            raise click.UsageError(f"no such command {name!r}{hint}", ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemplugError as exc:
            if os.environ.get("MEMPLUG_DEBUG"):
                raise
            click.echo(f"memplug: error: {one_line(scrub(str(exc)))}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt as exc:
            # click would print a blank line and turn it into Abort; main() says one line instead
            raise _Interrupted(getattr(exc, "run_dir", None), getattr(exc, "finish", None)) from None


class _Interrupted(Exception):
    """Ctrl-C inside a command, carried past click's own handling to :func:`main`, with
    what finishes the work it stopped: ``finish`` (a sweep's), else ``eval --resume``."""

    def __init__(self, run_dir: str | None, finish: str | None = None) -> None:
        super().__init__(run_dir)
        self.run_dir = run_dir
        self.finish = finish or (f"finish the run with: memplug eval --resume {run_dir}" if run_dir else None)


def _exit(code: int, now: bool = False) -> None:
    """Exit with ``code``. Where an agent's call is still running in one of the runner's
    threads (a hung plugin given up after --sample-timeout, or left by a Ctrl-C: Python
    cannot stop a thread), the interpreter's exit would wait for it forever, and a second
    Ctrl-C would end in a traceback from ``threading._shutdown``: the run's files are
    written by now, so the process ends at once instead. ``now``: so it does after a
    Ctrl-C in any case, where tearing down the interpreter of a large run took another
    2 s after its files were written (8,000 MemSim samples in memory). Multiprocessing's
    finalizers run first, as the interpreter's exit would run them: a sweep's process pool
    stopped by a Ctrl-C left its queues' semaphores registered (a traceback's frames held
    them), and the resource tracker warned of "5 leaked semaphore objects" after the line."""
    samplerun = sys.modules.get("memplug.samplerun")  # not imported: no agent ever ran here
    if now or (samplerun is not None and samplerun.agent_calls_running()):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        logging.shutdown()
        mp_util = sys.modules.get("multiprocessing.util")  # not imported: no pool ever ran here
        if mp_util is not None:
            with contextlib.suppress(Exception):
                mp_util._run_finalizers(0)
        os._exit(code)
    sys.exit(code)


@click.group(cls=MemplugGroup, context_settings={"help_option_names": ["-h", "--help"]})
# read from the installed metadata when asked, so other commands never look it up
@click.version_option(package_name="memplug", prog_name="memplug")
def cli() -> None:
    """Evaluate the long-term memory of LLM agents.

    Datasets and memory agents are plugins: `memplug list` shows what is installed,
    `memplug eval --agent bm25 --dataset memsim` runs an evaluation offline.
    """


def main() -> None:
    """Entry point. Click's own usage errors are shortened to one line like every other."""
    # memplug's warnings that matter on the terminal are printed as one line each; their log
    # records go to memplug.log once a run has one, and before that nowhere: without a
    # handler, Python's last resort would print every one of them a second time, bare
    own = logging.getLogger("memplug")
    if not own.handlers:
        own.addHandler(logging.NullHandler())
    try:
        # click's own main() would answer a Ctrl-C during parsing with a blank line before
        # ours; the context and invocation are the part of it memplug needs
        with cli.make_context("memplug", sys.argv[1:]) as ctx:
            code = cli.invoke(ctx)
    except click.exceptions.Exit as exc:  # ctx.exit(n): --help, --version, MemplugError's exit 2
        code = exc.exit_code
    except click.UsageError as exc:
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        click.echo(f"memplug: error: {one_line(exc.format_message())}{hint}", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except _Interrupted as exc:
        click.echo(f"memplug: interrupted{'; ' + exc.finish if exc.finish else ''}", err=True)
        _exit(130, now=exc.finish is not None)
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("memplug: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # `memplug list | head`: the reader left; as click's main() does
        sys.stdout = None  # nothing left to flush at exit
        sys.exit(1)
    _exit(code if isinstance(code, int) else 0)
