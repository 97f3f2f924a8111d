"""Throw-away installed distributions for tests of entry-point discovery.

Kept out of conftest.py so test modules can import it by a name no other folder shares.
"""

from __future__ import annotations

from pathlib import Path


def write_dist(folder: Path, name: str, version: str, entry_points: dict[str, str]) -> None:
    """A minimal installed distribution (dist-info) declaring `memplug` entry points."""
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[memplug]\n{lines}\n")
