"""Dataset timestamps as seconds, for agents whose memory depends on elapsed time.

Datasets write time in their own way: ISO 8601 (FactConsolidation, PerLTQA dates),
MemDaily's Chinese "2024年04月01日 周一 08:39", or plain epoch seconds. The decay agent
must take time from these, never from the wall clock, so an unknown format is None
(no elapsed time) rather than "now".
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

_ZH = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日(?:[^\d]*(\d{1,2})[:：](\d{2})(?:[:：](\d{2}))?)?")
_NUMERIC = re.compile(r"^-?\d+(\.\d+)?$")


def parse_time(text: str | None) -> float | None:
    """Seconds since the epoch (UTC for naive times), or None when not understood."""
    if not text:
        return None
    text = text.strip()
    if _NUMERIC.match(text):
        return float(text)
    match = _ZH.search(text) if "年" in text else None  # the expression needs a 年
    if match:
        y, mo, d, h, mi, s = (int(g) if g else 0 for g in match.groups())
        return datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc).timestamp()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        for fmt in ("%Y/%m/%d %H:%M", "%Y/%m/%d", "%d %B %Y", "%B %d, %Y"):
            try:
                parsed = datetime.strptime(text, fmt)
                break
            except ValueError:
                continue
        else:
            return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()
