"""`memplug list`: what is installed: datasets, agents, metrics, readers, judges, official
exports, broken plugins."""

from __future__ import annotations

import json
from typing import Any

import click

from memplug.errors import MemplugError
from memplug.plugins import KINDS, Entry, get_plugins


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--kind", type=click.Choice(KINDS), help="Show only one kind.")
def list_command(as_json: bool, kind: str | None) -> None:
    """List installed datasets, agents, metrics, readers, judges and exports.

    Each with its options; agents whose optional extra is missing are shown with the
    install command.
    Judges (`eval --judge-prompt NAME`) are shown with their prompts and the first 12
    hex digits of their sha256 (run.json records it whole).
    Exports (`report --export DIR`) are named after their dataset.
    Plugins that failed to load are listed with their error.
    """
    plugins = get_plugins()
    kinds = [kind] if kind else list(KINDS)
    items = {k: [_described(k, e) for e in plugins.registry(k)] for k in kinds}
    broken = [{"plugin": b.plugin, "version": b.version, "error": b.error} for b in plugins.broken]
    if as_json:
        click.echo(json.dumps({**items, "broken": broken}, indent=2, ensure_ascii=False))
        return
    from rich.text import Text

    from memplug.cli.tables import table as make_table
    from memplug.display import console as text_console
    from memplug.display import styled

    console = text_console()  # what plugins say is text: "pip install 'memplug[mem0]'" is not a style tag
    for k in kinds:
        # two columns, not five: a name whole on the left, and beside it its status and plugin,
        # description and options as lines that wrap at spaces (at 80 columns five columns broke
        # names and options in the middle of a word)
        table = make_table(k.capitalize(), "name", "status · plugin, description, options (type=default)")
        for item in items[k]:
            if item.get("error"):
                status = styled(f"broken: {item['error']}", "red")
            elif not item["available"]:
                status = styled(f"needs: {item['install']}", "yellow")
            else:
                status = styled("ok", "green")
            options = ", ".join(f"{o['name']}:{o['type']}={o['default']}" for o in item.get("options", []))
            plugin = f"{item['plugin']} {item['version'] or ''}".strip()
            lines = [Text.assemble(status, " · ", styled(plugin)), styled(item["description"])]
            if options:
                lines.append(Text.assemble(styled("options:", "dim"), " ", styled(options)))
            if item.get("suffix"):
                lines.append(Text.assemble(styled("file:", "dim"), " ", styled(f"<run id>{item['suffix']}")))
            if item.get("sha256"):
                lines.append(
                    Text.assemble(
                        styled(f"v{item['judge_version']}"),
                        " · ",
                        styled("sha256", "dim"),
                        f" {item['sha256'][:12]} · ",
                        styled("prompts:", "dim"),
                        " ",
                        styled(", ".join(item["prompts"])),
                    )
                )
            table.add_row(styled(item["name"], "bold"), Text("\n").join(lines))
        console.print(table)
    if broken:
        console.print(styled("Plugin problems (failed to load, or a name registered twice):", "red"))
        for b in broken:
            console.print(f"  {b['plugin']}: {b['error']}", soft_wrap=False)


def _described(kind: str, entry: Entry) -> dict[str, Any]:
    """An entry's description, with what its kind adds: a judge's prompts, an export's
    file suffix (``DIR/<run id><suffix>``)."""
    if kind == "judges":
        return _with_judge(entry.describe(), entry)
    if kind == "exports":
        return {**entry.describe(), "suffix": entry.info.get("suffix")}
    return entry.describe()


def _with_judge(described: dict[str, Any], entry: Any) -> dict[str, Any]:
    """A judge's description with its version, prompts and sha256 (of its prompts and call
    parameters, as run.json's ``resolved.judge.prompt_sha256``)."""
    if described.get("error") or not described.get("available", True):
        return described
    try:
        judge = entry.load()
    except MemplugError as exc:
        return {**described, "available": False, "error": str(exc)}
    prompts = getattr(judge, "prompts", None)
    sha256 = getattr(judge, "sha256", None)
    if prompts is None or not isinstance(sha256, str):  # not a JudgeSet: `eval` would say so
        return {**described, "error": f"its target is a {type(judge).__name__}, not a memplug.judge.JudgeSet"}
    return {
        **described,
        "judge_version": getattr(judge, "version", None),
        "prompts": [p.name for p in prompts],
        "sha256": sha256,
    }
