"""What a package index shows of memplug, and what `.ci/wheel-smoke` tests it on, agree:
the SPDX licence and its files, the Python versions (requires-python, the classifiers and
the smoke's list), the version `memplug --version` prints, the changelog. (The built
wheel's METADATA is checked by `.ci/wheel-smoke`: an editable install's can be stale.)"""

from __future__ import annotations

import re
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from inprocess import memplug_main

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def pyproject() -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return data


def smoke_pythons() -> list[str]:
    found: list[str] = re.findall(r'^PYTHONS="([\d. ]+)"$', (ROOT / ".ci" / "wheel-smoke").read_text(), re.M)
    (line,) = found
    return line.split()


def test_version_is_the_installed_distributions():
    import memplug

    out = memplug_main(["--version"])
    assert out.returncode == 0 and out.stdout == f"memplug, version {version('memplug')}\n"
    assert memplug.__version__ == version("memplug") == pyproject()["project"]["version"]


def test_licence_is_an_spdx_expression_with_its_files():
    project = pyproject()["project"]
    assert project["license"] == "MIT"
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n") and "the memplug authors" in licence
    assert all((ROOT / f).is_file() for f in project["license-files"])
    # setuptools reads the SPDX string and license-files from 77 on (PEP 639)
    assert "setuptools>=77" in pyproject()["build-system"]["requires"]


def test_python_versions_agree_with_what_ci_installs_the_wheel_on():
    project = pyproject()["project"]
    tested = smoke_pythons()
    classified = [
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert classified == tested
    assert project["requires-python"] == f">={tested[0]}"
    assert "Typing :: Typed" in project["classifiers"] and (ROOT / "core" / "py.typed").is_file()


def test_the_changelog_has_an_unreleased_section_first():
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert headings[0] == "[Unreleased]"
