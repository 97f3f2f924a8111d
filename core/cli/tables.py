"""Terminal tables that fit an 80-column terminal: every cell wraps, none is cut.

A string in a cell is text, never markup (the table is printed on
:func:`memplug.display.console`): a category ``[/]`` from a data file is shown as
``[/]``; a style is given as a :class:`rich.text.Text` (:func:`memplug.display.styled`).

rich cuts an overlong cell with "…" by default, which hides the end of a run id or a
score's interval; every table of the command line is made here, with columns that fold
instead, so a narrow terminal costs lines, never information. Where a table has more
columns than the terminal can hold whole (metrics, runs), :func:`in_blocks` splits them
into several tables, each with the leading columns repeated, so that no number or name
is broken across lines.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from memplug.display import visible

T = TypeVar("T")


def _plain(cell: Any) -> str | None:
    """The text of a cell as it is shown, or None for a renderable that is not text."""
    if isinstance(cell, str):
        return visible(cell)
    return cell.plain if isinstance(cell, Text) else None


class _Table(Table):
    """A rich Table that keeps one-word columns whole.

    When a table is wider than the terminal, rich narrows every wrapping column, and a
    column of single words (names, categories, counts) is then folded in the middle of a
    word: "multiple_c / hoice". Such a column gets its width fixed at its widest word
    before it is drawn, so only columns that can wrap at spaces give up width.
    """

    def __rich_console__(self, console: Any, options: Any) -> Any:
        for column in self.columns:
            if column.width is not None or column.no_wrap:
                continue
            texts = [_plain(column.header), *(_plain(c) for c in column._cells)]
            if texts and all(t is not None and len(t.split()) <= 1 for t in texts):
                column.width = max([cell_len(t) for t in texts if t] or [1])
        return super().__rich_console__(console, options)


def table(title: str | None, *columns: str, **options: Any) -> Table:
    """A table titled ``title`` (left-aligned) whose columns wrap their cells (at spaces; a
    column of single words keeps them whole)."""
    out = _Table(title=title, title_justify="left", **options)
    for column in columns:
        out.add_column(column, overflow="fold")
    return out


def in_blocks(
    console: Console, items: Sequence[T], build: Callable[[Sequence[T]], Table], whole: bool = True
) -> list[Table]:
    """Tables ``build(block)`` over consecutive blocks of ``items``, as many items to a block
    as fit the console's width.

    ``whole``: a table fits when every cell fits on one line (its widest measure); else
    when no word of a cell has to be broken (its narrowest). A block holds at least one
    item, even where that one does not fit (rich then folds it; nothing is cut).
    """
    from rich.measure import Measurement

    unbounded = console.options.update_width(1 << 20)  # measured against no limit, else it is clamped to the width
    blocks: list[list[T]] = []
    for item in items:
        if blocks:
            measured = Measurement.get(console, unbounded, build([*blocks[-1], item]))
            if (measured.maximum if whole else measured.minimum) <= console.width:
                blocks[-1].append(item)
                continue
        blocks.append([item])
    return [build(block) for block in blocks] or [build([])]


def print_repeats(result: dict[str, Any]) -> None:
    """The mean, spread and each value of a repeats-*.json, per metric: a table whose cells wrap
    (at 80 columns, many repeats take more lines, never a cut number); its title names the
    first run whole."""
    from memplug.display import console

    shown = table(
        f"{len(result['runs'])} repeats of {result['runs'][0]} (seeds {', '.join(map(str, result['seeds']))})",
        "metric",
        "mean",
        "std",
        "min",
        "max",
        "each repeat",
    )
    for metric, r in result["overall"].items():
        shown.add_row(
            metric,
            f"{r['mean']:.3f}",
            f"{r['std']:.3f}",
            f"{r['min']:.3f}",
            f"{r['max']:.3f}",
            " ".join(f"{v:.3f}" for v in r["values"]),
        )
    console().print(shown)
