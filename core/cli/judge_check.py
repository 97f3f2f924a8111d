"""`memplug judge-check`: parse, call memplug.judge_checks, print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from memplug.errors import MemplugError
from memplug.judge_checks import check_leniency, check_run, judge_llms, merge_into_run
from memplug.results import RunDir


def print_leniency(result: dict[str, Any]) -> None:
    """A table per judge model, its name in the title: as a column of its own it left the
    other eight columns too little of 80, and "openai/gpt-4o-mini" was folded to a letter pair
    a line."""
    from memplug.cli.tables import table as make_table
    from memplug.display import console as text_console

    console = text_console()
    for model, check in result["judges"].items():
        table = make_table(
            f"Judge leniency of {model} (set v{result['set_version']}): share of answers accepted; "
            "a fair judge accepts the correct ones and none of the others",
            "benchmark",
            "judge",
            "n",
            "leniency",
            "vague",
            "hedged",
            "wrong",
            "correct",
        )
        for bench, c in check["benchmarks"].items():
            a = c["accepted"]
            table.add_row(
                bench,
                c["judge"],
                str(c["n"]),
                _fmt(c["leniency"]),
                _fmt(a.get("vague")),
                _fmt(a.get("hedged")),
                _fmt(a.get("wrong")),
                _fmt(a.get("correct")),
            )
        console.print(table)
        for bench, c in check["benchmarks"].items():
            if c.get("unreadable"):  # shares over the rest: 1.000 could rest on 1 answer of 16
                _say_unreadable(console, f"{model} on {bench}", c["unreadable"], c["n"])


def _say_unreadable(console: Any, who: str, n: int, of: int) -> None:
    """A judge's replies that held no verdict: left out of its figures, which is said (the
    table's n and shares are over the rest; before, only --json showed it)."""
    console.say(f"{who}: {n} of {of} replies held no readable verdict, left out of these figures; see memplug.log")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_check(result: dict[str, Any]) -> None:
    from memplug.cli.tables import table as make_table
    from memplug.display import console as text_console

    console = text_console()
    q = result["questions"]
    table = make_table(
        f"Judge vs exact scoring ({q['multiple_choice']} multiple-choice, {q['exact_answer']} "
        f"exact-answer questions; exact = accuracy / {result['exact_metric']})",
        "judge",
        "questions",
        "n",
        "agreement",
        "kappa",
        "judge yes / exact no",
        "judge no / exact yes",
    )
    for model, check in result["judges"].items():
        for i, (kind, c) in enumerate(check["vs_exact"].items()):
            t = c["table"] or {}
            table.add_row(
                model if i == 0 else "",
                kind,
                str(c["n"]),
                _fmt(c["agreement"]),
                _fmt(c["kappa"]),
                str(t.get("10", "-")),
                str(t.get("01", "-")),
                end_section=i == 2,
            )
    console.print(table)
    checked = q["multiple_choice"] + q["exact_answer"]
    for model, check in result["judges"].items():
        if check.get("unreadable"):
            _say_unreadable(console, model, check["unreadable"], checked)
    if result["between_judges"]:
        between = make_table("Between judges (all answered questions)", "judges", "n", "agreement", "kappa")
        for p in result["between_judges"]:
            between.add_row(" vs ".join(p["judges"]), str(p["n"]), _fmt(p["agreement"]), _fmt(p["kappa"]))
        console.print(between)


@click.command("judge-check")
@click.argument("run", type=click.Path(path_type=Path, file_okay=False), required=False)
@click.option(
    "--judge",
    "judges",
    multiple=True,
    required=True,
    help="litellm model to check (repeat for a second judge: adds their mutual agreement).",
)
@click.option(
    "--judge-prompt",
    help="Judge with this judge (memplug, longmemeval, locomo-j, a plugin's) instead of each question's dataset's.",
)
@click.option(
    "--leniency",
    is_flag=True,
    help="Also (without RUN: only) measure how often the judge accepts "
    "vague, hedged and wrong answers of memplug's shipped set.",
)
@click.option(
    "--benchmark",
    "benchmarks",
    multiple=True,
    help="Leniency set part to use (longmemeval, locomo, memplug; default all).",
)
@click.option(
    "--exact",
    type=click.Choice(["em", "subem"]),
    default="em",
    show_default=True,
    help="Exact scoring of non-multiple-choice questions.",
)
@click.option(
    "--max-answer-words",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Gold answers up to this many words (CJK: characters) count as exact answers.",
)
@click.option("--api-base", help="Base URL of an OpenAI-compatible endpoint (default: the run's).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the LLM response cache.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def judge_check_command(
    run: Path | None,
    judges: tuple[str, ...],
    judge_prompt: str | None,
    leniency: bool,
    benchmarks: tuple[str, ...],
    exact: str,
    max_answer_words: int,
    api_base: str | None,
    no_cache: bool,
    as_json: bool,
) -> None:
    """Check LLM judges against exact scoring on a run's objective questions, and their leniency.

    Reports agreement and Cohen's kappa per judge (overall, multiple-choice,
    exact-answer) and, with two judges, their mutual agreement. The result is also
    written to judge-check.json in the run directory. --leniency measures the share of
    vague, hedged and plausible-but-wrong answers each judge accepts.

    \b
    Examples:
      memplug judge-check runs/RUN --judge openai/gpt-4o-mini
      memplug judge-check runs/RUN --judge openai/gpt-4o --judge ollama/qwen2.5
      memplug judge-check --leniency --judge openai/gpt-4o-mini --benchmark locomo
    """
    if run is None and not leniency:
        raise MemplugError("judge-check needs a RUN directory, or --leniency")
    out: dict[str, Any] = {}
    # the leniency judges (on --api-base, not the run's) are checked now, not after the run's check
    lenient_llms = judge_llms(list(judges), api_base, not no_cache) if leniency and run is not None else None
    if run is not None:
        out = check_run(
            run, list(judges), exact, max_answer_words, api_base, cache=not no_cache, judge_prompt=judge_prompt
        )
    lenient = None
    if leniency:
        lenient = check_leniency(
            list(judges), list(benchmarks) or None, judge_prompt, api_base, cache=not no_cache, llms=lenient_llms
        )
        if run is not None:
            merge_into_run(RunDir(run).judge_check, {"leniency": lenient["judges"]})
    if as_json:
        click.echo(json.dumps({**out, **({"leniency": lenient} if lenient else {})}, indent=2, ensure_ascii=False))
        return
    if run is not None:
        print_check(out)
    if lenient:
        print_leniency(lenient)
