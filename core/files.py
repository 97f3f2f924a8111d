"""Reading data files: UTF-8 text and JSON, with errors that name the file and the place.

Every loader reads release files through these, so a bad encoding or broken JSON gives
the same one-line error (file, line and column, problem) whichever dataset it is.
"""

from __future__ import annotations

import codecs
import json
import reprlib
from pathlib import Path
from typing import Any

from memplug.errors import DataError

#: byte-order marks of the encodings JSON must not come in (RFC 8259 §8.1: UTF-8 only);
#: UTF-32 first, as its little-endian mark starts with UTF-16's
_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
              (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))
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
                raise DataError(path, f"{name} text (it starts with a {name} byte-order mark); "
                                      "memplug reads UTF-8: save the file as UTF-8", "byte 0")
    try:
        return data.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        row = line + data.count(b"\n", 0, exc.start)
        where = f"line {row} column {exc.start - start + 1}"
        raise DataError(path, f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8", where) from None


#: what a JSON document nested past Python's recursion limit is, in every loader's words
TOO_DEEP = "JSON nested too deeply (more than ~1000 levels of [ or {); no dataset layout is that deep"


def read_json(path: Path) -> Any:
    """A UTF-8 JSON file, or a DataError naming the line and column where it breaks."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(path, f"invalid JSON ({exc.msg})", f"line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise DataError(path, TOO_DEEP) from None
