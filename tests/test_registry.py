"""Plugin discovery through entry points, duplicates, typos and broken plugins."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from plugin_dists import write_dist
from memplug import hookimpl
from memplug.errors import MemplugError
from memplug.plugins import Plugins


def memplug_json(env: dict, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "memplug.cli", "list", "--json", *args], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_builtins_register_through_entry_points(plugins):
    agents = plugins.registry("agents")
    assert {"full", "recent", "embedding", "bm25", "none", "noisy", "oracle", "decay", "emg",
            "mem0", "letta", "cognee", "llamaindex"} <= set(agents.names())
    assert agents.get("bm25").plugin == "memplug"
    assert {"memsim", "memdaily", "factcon", "perltqa"} <= set(plugins.registry("datasets").names())
    assert {"extractive", "llm"} <= set(plugins.registry("readers").names())


def test_entry_points_from_an_installed_distribution(testkit_env):
    listed = memplug_json(testkit_env)
    lookup = next(a for a in listed["agents"] if a["name"] == "lookup")
    assert lookup["plugin"] == "memplug-testkit" and lookup["version"] == "0.0.1"
    assert [o["name"] for o in lookup["options"]] == ["delay", "fail_question", "fail_sample", "answer", "wrong"]
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
    env = {**testkit_env, "MEMPLUG_LOAD_PLUGINS": "memplug-testkit,memplug-broken",
           "PYTHONPATH": testkit_env["PYTHONPATH"] + ":" + str(site)}
    listed = memplug_json(env)
    assert any(b["plugin"].startswith("memplug-broken") and "memplug_does_not_exist_xyz" in b["error"]
               for b in listed["broken"])
    assert "lookup" in {a["name"] for a in listed["agents"]}


class Duplicate:
    @hookimpl
    def register_agents(self, register):
        register("bm25", "somewhere:Else")


def test_duplicate_name_is_reported_not_fatal(plugins):
    plugins.register(Duplicate(), dist="memplug-dup")
    agents = plugins.registry("agents")
    assert agents.get("bm25").plugin == "memplug"
    assert any("registered twice" in b.error and b.plugin == "memplug-dup" for b in plugins.broken)


def test_typo_suggests_the_closest_name(plugins):
    with pytest.raises(MemplugError, match='did you mean "embedding"'):
        plugins.registry("agents").get("embeding")


class BadTarget:
    @hookimpl
    def register_datasets(self, register):
        register("fine", "memplug_hello_nowhere:Fine")
        register("bad-target", "no_colon_here")


def test_bad_target_and_missing_module(plugins):
    plugins.register(BadTarget(), dist="memplug-bad")
    datasets = plugins.registry("datasets")
    assert any("must be 'module:attr'" in b.error for b in plugins.broken)
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
