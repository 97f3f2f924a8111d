"""`memplug rescore`: parse, call memplug.rescoring, print."""

from __future__ import annotations

import os
from pathlib import Path

import click

from memplug.display import visible
from memplug.rescoring import rescore_run


@click.command("rescore")
@click.argument("run", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--metrics",
    help="Comma-separated metrics to recompute (default: the run's own), "
    "e.g. em,f1,recall@5. Scores of other metrics are kept.",
)
@click.option(
    "--judge",
    help="litellm model for new judge verdicts (rescores every verdict; "
    "default: the run's judge when the judge metric is recomputed).",
)
@click.option(
    "--judge-prompt",
    default=lambda: os.environ.get("MEMPLUG_JUDGE_PROMPT") or None,
    help="Judge (prompts) for new verdicts, e.g. longmemeval, locomo-j, memplug (rescores every "
    "verdict; default: $MEMPLUG_JUDGE_PROMPT, else the run's).",
)
@click.option("--api-base", help="Base URL of an OpenAI-compatible endpoint for --judge (default: the run's).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the LLM response cache.")
@click.option(
    "--diagnose",
    is_flag=True,
    help="Diagnose every answer anew (the stage that lost its evidence: "
    "not stored, not recalled, misread) from stored.jsonl and the recalled items; for runs from before "
    "diagnoses. Without it, each recorded diagnosis is re-staged with the new scores.",
)
def rescore_command(
    run: Path,
    metrics: str | None,
    judge: str | None,
    judge_prompt: str | None,
    api_base: str | None,
    no_cache: bool,
    diagnose: bool,
) -> None:
    """Recompute metrics and judge verdicts of a finished run without re-running it.

    Writes summary.rescored-<stamp>.json and samples.rescored-<stamp>.jsonl next to the
    run's own files (which stay as they are) and rescore-<stamp>.json, which lists every
    number that changed. Prints the new summary's path.

    \b
    Examples:
      memplug rescore runs/RUN
      memplug rescore runs/RUN --metrics f1,rouge_l
      memplug rescore runs/RUN --judge openai/gpt-4o
      memplug rescore runs/RUN --judge openai/gpt-4o --judge-prompt memplug
      memplug rescore runs/OLD_RUN --diagnose
    """
    names = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    result = rescore_run(run, names, judge, api_base, cache=not no_cache, judge_prompt=judge_prompt, diagnose=diagnose)
    changes = result.changes
    if changes["identical"]:
        click.echo(f"rescored {changes['questions_rescored']} questions: summary unchanged", err=True)
    else:
        click.echo(f"rescored {changes['questions_rescored']} questions; changed:", err=True)
        for c in changes["changed_summary"]:
            # a key names one of the data's categories
            click.echo(visible(f"  {c['key']}: {c['before']} -> {c['after']}"), err=True)
    click.echo(str(result.summary_path))
