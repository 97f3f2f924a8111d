"""Terminal tables that fit an 80-column terminal: every cell wraps, none is cut.

rich cuts an overlong cell with "…" by default, which hides the end of a run id or a
score's interval; every table of the command line is made here, with columns that fold
instead, so a narrow terminal costs lines, never information.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table


def table(title: str | None, *columns: str, **options: Any) -> Table:
    """A table titled ``title`` (left-aligned) whose columns wrap their cells."""
    out = Table(title=title, title_justify="left", **options)
    for column in columns:
        out.add_column(column, overflow="fold")
    return out
