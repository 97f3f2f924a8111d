"""Text from outside memplug, shown as text wherever memplug prints it.

Datasets are downloaded from strangers, and their strings (categories, questions,
answers), the strings of run files, plugins and LLM replies, and the user's own input
all reach the terminal or a published table. Printed as they are, they act instead of
being read: rich reads ``[bold red]x[/bold red]`` as a style and stops on ``[/]`` with a
MarkupError; ``ESC ] 0 ; … BEL`` sets the terminal's title and ``ESC [ 2 J`` clears its
screen; a bidi override (U+202E) reverses the rest of a table's row; a ``|`` adds a
column to a markdown table, a line break ends its row.

Everything printed goes through one of the few places that call :func:`visible`:
the rich console of :func:`console` (every table, line and progress bar of the command
line), :func:`memplug.errors.one_line` (every error and warning line), :func:`markdown`,
the LaTeX and CSV writers of :mod:`memplug.publish`, and the HTML report's Jinja
environment and chart labels (:mod:`memplug.htmlreport`). Styles are given as
:class:`rich.text.Text` objects (:func:`styled`), never as markup inside a string,
so that no string is ever read as markup.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.style import Style
from rich.text import Text

#: C0 and C1 control characters and DEL; Unicode's line and paragraph separators; the
#: bidi embeddings, overrides and isolates, which reorder everything after them up to the
#: end of the line (right-to-left letters and the marks LRM/RLM are text, and stay)
_SHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: the same, less tab and line feed: the layout of HTML and of a log's tracebacks
_SHOWN_BUT_LAYOUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def visible(text: str, *, layout: bool = False) -> str:
    r"""``text`` with its control characters written out as Python writes them in a string
    literal: ESC as ``\x1b``, a line break as ``\n``, U+202E as ``\u202e``.

    Written out, not dropped: a category that differs from another only by a control
    character still reads as different. ``layout``: tab and line feed are kept, for text
    whose lines are its layout (HTML, where they are whitespace; a log's tracebacks); a
    carriage return is still written out, since it would send the cursor back over the
    line. The result has none of the characters it writes out, so a second call changes
    nothing.
    """
    return (_SHOWN_BUT_LAYOUT if layout else _SHOWN).sub(_escape, text)


def markdown(text: str) -> str:
    r"""``text`` for a cell or a line of a markdown document: :func:`visible` (a line break
    would end the row), ``|`` escaped (it would add a column) and ``<`` escaped (raw HTML,
    which some renderers pass through); the backslash is escaped first, so that one in the
    text never escapes what follows it. Brackets, asterisks and underscores are left as
    they are: memplug's own names use them (``judge[longmemeval]``, ``session_hit@5``)
    and a row stays a row whatever they do.
    """
    return visible(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "\\<")


def styled(text: str, style: str | Style = "") -> Text:
    """``text`` in ``style`` (e.g. "red"), for a line or cell that mixes memplug's styles
    with outside text: the text is :func:`visible`, never read as markup."""
    return Text(visible(text), style=style)


class TextConsole(Console):
    """A rich console on which every string is text: no markup, no emoji codes
    (``:warning:``), no highlighting, control characters written out (:func:`visible`).

    Every string that rich renders, a table's title, header and cells included, goes
    through :meth:`render_str`, so this one method covers every table and line printed
    on it; a :class:`~rich.text.Text` is taken as it is (see :func:`styled`).
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**{"markup": False, "emoji": False, "highlight": False, **options})

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(visible(text), **options)

    def say(self, text: str, hang: int = 2) -> None:
        """A line of text wrapped to this console's width by :func:`wrap` (at spaces, never
        inside a count or an interval; continuation lines ``hang`` columns in)."""
        for part in wrap(text, self.width, hang):
            self.print(part, soft_wrap=True)


#: a short bracketed group a line is never broken inside: a count "(n 1138)", an interval
#: "[0.87, 0.91]"; a longer one (quoted prose, an unclosed bracket) breaks like any text
_KEPT = re.compile(r"\([^()\[\]]{0,24}\)|\[[^()\[\]]{0,24}\]")


def wrap(text: str, width: int, hang: int = 2) -> list[str]:
    """``text`` as lines of at most ``width`` columns, broken at spaces but never inside a
    short bracketed group (:data:`_KEPT`); every line after the first is indented ``hang``
    columns past the first line's own indent. A word longer than a line stays whole.

    Written here because neither library does it: rich and textwrap break at any space,
    so "(n 1138)" was printed as "(n" at the end of one line and "1138)" on the next, and
    a folded example lost its indent.
    """
    indent = len(text) - len(text.lstrip(" "))
    body = text[indent:]
    kept = [m.span() for m in _KEPT.finditer(body)]
    words, start, k = [], 0, 0
    for i, char in enumerate(body):
        while k < len(kept) and kept[k][1] <= i:
            k += 1
        if char == " " and not (k < len(kept) and kept[k][0] < i):
            words.append(body[start:i])
            start = i + 1
    words.append(body[start:])
    lines: list[str] = []
    line = " " * indent
    for word in words:
        if line.strip() and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = " " * (indent + hang) + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    lines.append(line)
    return lines


def console(stderr: bool = False) -> TextConsole:
    """The console memplug prints its tables and lines on (``stderr``: its progress bars)."""
    return TextConsole(stderr=stderr)
