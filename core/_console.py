"""The ``memplug`` command's entry point: a Ctrl-C at any moment of the process ends in one
line and a status that says what happened, not in a traceback or a signal's death: while
the command line is still being imported, "memplug: interrupted" and exit 130, like a
Ctrl-C at any later moment; once the command has its status, that status
(:mod:`memplug._exitstatus`)."""

from __future__ import annotations

import sys

from memplug import _exitstatus


def main() -> None:
    _exitstatus.install()
    try:
        from memplug.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("memplug: interrupted\n")
        sys.exit(130)
    _exitstatus.run(cli_main)
