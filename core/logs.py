"""Where log lines go during a run: a file in the run directory, not the terminal.

The memory systems under test log freely (Mem0 and Qdrant an INFO line per stored
memory, fastembed through loguru, spaCy warnings): 1,980 lines for a ten-minute Mem0
run. On the terminal they bury the progress bar and the scores; in ``memplug.log``
beside the run's records they are there when a question fails. ``--verbose`` shows
them on stderr as well. Every line is scrubbed of secrets first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import Iterator

from memplug.display import visible
from memplug.secrets import scrub

LOG_NAME = "memplug.log"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: loggers held at WARNING during a run: httpx logs an INFO line per HTTP request (the
#: openai SDK's and many agents' client), 5,120 lines of "HTTP Request: POST ... 200 OK"
#: for a 5,120-question run, each formatted, scrubbed and written: 8% of the samples
#: thread's CPU at 256 calls in flight. A request that fails is logged by whoever made it
#: (memplug's LLM: a warning per retry, the question's error).
QUIET = ("httpx",)


class _Scrub(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = scrub(record.getMessage()), None
        return True


class _Shown(logging.Formatter):
    """A record as a line of text for the terminal: control characters written out
    (``--verbose`` shows what the agent's libraries log, the data they were given included)."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record), layout=True)


class _LoguruBridge:
    """Sends loguru's records (fastembed logs through it) to the standard logging tree."""

    def __call__(self, message: object) -> None:
        record = message.record  # type: ignore[attr-defined]
        logging.getLogger(record["name"] or "loguru").log(record["level"].no, "%s", record["message"])


_bridged = False


def tame_loguru() -> None:
    """Route loguru to logging once it has been imported (by a library, any time)."""
    global _bridged
    loguru = sys.modules.get("loguru")
    if loguru is None or _bridged:
        return
    _bridged = True
    loguru.logger.remove()
    loguru.logger.add(_LoguruBridge(), level="INFO", format="{message}")


@contextlib.contextmanager
def keeping_handlers() -> Iterator[None]:
    """The root logger's handlers and level as they were on entry, put back on exit.

    :func:`logs_to` restores memplug's caller's logging so; and importing cognee runs its
    ``setup_logging()``, which removes every root handler (memplug.log's among them) and
    adds a console handler of its own: without this, memplug's warnings were lost and
    cognee's errors reached the terminal.
    """
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers = saved[0]
        root.setLevel(saved[1])


@contextlib.contextmanager
def logs_to(run_dir: Path, verbose: bool = False) -> Iterator[Path]:
    """Send every log record to ``run_dir/memplug.log`` (and stderr when ``verbose``).

    Because the root logger has a handler from here on, a library's own
    ``logging.basicConfig()`` at import time adds none of its own.
    """
    path = Path(run_dir) / LOG_NAME
    root = logging.getLogger()
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter(FORMAT))
    handlers: list[logging.Handler] = [handler]
    if verbose:
        terminal = logging.StreamHandler(sys.stderr)
        terminal.setFormatter(_Shown())
        handlers.append(terminal)
    for h in handlers:
        h.addFilter(_Scrub())
    quiet = [logging.getLogger(name) for name in QUIET]
    levels = [logger.level for logger in quiet]
    with keeping_handlers():
        root.handlers = handlers
        root.setLevel(logging.INFO)
        for logger in quiet:
            logger.setLevel(logging.WARNING)
        logging.captureWarnings(True)
        os.environ.setdefault("LOGURU_AUTOINIT", "False")  # a loguru imported from now on starts silent
        tame_loguru()
        try:
            yield path
        finally:
            for logger, level in zip(quiet, levels):
                logger.setLevel(level)
            logging.captureWarnings(False)
            try:
                handler.close()
            except OSError:  # a full disk: the log is the least of it
                pass
