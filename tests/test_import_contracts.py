"""The import contracts in pyproject.toml (checked by `lint-imports` in .ci/lint) cover all of
core: a module added to core/ and missing from "core never imports adapters or datasets"
would be free to import them."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_the_forbidden_contract_lists_every_module_and_package_of_core():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    forbidden = next(c for c in contracts if c["type"] == "forbidden")
    assert forbidden["forbidden_modules"] == ["memplug.adapters", "memplug.datasets"]
    core = ROOT / "core"
    modules = {f"memplug.{p.stem}" for p in core.glob("*.py") if p.name != "__init__.py"}
    packages = {f"memplug.{p.name}" for p in core.iterdir() if (p / "__init__.py").is_file()}
    assert set(forbidden["source_modules"]) == modules | packages
