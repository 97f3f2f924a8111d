"""What a builder's validator returns to ``memplug generate --check``, for every dataset family."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.define
class CheckReport:
    """Result of a check: ``ok`` is False when there is any problem; ``stats`` are printed as they are."""

    ok: bool
    problems: list[str]
    stats: dict[str, Any]
