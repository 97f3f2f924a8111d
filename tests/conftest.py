"""Shared fixtures: the real release files in ../shared/data and an isolated plugin manager."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data from the project root: fails under CI=true when missing, else skips."""
    data = SHARED / "data"
    if not data.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{data} is missing; CI must run with ../shared beside the checkout")
        pytest.skip(f"{data} not found")
    return data


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    seeds = SHARED / "seeds"
    if not seeds.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{seeds} is missing")
        pytest.skip(f"{seeds} not found")
    return seeds
