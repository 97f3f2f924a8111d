"""src/memplug, the links through which type checkers see the package (.ci/typecheck)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def typecheck(tmp_path, monkeypatch):
    """.ci/typecheck as a module, pointed at a repository made in tmp_path."""
    loader = importlib.machinery.SourceFileLoader("memplug_typecheck", str(ROOT / ".ci" / "typecheck"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    for folder in ("core/cli", "adapters", "datasets"):
        (tmp_path / folder).mkdir(parents=True)
    for name in ("core/__init__.py", "core/runner.py", "core/cli/__init__.py", "core/judge.json"):
        (tmp_path / name).write_text("")
    (tmp_path / "core" / "notes").mkdir()  # a folder that is not a package
    monkeypatch.setattr(module, "ROOT", tmp_path.resolve())
    monkeypatch.setattr(module, "TREE", tmp_path / "src" / "memplug")
    monkeypatch.setattr(module, "FOLDERS", {"adapters": tmp_path / "adapters", "datasets": tmp_path / "datasets"})
    return module


def links(tree: Path) -> dict[str, str]:
    return {p.name: os.readlink(p) for p in tree.iterdir() if p.is_symlink()}


def test_sync_links_modules_and_packages_of_core_and_the_two_folders(typecheck, tmp_path):
    tree = tmp_path / "src" / "memplug"
    changed = typecheck.sync()
    assert links(tree) == {
        "__init__.py": "../../core/__init__.py",
        "runner.py": "../../core/runner.py",
        "cli": "../../core/cli",
        "adapters": "../../adapters",
        "datasets": "../../datasets",
    }
    assert len(changed) == 5 and all("(commit it)" in c for c in changed)
    assert (tree / "cli" / "__init__.py").is_file()
    assert typecheck.sync() == []  # nothing to do a second time


def test_a_new_module_is_linked_and_a_gone_one_unlinked(typecheck, tmp_path):
    typecheck.sync()
    (tmp_path / "core" / "sweep.py").write_text("")
    (tmp_path / "core" / "runner.py").unlink()
    assert sorted(typecheck.sync()) == [
        "linked src/memplug/sweep.py -> ../../core/sweep.py (commit it)",
        "removed src/memplug/runner.py",
    ]
    assert "sweep.py" in links(tmp_path / "src" / "memplug")


def test_errors_are_printed_at_the_real_files(typecheck, tmp_path):
    typecheck.sync()
    assert typecheck.real_path("src/memplug/runner.py:3: error: x  [misc]") == "core/runner.py:3: error: x  [misc]"
    assert typecheck.real_path("src/memplug/adapters/bm25.py:9: note: y") == f"adapters{os.sep}bm25.py:9: note: y"
    assert typecheck.real_path("Found 1 error in 1 file") == "Found 1 error in 1 file"


def test_the_committed_links_all_lead_somewhere():
    tree = ROOT / "src" / "memplug"
    dangling = [p.name for p in tree.iterdir() if p.is_symlink() and not p.exists()]
    assert not dangling, f"links to modules that are gone: {dangling} (python .ci/typecheck removes them)"
    assert (tree / "adapters").resolve() == ROOT / "adapters" and (tree / "datasets").resolve() == ROOT / "datasets"


def test_tests_are_checked_and_integration_in_a_run_of_its_own(typecheck, tmp_path):
    """tests/ with --check-untyped-defs; tests/integration apart, with itself on MYPYPATH
    (its conftest.py and tests/conftest.py would be one module `conftest` in one run)."""
    folder = tmp_path / "tests" / "integration"
    folder.mkdir(parents=True)
    for name in ("conftest.py", "test_x.py", "notes.txt"):
        (folder / name).write_text("")
    flags = ["--check-untyped-defs", "--explicit-package-bases"]
    assert typecheck.runs() == [
        ("the package memplug", [], ""),
        ("tests/", [*flags, "tests"], ""),
        (
            "tests/integration",
            [*flags, "tests/integration/conftest.py", "tests/integration/test_x.py"],
            "tests/integration",
        ),
    ]
