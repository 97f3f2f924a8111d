"""Text from data, run files, plugins and LLM replies is shown as text wherever memplug prints
it (memplug.display): rich markup is not read, control characters are written out, markdown
and LaTeX rows stay rows, and right-to-left or very long text leaves tables intact.

A `conversations` file whose every string holds all of it goes through `memplug eval` and
`memplug report` in every format; each output is checked for what it must not contain.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from inprocess import memplug_main
from memplug import hookimpl
from memplug.cli import cli, one_line
from memplug.display import TextConsole, markdown, visible, wrap

MARKUP = "[bold red]RED[/bold red] [/]"
CONTROL = "\u001b]0;pwned\u0007\u001b[2J\x9b31m"  # OSC title + BEL, clear screen, C1 CSI
SHOWN_CONTROL = r"\x1b]0;pwned\x07\x1b[2J\x9b31m"
RTL = "שלום עולם مرحبا بالعالم"
#: every kind at once: markup, control characters, a pipe, a bidi override, HTML, TeX, RTL
HOSTILE = f"{MARKUP} {CONTROL} a|b \u202eoverride <script>alert(1)</script> $\\notamacro{{$ {RTL}"
LONG = "long" + "x" * 150 + " " + "word " * 40
#: what no output may hold: raw ESC, BEL, C1 CSI, a bidi override; a line break inside a cell
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\u202e")
CATEGORIES = [HOSTILE, LONG, "[/]", RTL, "new\nline"]


def hostile_file(folder: Path) -> Path:
    """A `conversations` sample whose every string field (ids, dates, speakers, texts,
    questions, answers, categories) holds the hostile text."""
    session = "S1" + HOSTILE
    qa = [
        {
            "id": "q" + HOSTILE,
            "question": "Where did Ana go? " + HOSTILE,
            "answers": ["Lisbon " + HOSTILE],
            "evidence": [f"{session}:1"],
            "category": HOSTILE,
            "date": HOSTILE,
        },
        {"question": "Where did Ben go? " + LONG, "answers": ["Porto"], "category": LONG},
        {"question": "Who went to Porto?", "answers": ["Ben"], "category": "[/]"},
        {"question": RTL + "?", "answers": [RTL], "category": RTL},
        {"question": "Who?\nReally?", "answers": ["Ben"], "category": "new\nline"},
    ]
    sample = {
        "id": "s" + HOSTILE,
        "sessions": [
            {
                "id": session,
                "date": HOSTILE,
                "turns": [
                    {"speaker": HOSTILE, "text": "Ana went to Lisbon. " + HOSTILE},
                    {"speaker": "Ben", "text": f"Ben went to Porto. {RTL} {LONG}"},
                ],
            }
        ],
        "qa": qa,
    }
    path = folder / "hostile.jsonl"
    path.write_text(json.dumps(sample, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def memplug(args: list[object], cwd: Path, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "MEMPLUG_CACHE_DIR": str(cwd / "cache")}
    return memplug_main(args, env=env, cwd=cwd)


def assert_clean(text: str) -> None:
    found = [c for c in FORBIDDEN if c in text]
    assert not found, f"raw {found!r} in the output"


def assert_intact(text: str, columns: int) -> None:
    """Every line fits the terminal, and each table's lines are all one width (a cell that
    broke out of its table, or a character measured wrong, changes a line's width)."""
    lines = text.splitlines()
    assert all(cell_len(line) <= columns for line in lines), max(lines, key=cell_len)
    tables: list[list[str]] = []
    for line, previous in zip(lines, [""] + lines):
        if line[:1] in "┏┃┡│└":
            if previous[:1] not in "┏┃┡│└":
                tables.append([])
            tables[-1].append(line)
    assert tables
    for table in tables:
        assert len({cell_len(line.rstrip()) for line in table}) == 1, "\n".join(table)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """`memplug eval` of the hostile file (bm25, offline): the run directory and the output."""
    folder = tmp_path_factory.mktemp("hostile")
    data = hostile_file(folder)
    # a relative --output: the last line is the run's path, printed whole (never wrapped), and a
    # pytest temp folder's absolute path may be wider than 80 columns
    out = memplug(
        ["eval", "--agent", "bm25", "--dataset", "conversations", "--data", data, "--output", "runs", "--no-cache"],
        folder,
    )
    (path,) = (folder / "runs").iterdir()
    return path, out


@pytest.fixture
def run(evaluated: tuple[Path, subprocess.CompletedProcess[str]]) -> Path:
    return evaluated[0]


def test_eval_shows_the_data_as_text(evaluated):
    _, out = evaluated
    assert out.returncode == 0, out.stderr
    assert "MarkupError" not in out.stderr and "Traceback" not in out.stderr
    assert_clean(out.stdout + out.stderr)
    assert_intact(out.stdout, 80)
    assert SHOWN_CONTROL in out.stdout  # written out, in its table cell


def test_report_shows_the_data_as_text_in_the_terminal(run):
    out = memplug(["report", run], run.parent, columns=80)
    assert out.returncode == 0, out.stderr
    assert_clean(out.stdout + out.stderr)
    assert_intact(out.stdout, 80)
    wide = memplug(["report", run], run.parent, columns=300)
    assert wide.returncode == 0, wide.stderr
    assert_intact(wide.stdout, 300)
    assert_clean(wide.stdout)
    # the markup as it was written, not a red "RED"; the line break of a category written out
    assert MARKUP in wide.stdout and r"\u202eoverride" in wide.stdout and r"new\nline" in wide.stdout
    assert re.search(r"│ \[/\] +│", wide.stdout) and RTL in wide.stdout


def unescaped(char: str, line: str) -> int:
    """How many times ``char`` is not escaped by a backslash in ``line`` (CommonMark, LaTeX)."""
    return len(re.findall(rf"(?<!\\)(?:\\\\)*{re.escape(char)}", line))


def test_markdown_rows_stay_rows(run):
    out = memplug(["report", run, "--format", "markdown"], run.parent)
    assert out.returncode == 0, out.stderr
    assert_clean(out.stdout)
    tables = [block.splitlines() for block in out.stdout.split("\n\n") if block.startswith("|")]
    assert len(tables) >= 4  # one per metric
    columns = 2 + len(CATEGORIES)  # metric, overall, the categories
    for table in tables:
        assert len(table) == 3  # header, rule, the one run: no line break inside a row
        assert all(unescaped("|", line) == columns + 1 for line in table), table
    assert r"a\|b" in out.stdout and r"\<script>" in out.stdout and r"new\\nline" in out.stdout
    # and a markdown renderer agrees: a header cell per category, the text as text
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(out.stdout)
    first = html[html.index("<table>") : html.index("</table>")]
    assert len(re.findall(r"<th[ >]", first)) == columns and "<script>" not in html
    assert "a|b" in first and r"\x1b]0;pwned" in first and "[bold red]RED[/bold red]" in first


def test_latex_rows_stay_rows(run):
    out = memplug(["report", run, "--format", "latex"], run.parent)
    assert out.returncode == 0, out.stderr
    assert_clean(out.stdout)
    for table in re.findall(r"\\toprule\n(.*?)\n\\bottomrule", out.stdout, re.S):
        rows = [line for line in table.splitlines() if line != r"\midrule"]
        assert len(rows) == 2 and all(unescaped("&", row) == 1 + len(CATEGORIES) for row in rows), rows
        assert not any(row.startswith("[") for row in rows)  # after \\ it would be read as a length
    assert r"\$\textbackslash{}notamacro\{\$" in out.stdout  # one escape, not an escaped escape
    assert r"new\textbackslash{}nline" in out.stdout


def test_csv_holds_the_categories_written_out(run):
    out = memplug(["report", run, "--format", "csv"], run.parent)
    assert out.returncode == 0, out.stderr
    assert_clean(out.stdout)
    rows = [r for r in csv.reader(io.StringIO(out.stdout)) if not r[0].startswith("#")]
    assert all(len(r) == 9 for r in rows)
    assert {r[2] for r in rows[1:]} == {"overall", *(visible(c) for c in CATEGORIES)}


def test_html_report_escapes_and_draws_the_data_as_text(run):
    page = run.parent / "page.html"
    out = memplug(["report", run, "--html", page], run.parent)
    assert out.returncode == 0, out.stderr  # "$\notamacro{$" in a chart is not TeX
    html = page.read_text(encoding="utf-8")
    assert_clean(html)
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert MARKUP in html and SHOWN_CONTROL in html and RTL in html


def test_a_category_named_closing_tag_runs_and_reports(tmp_path):
    data = tmp_path / "tag.jsonl"
    data.write_text(
        json.dumps(
            {
                "sessions": [{"turns": [{"speaker": "A", "text": "Ana went to Lisbon."}]}],
                "qa": [{"question": "Where did Ana go?", "answers": ["Lisbon"], "category": "[/]"}],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    out = memplug(
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "conversations",
            "--data",
            data,
            "--output",
            tmp_path / "runs",
            "--no-cache",
        ],
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert re.search(r"│ \[/\] +│", out.stdout)
    (path,) = (tmp_path / "runs").iterdir()
    report = memplug(["report", path], tmp_path)
    assert report.returncode == 0, report.stderr
    assert re.search(r"│ \[/\] +│", report.stdout)


@pytest.mark.parametrize(
    "text, shown",
    [
        ("\x1b[2J", r"\x1b[2J"),
        ("a\nb\tc\rd", r"a\nb\tc\rd"),
        ("\x00\x7f\x9b", r"\x00\x7f\x9b"),
        ("\u202eevil\u2066x\u2069", r"\u202eevil\u2066x\u2069"),
        ("line\u2028sep", r"line\u2028sep"),
        (RTL + " \u200f", RTL + " \u200f"),  # right-to-left letters and the RLM mark are text
        ("[bold]x[/bold] é 日本", "[bold]x[/bold] é 日本"),
    ],
)
def test_visible_writes_out_control_characters(text, shown):
    assert visible(text) == shown
    assert visible(shown) == shown  # a second call changes nothing


def test_visible_keeps_layout_where_asked():
    assert visible("a\nb\tc\rd\x1b", layout=True) == "a\nb\tc\\rd\\x1b"


def test_markdown_cell():
    assert markdown("a|b") == r"a\|b"
    assert markdown("a\\|b") == r"a\\\|b"  # a backslash in the text does not un-escape the pipe
    assert markdown("x\ny <b>") == r"x\\ny \<b>"
    assert markdown("judge[longmemeval] session_hit@5") == "judge[longmemeval] session_hit@5"


def test_the_console_prints_strings_as_text():
    buffer = io.StringIO()
    console = TextConsole(file=buffer, width=60, color_system=None)
    console.print("[/] [bold]x[/bold] :warning: \x1b[2J")
    assert buffer.getvalue() == "[/] [bold]x[/bold] :warning: \\x1b[2J\n"


def test_error_lines_write_out_control_characters():
    assert one_line("bad value 'x\x1b]0;pwned\x07'\nin line 3") == r"bad value 'x\x1b]0;pwned\x07' in line 3"


def test_the_progress_bar_shows_a_wait_reason_as_text(monkeypatch):
    from memplug import display
    from memplug.api import progress_bar
    from memplug.llm import retry

    buffer = io.StringIO()
    monkeypatch.setattr(display, "console", lambda stderr=False: TextConsole(file=buffer, width=120, color_system=None))
    monkeypatch.setattr(retry, "_WAIT_LISTENERS", [])
    bar, start = progress_bar()
    start(3, 0)
    retry.tell_waiting("HTTP 429 [/] \x1b]0;pwned\x07")
    bar.console.print(bar.get_renderable())
    assert r"waiting: HTTP 429 [/] \x1b]0;pwned\x07" in buffer.getvalue()


@pytest.mark.parametrize("width", [80, 100])
def test_a_long_wait_reason_leaves_the_bars_columns_whole(monkeypatch, width):
    """At 80 columns a connection error's reason squeezed the bar to "questio… e…" and was
    itself cut before its cause; the reason now gets what the row has left (memplug.log
    holds it whole)."""
    from memplug import display
    from memplug.api import progress_bar
    from memplug.llm import retry

    buffer = io.StringIO()
    monkeypatch.setattr(
        display, "console", lambda stderr=False: TextConsole(file=buffer, width=width, color_system=None)
    )
    monkeypatch.setattr(retry, "_WAIT_LISTENERS", [])
    bar, start = progress_bar()
    start(199, 25)
    retry.tell_waiting("chat completion attempt 1 failed (InternalServerError: litellm.InternalServerError: " * 2)
    bar.console.print(bar.get_renderable())
    (row,) = [line for line in buffer.getvalue().splitlines() if line.strip()]
    assert row.startswith("questions ") and " 25/199 " in row and " eta " in row, row
    assert len(row.rstrip()) <= width and ("waiting: chat completion" in row if width > 80 else "memplug.log" in row)


class Hostile:
    """A plugin whose names, description and error hold markup and control characters."""

    @hookimpl
    def register_agents(self, register):
        register("evil", "memplug_nowhere_display:Agent", description=f"says {HOSTILE}")
        register("[/]evil\x1b[2J", "memplug_nowhere_display:Agent")  # not a valid name: a broken plugin


def test_list_shows_what_plugins_say_as_text(plugins):
    plugins.register(Hostile(), dist="[red]dist[/red]\x1b]0;x\x07")
    out = CliRunner().invoke(cli, ["list", "--kind", "agents"], env={"COLUMNS": "300"})
    assert out.exit_code == 0, out.output
    assert_clean(out.output)
    assert f"says {MARKUP} {SHOWN_CONTROL}" in out.output and "broken: " in out.output
    assert r"[red]dist[/red]\x1b]0;x\x07" in out.output and r"[/]evil\x1b[2J" in out.output


def test_wrap_breaks_at_spaces_outside_short_brackets_and_hangs_the_rest():
    line = "  memory: extraction 0.889 [0.87, 0.91] (n 1280), retrieval 1.000 [1.00, 1.00] (n 1138)"
    for width in range(20, 90):
        lines = wrap(line, width, hang=4)
        assert " ".join(part.strip() for part in lines) == line.strip()
        assert all(len(part) <= width for part in lines), (width, lines)
        assert all(part.startswith("      ") and not part.startswith("       ") for part in lines[1:])
        for group in ("[0.87, 0.91]", "(n 1280)", "[1.00, 1.00]", "(n 1138)"):
            assert any(group in part for part in lines), (width, group, lines)


def test_wrap_breaks_a_long_or_unclosed_bracket_like_text():
    quoted = "answer: (this parenthesis holds a whole sentence of prose and never closes"
    assert len(wrap(quoted, 30)) > 2 and all(len(part) <= 30 for part in wrap(quoted, 30))
    assert wrap("x" * 50, 20) == ["x" * 50]  # a word longer than a line stays whole
    assert wrap("", 80) == [""]
