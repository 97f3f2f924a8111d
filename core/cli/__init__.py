"""The `memplug` command line: one module per command, plugins may add more.

User errors (:class:`memplug.errors.MemplugError`) print one line on stderr and exit 2,
without a traceback; set MEMPLUG_DEBUG=1 to see it.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import Any

import click

from memplug import __version__
from memplug.errors import MemplugError
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

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name) or self._load_builtin_command(name)
        if command is None:
            self._load_plugin_commands()
            command = super().get_command(ctx, name)
        return command

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
            raise _Interrupted(getattr(exc, "run_dir", None)) from None


class _Interrupted(Exception):
    """Ctrl-C inside a command, carried past click's own handling to :func:`main`."""

    def __init__(self, run_dir: str | None) -> None:
        super().__init__(run_dir)
        self.run_dir = run_dir


def one_line(text: str, limit: int = 600) -> str:
    """An error message as one line of bounded length: line breaks become spaces, and the
    middle of an overlong message (a value quoted from a data file) is cut out."""
    text = " ".join(text.splitlines())
    if len(text) <= limit:
        return text
    return f"{text[: limit - 200]} [...{len(text) - limit} characters cut...] {text[-200:]}"


@click.group(cls=MemplugGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memplug")
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
        resume = f"; finish the run with: memplug eval --resume {exc.run_dir}" if exc.run_dir else ""
        click.echo(f"memplug: interrupted{resume}", err=True)
        sys.exit(130)
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("memplug: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # `memplug list | head`: the reader left; as click's main() does
        sys.stdout = None  # nothing left to flush at exit
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
