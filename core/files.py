"""Reading data files: UTF-8 text and JSON, with errors that name the file and the place.

Every loader reads release files through these, so a bad encoding or broken JSON gives
the same one-line error (file, line and column, problem) whichever dataset it is.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import reprlib
from pathlib import Path
from typing import Any

from memplug.errors import DataError

#: byte-order marks of the encodings JSON must not come in (RFC 8259 §8.1: UTF-8 only);
#: UTF-32 first, as its little-endian mark starts with UTF-16's
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
_SHORT = reprlib.Repr()  # keyword arguments to Repr() need Python 3.12
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlist = _SHORT.maxdict = 6
#: repr() for values quoted in error messages: a 50 MB field must not become a 50 MB line
short = _SHORT.repr


def read_text(path: Path) -> str:
    """The text of a UTF-8 data file; any other encoding is a DataError naming where it breaks.

    A UTF-8 byte-order mark (Windows editors write one) is dropped.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DataError(path, f"cannot read ({exc.strerror or exc})") from None
    return decode_utf8(data, path)


def decode_utf8(data: bytes, path: Path | str, line: int = 1) -> str:
    """``data`` (which starts at ``line`` of ``path``) as text, or a DataError with line and column."""
    if line == 1:
        for bom, name in _WIDE_BOMS:
            if data.startswith(bom):
                raise DataError(
                    path,
                    f"{name} text (it starts with a {name} byte-order mark); "
                    "memplug reads UTF-8: save the file as UTF-8",
                    "byte 0",
                )
    try:
        return data.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        row = line + data.count(b"\n", 0, exc.start)
        where = f"line {row} column {exc.start - start + 1}"
        raise DataError(path, f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8", where) from None


#: what a JSON document nested past Python's recursion limit is, in every loader's words
TOO_DEEP = "JSON nested too deeply (more than ~1000 levels of [ or {); no dataset layout is that deep"


class BadNumber(ValueError):
    """A number in a data file that has no value as a number: NaN, Infinity, one that
    overflows a float (1e999), an integer longer than Python reads (4,300 digits).
    Python's json takes the first three (an answer then scored as "nan" or "inf") and
    fails on the last with a bare ValueError (a traceback in the loaders). ``place`` is
    where it stands ("line L column C") when it can be found."""

    def __init__(self, problem: str, literal: str, place: str | None = None) -> None:
        super().__init__(problem)
        self.problem, self.literal, self.place = problem, literal, place


def _no_constant(name: str) -> Any:
    raise BadNumber(f"{name} is not a number (JSON has no NaN or Infinity)", name)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadNumber(f"the number {short(text)} is out of range (a float reaches about 1.8e308)", text)
    return value


def _place(text: str, literal: str) -> str | None:
    """Line and column of the first ``literal`` standing as a JSON value in ``text``: after
    [ , or : (the same letters inside a string are not taken for it)."""
    found = re.search(r"[\[,:]\s*(" + literal + r")(?![\w.+-])", text)
    if found is None:
        return None
    start = found.start(1)
    return f"line {text.count(chr(10), 0, start) + 1} column {start - text.rfind(chr(10), 0, start)}"


def loads(text: str) -> Any:
    """JSON text as Python values, refusing numbers without a value (:class:`BadNumber`,
    a ValueError); json.JSONDecodeError and RecursionError as json.loads raises them."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except BadNumber as exc:
        exc.place = _place(text, re.escape(exc.literal))
        raise
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # the C scanner's int(): more digits than sys.get_int_max_str_digits()
        if "digits" not in str(exc):
            raise
        raise BadNumber(
            "an integer of more than 4,300 digits (no dataset holds one: a damaged file?)",
            "",
            _place(text, r"-?\d{4300,}"),
        ) from None


def json_problem(exc: json.JSONDecodeError) -> str:
    """ "invalid JSON at line L column C: Unterminated string": json's message ends in
    " at" or " starting at" because :class:`json.JSONDecodeError` appends the place to it;
    quoted without that place, "(Unterminated string starting at)" read as cut off."""
    reason = re.sub(r"(?: starting)? at$", "", exc.msg)
    return f"invalid JSON at line {exc.lineno} column {exc.colno}: {reason}"


def read_json(path: Path) -> Any:
    """A UTF-8 JSON file, or a DataError naming the line and column where it breaks (a
    number without a value included: :class:`BadNumber`)."""
    try:
        return loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(path, json_problem(exc)) from None
    except BadNumber as exc:
        raise DataError(path, exc.problem, exc.place) from None
    except RecursionError:
        raise DataError(path, TOO_DEEP) from None
