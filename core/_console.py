"""The ``memplug`` command's entry point: Ctrl-C while the command line is still being
imported ends in one line, like Ctrl-C at any later moment, not in a traceback."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from memplug.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("memplug: interrupted\n")
        sys.exit(130)
    cli_main()
