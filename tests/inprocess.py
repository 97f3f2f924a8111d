"""`memplug ARGS` run in this process the way the console script runs it, for tests that used
to start `python -m memplug.cli` only to read its exit code, stdout and stderr.

:func:`memplug_main` calls :func:`memplug.cli.main` (the console script's own entry, with its
one-line usage errors and its exit codes) under click's stream isolation, with the
environment given as a subprocess would get it: ``PYTHONPATH`` entries go on ``sys.path``
(a plugin's entry points are found there), the plugin manager is made afresh from the entry
points (``MEMPLUG_LOAD_PLUGINS`` included), and the working directory is ``cwd``. An
exception that escapes is a traceback on stderr and exit code 1, as in a process. Everything
is put back afterwards. Tests where the process boundary is the point (signals, kill -9,
peak memory, the installed console script, a fresh interpreter's stderr) keep a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Mapping, Sequence

from click.testing import CliRunner


def memplug_main(
    args: Sequence[object], env: Mapping[str, str] | None = None, cwd: Path | str | None = None
) -> subprocess.CompletedProcess[str]:
    """`memplug ARGS` in process: a CompletedProcess like ``subprocess.run(..., text=True,
    capture_output=True)`` gives."""
    from memplug.cli import cli, main
    from memplug.plugins import reset_plugins

    argv = ["memplug", *map(str, args)]
    env = dict(os.environ if env is None else env)
    added = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
    saved_env, saved_path, saved_argv, saved_cwd = dict(os.environ), list(sys.path), sys.argv, os.getcwd()
    saved_commands, saved_loaded = dict(cli.commands), cli.__dict__.get("_plugins_loaded")
    saved_modules = set(sys.modules)
    os.environ.clear()
    os.environ.update(env)
    sys.path[:0] = added
    reset_plugins(None)
    code: int = 0
    try:
        if cwd is not None:
            os.chdir(cwd)
        with CliRunner().isolation() as (stdout, stderr, _):
            sys.argv = argv
            try:
                main()
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    sys.stderr.write(f"{exc.code}\n")
                    code = 1
            except Exception:
                traceback.print_exc(file=sys.stderr)
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            out, err = stdout.getvalue().decode(), stderr.getvalue().decode()
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        reset_plugins(None)
        cli.commands.clear()
        cli.commands.update(saved_commands)
        if saved_loaded is None:
            cli.__dict__.pop("_plugins_loaded", None)
        else:
            cli.__dict__["_plugins_loaded"] = saved_loaded
        for name in set(sys.modules) - saved_modules:  # a plugin imported from an added path
            where = getattr(sys.modules[name], "__file__", None) or ""
            if any(where.startswith(p) for p in added):
                del sys.modules[name]
    return subprocess.CompletedProcess(argv, code, out, err)
