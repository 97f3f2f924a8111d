"""What a builder's validator returns to ``memplug generate --check``, for every dataset family:
:class:`memplug.models.CheckReport`, named here too for the dataset modules and plugins that import
it from here."""

from __future__ import annotations

from memplug.models import CheckReport

__all__ = ["CheckReport"]
