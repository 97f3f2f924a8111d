"""`memplug list`: what is installed: datasets, agents, metrics, readers, broken plugins."""

from __future__ import annotations

import json

import click

from memplug.plugins import KINDS, get_plugins


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--kind", type=click.Choice(KINDS), help="Show only one kind.")
def list_command(as_json: bool, kind: str | None) -> None:
    """List installed datasets, agents, metrics and readers with their options.

    Agents whose optional extra is missing are shown with the install command.
    Plugins that failed to load are listed with their error.
    """
    plugins = get_plugins()
    kinds = [kind] if kind else list(KINDS)
    items = {k: [e.describe() for e in plugins.registry(k)] for k in kinds}
    broken = [{"plugin": b.plugin, "version": b.version, "error": b.error} for b in plugins.broken]
    if as_json:
        click.echo(json.dumps({**items, "broken": broken}, indent=2, ensure_ascii=False))
        return
    from rich.console import Console

    from rich.markup import escape

    from memplug.cli.tables import table as make_table

    console = Console()
    for k in kinds:
        # two columns, not five: a name whole on the left, and beside it its status and plugin,
        # description and options as lines that wrap at spaces (at 80 columns five columns broke
        # names and options in the middle of a word)
        table = make_table(k.capitalize(), "name", "status · plugin, description, options (type=default)")
        for item in items[k]:
            # text from plugins is escaped: "pip install 'memplug[mem0]'" is not a rich style tag
            if item.get("error"):
                status = f"[red]broken: {escape(item['error'])}[/red]"
            elif not item["available"]:
                status = f"[yellow]needs: {escape(str(item['install']))}[/yellow]"
            else:
                status = "[green]ok[/green]"
            options = ", ".join(f"{o['name']}:{o['type']}={o['default']}" for o in item.get("options", []))
            plugin = f"{item['plugin']} {item['version'] or ''}".strip()
            lines = [f"{status} · {escape(plugin)}", escape(item["description"])]
            if options:
                lines.append(f"[dim]options:[/dim] {escape(options)}")
            table.add_row(f"[bold]{escape(item['name'])}[/bold]", "\n".join(lines))
        console.print(table)
    if broken:
        console.print("[red]Plugin problems (failed to load, or a name registered twice):[/red]")
        for b in broken:
            console.print(f"  {b['plugin']}: {b['error']}", markup=False, soft_wrap=False)
