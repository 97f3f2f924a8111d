"""The import contracts in pyproject.toml (checked by `lint-imports` in .ci/lint) cover all of
core: a module added to core/ and missing from "core never imports adapters or datasets"
would be free to import them."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from memplug import builtins

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


#: a "module:attr" target or a module's dotted name under memplug.datasets or memplug.adapters
_PLUGIN_TARGET = re.compile(r"memplug\.(datasets|adapters)(\.\w+)*(:[\w.]+)?")


def _register_hooks(module: ModuleType) -> list[Callable[..., None]]:
    """The module's hook implementations that take a ``register`` callback."""
    return [
        fn
        for name, fn in vars(module).items()
        if name.startswith("register_")
        and hasattr(fn, "memplug_impl")
        and "register" in inspect.signature(fn).parameters
    ]


def test_core_registers_no_target_of_a_dataset_or_an_agent():
    """A string target is an import the contracts cannot see: core/builtins.py registering
    "memplug.datasets.x:Y" would make core depend on a dataset again. What belongs to one
    benchmark is registered by memplug.datasets.plugin, an agent by memplug.adapters.plugin."""
    targets: list[str] = []
    hooks = _register_hooks(builtins)
    assert {fn.__name__ for fn in hooks} >= {"register_metrics", "register_readers", "register_judges"}
    for hook in hooks:
        hook(lambda name, target, **info: targets.append(target))
    assert targets and all(isinstance(t, str) and t.startswith("memplug.") for t in targets)
    assert [t for t in targets if _PLUGIN_TARGET.match(t)] == []


def test_no_module_of_core_names_a_dataset_or_an_agent_module_in_a_string():
    """Nor anywhere else in core: a string that is a module path or target under
    memplug.datasets or memplug.adapters (for importlib, a registry) is an import by other means."""
    found = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _PLUGIN_TARGET.fullmatch(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value}")
    assert found == []


def test_each_benchmarks_metrics_and_judges_are_registered_from_datasets(plugins):
    """The official scores and judges moved out of core keep their names (and `memplug list`
    its rows): the dataset package registers them, through the same entry point."""
    metrics, judges = plugins.registry("metrics"), plugins.registry("judges")
    for name in (
        "locomo_f1",
        "locomo_f1_no_adv",
        "abstention",
        "personamem_accuracy",
        "beam_tau",
        "beam_order_lexical",
        "eventqa_recall",
        "ruler_recall",
        "recsys_recall@1",
        "recsys_recall@5",
        "recsys_recall@10",
    ):
        assert metrics.get(name).target.startswith("memplug.datasets."), name
    for name in ("longmemeval", "locomo-j", "beam", "infbench-sum", "locomo-plus"):
        assert judges.get(name).target.startswith("memplug.datasets."), name
    assert judges.get("memplug").target == "memplug.judge:MEMPLUG"
