"""What a package index shows of memplug, and what `.ci/wheel-smoke` tests it on, agree:
the SPDX licence and its files, the Python versions (requires-python, the classifiers and
the smoke's list), the version `memplug --version` prints, the changelog. (The built
wheel's METADATA is checked by `.ci/wheel-smoke`: an editable install's can be stale.)"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
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


def test_the_wheel_builds_without_warnings_and_ships_the_nltk_data(tmp_path: Path) -> None:
    """setuptools warns of a data folder inside a package ("Package ... is absent from the
    `packages` configuration") when include_package_data picks it up; package_data alone
    ships FactConsolidation's punkt_tab model. Built from a copy: the tree stays clean."""
    source = tmp_path / "source"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in ("core", "adapters", "datasets"):
        shutil.copytree(ROOT / folder, source / folder, ignore=skip)
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    build = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation", "--no-index"]
    out = subprocess.run([*build, "-w", str(tmp_path), str(source)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "absent from the `packages` configuration" not in out.stdout + out.stderr
    (wheel,) = tmp_path.glob("memplug-*.whl")
    with zipfile.ZipFile(wheel) as shipped:
        names = set(shipped.namelist())
    punkt = "memplug/datasets/factcon/nltk_data/tokenizers/punkt_tab/english"
    assert {
        f"{punkt}/{f}" for f in ("abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt")
    } <= names
    assert "memplug/datasets/factcon/nltk_data/README.md" in names and "memplug/py.typed" in names
