"""Plugin discovery through entry points, duplicates, typos and broken plugins.

The commands run in process through the console script's entry (tests/inprocess.py), which
finds entry points on the PYTHONPATH given, as a process would; the first entry-point test
runs `python -m memplug.cli` in a process of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from inprocess import memplug_main
from plugin_dists import write_dist
from memplug import hookimpl
from memplug.errors import MemplugError
from memplug.plugins import Plugins


def memplug_json(env: dict[str, str], *args: str, real: bool = False) -> dict[str, Any]:
    """`memplug list --json ARGS`: in process, or with ``real`` in a process of its own."""
    if real:
        out = subprocess.run(
            [sys.executable, "-m", "memplug.cli", "list", "--json", *args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    else:
        out = memplug_main(["list", "--json", *args], env=env)
        assert out.returncode == 0, out.stderr
    listed: dict[str, Any] = json.loads(out.stdout)
    return listed


def test_builtins_register_through_entry_points(plugins):
    agents = plugins.registry("agents")
    assert {
        "full",
        "recent",
        "embedding",
        "bm25",
        "none",
        "noisy",
        "oracle",
        "decay",
        "emg",
        "mem0",
        "letta",
        "cognee",
        "llamaindex",
        "graphiti",
        "mcp",
        "hybrid",
    } <= set(agents.names())
    assert agents.get("bm25").plugin == "memplug"
    assert {"memsim", "memdaily", "factcon", "perltqa"} <= set(plugins.registry("datasets").names())
    assert {"extractive", "llm"} <= set(plugins.registry("readers").names())


def test_entry_points_from_an_installed_distribution(testkit_env):
    listed = memplug_json(testkit_env, real=True)
    lookup = next(a for a in listed["agents"] if a["name"] == "lookup")
    assert lookup["plugin"] == "memplug-testkit" and lookup["version"] == "0.0.1"
    assert [o["name"] for o in lookup["options"]] == [
        "delay",
        "fail_question",
        "fail_sample",
        "answer",
        "wrong",
        "die_once",
        "hang",
        "hang_setup",
        "inline",
    ]
    counting = next(d for d in listed["datasets"] if d["name"] == "counting")
    assert counting["dataset_version"] == "1"


def test_load_plugins_restricts_third_party(testkit_env):
    env = {**testkit_env, "MEMPLUG_LOAD_PLUGINS": ""}
    listed = memplug_json(env)
    assert "lookup" not in {a["name"] for a in listed["agents"]}
    assert "bm25" in {a["name"] for a in listed["agents"]}  # memplug's own always load


def test_broken_plugin_is_listed_and_others_work(testkit_env, tmp_path):
    site = tmp_path / "broken-site"
    write_dist(site, "memplug-broken", "9.9", {"broken": "memplug_does_not_exist_xyz"})
    env = {
        **testkit_env,
        "MEMPLUG_LOAD_PLUGINS": "memplug-testkit,memplug-broken",
        "PYTHONPATH": testkit_env["PYTHONPATH"] + ":" + str(site),
    }
    listed = memplug_json(env)
    assert any(
        b["plugin"].startswith("memplug-broken") and "memplug_does_not_exist_xyz" in b["error"]
        for b in listed["broken"]
    )
    assert "lookup" in {a["name"] for a in listed["agents"]}


class Duplicate:
    @hookimpl
    def register_agents(self, register):
        register("bm25", "somewhere:Else")


def test_duplicate_name_is_reported_not_fatal(plugins):
    plugins.register(Duplicate(), dist="memplug-dup")
    agents = plugins.registry("agents")
    assert agents.get("bm25").plugin == "memplug"
    assert any(
        "registered by both memplug" in b.error and b.plugin == "memplug-dup" and b.stage == "clash"
        for b in plugins.broken
    )


def test_typo_suggests_the_closest_name(plugins):
    with pytest.raises(MemplugError, match='did you mean "embedding"'):
        plugins.registry("agents").get("embeding")


class BadTarget:
    @hookimpl
    def register_datasets(self, register):
        register("fine", "memplug_hello_nowhere:Fine")
        register("bad-target", "no_colon_here")
        register("after", "memplug_hello_nowhere:After")


def test_bad_target_and_missing_module(plugins):
    plugins.register(BadTarget(), dist="memplug-bad")
    datasets = plugins.registry("datasets")
    assert any("must be 'module:attr'" in b.error for b in plugins.broken)
    assert "after" in datasets  # a bad entry is left out on its own, not with what follows it
    with pytest.raises(MemplugError, match="failed to import"):
        datasets.get("fine").load()


def test_missing_extra_gives_the_install_command():
    p = Plugins(load_entry_points=False)

    class Heavy:
        @hookimpl
        def register_agents(self, register):
            register("heavy", "heavy_mod:Agent", requires=("module_that_is_not_installed_abc",), extra="heavy")

    p.register(Heavy(), dist="x")
    entry = p.registry("agents").get("heavy")
    assert entry.describe()["install"] == "pip install 'memplug[heavy]'"
    with pytest.raises(MemplugError, match=r"pip install 'memplug\[heavy\]'"):
        entry.load()


# --- plugins that cannot break the house ------------------------------------------------


def test_a_dotted_requirement_whose_parent_is_missing_is_missing_not_a_crash():
    from memplug.plugins import Entry

    entry = Entry(
        "agents",
        "x",
        "m:X",
        "p",
        None,
        {"requires": ("nonexistent_pkg_xyz.core", "nonexistent_pkg_xyz.a.b", "json", "os.path")},
    )
    assert entry.missing == ["nonexistent_pkg_xyz.core", "nonexistent_pkg_xyz.a.b"]
    assert entry.describe()["available"] is False
    with pytest.raises(MemplugError, match=r"needs nonexistent_pkg_xyz\.core"):
        entry.load()


class ClashAndMore:
    @hookimpl
    def register_agents(self, register):
        register("bm25", "somewhere:Else")  # a built-in's name, first in its list
        register("mine", "somewhere:Mine")


def test_a_clash_keeps_the_builtin_and_the_plugins_other_names(plugins):
    plugins.register(ClashAndMore(), dist="memplug-clash")
    agents = plugins.registry("agents")
    assert agents.get("bm25").plugin == "memplug" and agents.get("mine").plugin == "memplug-clash"
    assert "embedding" in agents  # no built-in lost
    [clash] = [b for b in plugins.broken if b.stage == "clash"]
    assert clash.plugin == "memplug-clash"
    assert "agent 'bm25' is registered by both memplug" in clash.error and "memplug-clash's is ignored" in clash.error
    with pytest.raises(MemplugError, match="unknown agent 'nope'") as raised:
        agents.get("nope")
    assert "failed to load" not in str(raised.value)  # a clash lost one name, the plugin loaded


def test_a_builtin_wins_even_when_the_plugin_registered_first(monkeypatch):
    from memplug.plugins import Entry, Registry

    registry = Registry("agents")
    assert registry.add(Entry("agents", "bm25", "elsewhere:X", "memplug-early", "1.0", {})) is None
    clash = registry.add(Entry("agents", "bm25", "memplug.adapters.bm25:BM25Agent", "memplug", "0.1.0", {}))
    assert clash is not None
    assert registry.get("bm25").plugin == "memplug" and clash.dropped.plugin == "memplug-early"
    assert "memplug 0.1.0's is used, memplug-early 1.0's is ignored" in str(clash)

    # the same through the plugin manager: the plugin registers before memplug's own load
    monkeypatch.setenv("MEMPLUG_LOAD_PLUGINS", "")
    p = Plugins(load_entry_points=False)
    p.register(ClashAndMore(), dist="memplug-clash", version="2.0")
    p._load_entry_points()
    agents = p.registry("agents")
    assert agents.get("bm25").plugin == "memplug" and agents.get("mine").plugin == "memplug-clash"
    assert [b.plugin for b in p.broken if b.stage == "clash"] == ["memplug-clash"]  # not memplug


class RaisesHalfway:
    @hookimpl
    def register_agents(self, register):
        register("early", "somewhere:Early")
        raise RuntimeError("config file missing")


def test_a_hook_that_raises_keeps_what_it_registered_and_is_named_for_unknown_names(plugins):
    plugins.register(RaisesHalfway(), dist="memplug-halfway", version="0.2")
    agents = plugins.registry("agents")
    assert "early" in agents and "bm25" in agents
    with pytest.raises(MemplugError) as raised:
        agents.get("late")
    message = str(raised.value)
    assert message.startswith("unknown agent 'late'") and "\n" not in message
    assert (
        "1 installed plugin(s) failed to load: memplug-halfway 0.2: register_agents: RuntimeError: config file missing"
    ) in message
    with pytest.raises(MemplugError, match="is not available: it is installed by memplug-halfway 0.2"):
        agents.get("halfway")  # the distribution's name contains it
    with pytest.raises(MemplugError) as raised:
        plugins.registry("datasets").get("late")
    assert "failed to load" not in str(raised.value)  # its datasets hook did not fail


def test_bad_hooks_make_a_broken_plugin_and_every_command_still_works(testkit_env, tmp_path):
    site = tmp_path / "bad-hooks"
    (site / "memplug_badhooks").mkdir(parents=True)
    (site / "memplug_badhooks" / "__init__.py").write_text(
        "from memplug import hookimpl\n@hookimpl\ndef register_agents(register, extra_arg):\n    pass\n"
    )
    (site / "memplug_misspelt.py").write_text(
        "from memplug import hookimpl\n@hookimpl\ndef register_agent(register):\n    register('ghost', 'x:Y')\n"
    )
    write_dist(site, "memplug-badhooks", "1.0", {"badhooks": "memplug_badhooks"})
    write_dist(site, "memplug-misspelt", "2.0", {"misspelt": "memplug_misspelt"})
    env = {
        **testkit_env,
        "MEMPLUG_LOAD_PLUGINS": "memplug-testkit,memplug-badhooks,memplug-misspelt",
        "PYTHONPATH": testkit_env["PYTHONPATH"] + ":" + str(site),
    }
    listed = memplug_json(env)
    errors = {b["plugin"].split()[0]: b["error"] for b in listed["broken"]}
    assert "extra_arg" in errors["memplug-badhooks"]
    assert "'register_agent' is not a memplug hook" in errors["memplug-misspelt"]
    assert {"lookup", "bm25"} <= {a["name"] for a in listed["agents"]}


def test_an_agent_of_a_plugin_that_failed_to_load_says_so(testkit_env, tmp_path):
    site = tmp_path / "broken-site"
    write_dist(site, "memplug-hindsight", "0.3", {"hindsight": "memplug_hindsight_missing_module"})
    env = {
        **testkit_env,
        "MEMPLUG_LOAD_PLUGINS": "memplug-hindsight",
        "PYTHONPATH": testkit_env["PYTHONPATH"] + ":" + str(site),
    }
    result = memplug_main(["eval", "--agent", "hindsight", "--dataset", "memsim"], env=env, cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert (
        "agent 'hindsight' is not available: it is installed by memplug-hindsight 0.3 but failed to load: "
        "ModuleNotFoundError: No module named 'memplug_hindsight_missing_module'"
    ) in result.stderr


def test_an_unknown_agent_names_the_plugins_that_failed_to_load(testkit_env, tmp_path):
    site = tmp_path / "broken-site"
    (site / "memplug_vendor_raises.py").parent.mkdir(parents=True)
    (site / "memplug_vendor_raises.py").write_text("raise ImportError('needs vendorlib>=2\\n(found 1.4)')\n")
    write_dist(site, "acme-memory-tools", "1.2", {"acme": "memplug_vendor_raises"})
    write_dist(site, "memplug-zep", "0.1", {"zepmem": "memplug_zep_missing_module"})
    env = {
        **testkit_env,
        "MEMPLUG_LOAD_PLUGINS": "acme-memory-tools,memplug-zep",
        "PYTHONPATH": testkit_env["PYTHONPATH"] + ":" + str(site),
    }

    def eval_agent(name: str) -> subprocess.CompletedProcess[str]:
        return memplug_main(["eval", "--agent", name, "--dataset", "memsim"], env=env, cwd=tmp_path)

    result = eval_agent("hindsight")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "unknown agent 'hindsight'" in result.stderr
    assert "; 2 installed plugin(s) failed to load: " in result.stderr and "(see `memplug list`)" in result.stderr
    assert "acme-memory-tools 1.2: ImportError: needs vendorlib>=2 (found 1.4)" in result.stderr
    assert "memplug-zep 0.1: ModuleNotFoundError: No module named 'memplug_zep_missing_module'" in result.stderr
    result = eval_agent("acme")  # the entry point's name
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert (
        "agent 'acme' is not available: it is installed by acme-memory-tools 1.2 but failed "
        "to load: ImportError: needs vendorlib>=2 (found 1.4)"
    ) in result.stderr
    result = eval_agent("zep")  # part of the distribution's name
    assert "agent 'zep' is not available: it is installed by memplug-zep 0.1 (entry point 'zepmem')" in result.stderr
