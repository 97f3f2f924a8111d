"""`memplug reproduce`: run a finished run again from its run.json and check its numbers."""

from __future__ import annotations

import json
from pathlib import Path

import click

from memplug.errors import one_line


@click.command("reproduce")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Folder that receives the new run directory.",
)
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    help="Where the run's --data is on this machine "
    "(default: the path in run.json); its files must have the sha256 run.json records.",
)
@click.option("--api-base", help="The endpoint, when run.json keeps it without its password.")
@click.option("--no-cache", is_flag=True, help="Ask the LLM again instead of reading its cached answers.")
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Largest difference of a metric mean still counted as the same.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def reproduce_command(
    run_dir: Path,
    output: Path,
    data: Path | None,
    api_base: str | None,
    no_cache: bool,
    tolerance: float,
    as_json: bool,
) -> None:
    """Run RUN_DIR again from its run.json and say whether every number matches.

    The spec, seed and options come from run.json; the files at --data must have the
    sha256 it recorded (else nothing runs, exit 2). Every metric mean, overall and per
    category, is compared with the original. Exit 0 when all match, 1 when any differs.

    \b
    Examples:
      memplug reproduce runs/20250101-120000-bm25-memsim
      memplug reproduce runs/20250101-120000-bm25-memdaily --data ~/data/memdaily
    """
    from memplug.cli.tables import table as make_table
    from memplug.display import console as text_console
    from memplug.reproduce import reproduce

    result = reproduce(
        run_dir, output, api_base=api_base, data=data, cache=False if no_cache else None, tolerance=tolerance
    )
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        table = make_table(
            "Original and reproduced metric means", "category", "metric", "original", "reproduced", "same"
        )
        for row in result.rows:
            shown = ["-" if v is None else f"{v:.6g}" for v in (row.original, row.reproduced)]
            table.add_row(row.category, row.metric, *shown, "yes" if row.same else "NO")
        text_console().print(table)
        for note in result.notes:
            click.echo(f"note: {one_line(note)}", err=True)
        differ = sum(not r.same for r in result.rows)
        verdict = "all metric means match" if result.matches else f"{differ} of {len(result.rows)} metric means differ"
        # each path on a line of its own: two run paths and the verdict overran 80 columns
        click.echo(f"{verdict}: {result.original}\nreproduced as {result.reproduced}")
    if not result.matches:
        raise SystemExit(1)
