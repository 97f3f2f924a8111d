"""Shared fixtures: the real release files in ../shared/data and an isolated plugin manager."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Iterator

import pytest
from plugin_dists import write_dist

if TYPE_CHECKING:
    from openai_stub import OpenAIStub

    from memplug.plugins import Plugins

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def _shared(name: str) -> Path:
    """../shared/<name> from the project root: fails under CI=true when missing, else skips."""
    folder = SHARED / name
    if not folder.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{folder} is missing; CI must run with ../shared beside the checkout")
        pytest.skip(f"{folder} not found")
    return folder


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's caches (LLM responses, token counts) in a folder of its own, never in
    the user's ~/.cache/memplug; subprocesses inherit it through the environment."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("MEMPLUG_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real release files in ../shared/data."""
    return _shared("data")


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    """The seed papers in ../shared/seeds."""
    return _shared("seeds")


TESTKIT = Path(__file__).resolve().parent / "testkit"
INTEGRATION = Path(__file__).resolve().parent / "integration"


def may_select_integration(markexpr: str) -> bool:
    """Whether ``-m MARKEXPR`` can select a test marked ``integration``, whatever its other marks."""
    if not markexpr.strip():
        return True
    try:
        from _pytest.mark.expression import Expression

        expression = Expression.compile(markexpr)
    except Exception:  # pytest's own API moved, or a bad expression pytest reports itself
        return True
    others = sorted(set(re.findall(r"[A-Za-z_]\w*", markexpr)) - {"and", "or", "not", "integration"})
    if len(others) > 8:
        return True
    for chosen in itertools.product((False, True), repeat=len(others)):
        marks = {"integration", *(name for name, on in zip(others, chosen) if on)}
        if expression.evaluate(lambda name, /, **kwargs: name in marks):
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The fast suite (`-m 'not integration'`, pyproject's addopts) does not import
    tests/integration: every test there is marked integration, and its modules import Mem0,
    LlamaIndex, the MCP SDK, letta-client and Ray (seconds per xdist worker) only to be
    deselected. `pytest -m integration` collects it as before."""
    if collection_path == INTEGRATION and not may_select_integration(config.option.markexpr):
        return True
    return None


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[Plugins]:
    """A fresh plugin manager for one test, with only memplug's own plugins loaded."""
    from memplug.plugins import Plugins, reset_plugins

    monkeypatch.setenv("MEMPLUG_LOAD_PLUGINS", "")
    fresh = Plugins()
    reset_plugins(fresh)
    yield fresh
    reset_plugins(None)


@pytest.fixture
def testkit(plugins: Plugins, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """Registers tests/testkit/memplug_testkit.py (dataset `counting`, agent `lookup`)."""
    import sys

    monkeypatch.syspath_prepend(str(TESTKIT))
    sys.modules.pop("memplug_testkit", None)
    import memplug_testkit

    memplug_testkit.LookupAgent.active = memplug_testkit.LookupAgent.peak = 0
    plugins.register(memplug_testkit, name="testkit", dist="memplug-testkit", version="0.0.1")
    yield memplug_testkit
    plugins.unregister(memplug_testkit)


@pytest.fixture
def testkit_env(tmp_path: Path) -> dict[str, str]:
    """Environment for subprocesses that find the testkit through a real entry point."""
    site = tmp_path / "site"
    write_dist(site, "memplug-testkit", "0.0.1", {"testkit": "memplug_testkit"})
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTKIT), str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["MEMPLUG_LOAD_PLUGINS"] = "memplug-testkit"
    env["COLUMNS"] = "200"
    return env


@pytest.fixture
def openai_stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    """A running loopback OpenAI-compatible server (tests/openai_stub.py), closed afterwards.

    Also adds the loopback address to NO_PROXY (the caches are the test's own already:
    see ``private_cache_dir``).
    """
    from openai_stub import OpenAIStub

    # loopback never goes through a proxy a CI machine may have configured
    no_proxy = ",".join(
        filter(None, [os.environ.get("no_proxy") or os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"])
    )
    monkeypatch.setenv("no_proxy", no_proxy)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    with OpenAIStub() as stub:
        yield stub
