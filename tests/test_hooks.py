"""One test per hook (the meta-test below keeps it that way), plus the docs meta-test."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import click
from click.testing import CliRunner

from memplug import hookimpl, hookspecs
from memplug.runner import Evaluation, RunSpec

ROOT = Path(__file__).resolve().parents[1]


class Observer:
    def __init__(self):
        self.events = []

    @hookimpl
    def memplug_run_start(self, run):
        self.events.append(("start", run.run_id))

    @hookimpl
    def memplug_sample_end(self, run, sample, records):
        self.events.append(("sample", sample.id, len(records)))

    @hookimpl
    def memplug_run_end(self, run, summary):
        self.events.append(("end", summary.n_questions))


def _observed(plugins, tmp_path):
    observer = Observer()
    plugins.register(observer, dist="observer")
    Evaluation(RunSpec(agent="lookup", dataset="counting", dataset_options={"samples": "2"})).run(output=tmp_path)
    return observer.events


def test_register_datasets(testkit, plugins):
    assert plugins.registry("datasets").get("counting").plugin == "memplug-testkit"


def test_register_agents(testkit, plugins):
    assert plugins.registry("agents").get("lookup").load() is testkit.LookupAgent


def test_register_metrics(plugins):
    class Plugin:
        @hookimpl
        def register_metrics(self, register):
            register("length", "builtins:len")

    plugins.register(Plugin(), dist="metric-plugin")
    assert plugins.registry("metrics").get("length").load() is len


def test_register_readers(plugins):
    class Plugin:
        @hookimpl
        def register_readers(self, register):
            register("upper", "builtins:str.upper")

    plugins.register(Plugin(), dist="reader-plugin")
    assert plugins.registry("readers").get("upper").load() is str.upper


def test_register_commands(plugins):
    class Plugin:
        @hookimpl
        def register_commands(self, cli):
            @cli.command("hello-cmd")
            def hello_cmd():
                click.echo("hi from a plugin")

    plugins.register(Plugin(), dist="command-plugin")
    from memplug.cli import MemplugGroup, cli

    cli._plugins_loaded = False
    try:
        result = CliRunner().invoke(cli, ["hello-cmd"])
        assert result.output.strip() == "hi from a plugin"
    finally:
        cli.commands.pop("hello-cmd", None)
        cli._plugins_loaded = False
        assert isinstance(cli, MemplugGroup)


def test_memplug_run_start(testkit, plugins, tmp_path):
    assert _observed(plugins, tmp_path)[0][0] == "start"


def test_memplug_sample_end(testkit, plugins, tmp_path):
    samples = [e for e in _observed(plugins, tmp_path) if e[0] == "sample"]
    assert sorted(samples) == [("sample", "s0", 3), ("sample", "s1", 3)]


def test_memplug_run_end(testkit, plugins, tmp_path):
    assert _observed(plugins, tmp_path)[-1] == ("end", 6)


def test_memplug_check_embedder(plugins):
    class Embedders:
        @hookimpl
        def memplug_check_embedder(self, name, llm):
            return True if name == "st:tiny" else None

    plugins.register(Embedders(), dist="embedders")
    from memplug import preflight
    from memplug.errors import MemplugError

    preflight.check_embedder("st:tiny", None)  # known to a plugin: checked by it
    assert plugins.hook.memplug_check_embedder(name="litellm:x", llm=None) is None
    try:
        preflight.check_embedder("nope", None)
    except MemplugError as exc:
        assert "unknown embedder 'nope'" in str(exc)
    else:
        raise AssertionError("an unknown embedder passed")


def test_memplug_report_table(plugins, tmp_path):
    class Tables:
        @hookimpl
        def memplug_report_table(self, paths, fmt):
            return f"{len(paths)} runs as {fmt}\n" if fmt == "markdown" else None

    plugins.register(Tables(), dist="tables")
    assert plugins.hook.memplug_report_table(paths=[tmp_path], fmt="markdown") == "1 runs as markdown\n"
    assert plugins.hook.memplug_report_table(paths=[tmp_path], fmt="latex") is None


def test_every_hook_is_documented_and_tested():
    hooks = [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(fn, "memplug_spec")]
    assert len(hooks) == 12
    docs = (ROOT / "docs" / "hooks.md").read_text()
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    for hook in hooks:
        assert re.search(rf"^## `{hook}\(", docs, re.M), f"{hook} is not documented in docs/hooks.md"
        assert f"def test_{hook}(" in tests, f"{hook} has no test named after it"
