"""`memplug generate`: write a generator's samples to a JSON-lines file (and check them)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from memplug.errors import MemplugError
from memplug.options import parse_pairs, resolve
from memplug.protocols import BuildOptions, ChecksData, ChecksSamples, options_of
from memplug.results import write_lines_atomic
from memplug.serialize import dumps_sample


@click.command("generate")
@click.option("--dataset", required=True, help="Generator name (see `memplug list --kind datasets`).")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="Output .jsonl file, one sample per line (readable by `memplug eval --data`).",
)
@click.option("--n", type=click.IntRange(min=1), help="Number of samples (the generator's `n` option).")
@click.option("--seed", type=int, default=0, show_default=True, help="Same seed and options, same bytes.")
@click.option(
    "--data",
    type=click.Path(path_type=Path, exists=True),
    help="A release to load instead of generating (memdaily, factcon, perltqa, ...): written as "
    "JSON lines; --check validates it where the dataset has a validator (factcon, perltqa, "
    "conversations; memsim's generated data).",
)
@click.option("--check", is_flag=True, help="Validate the generated data; exit 1 on any problem.")
@click.option(
    "--llm",
    default=lambda: os.environ.get("MEMPLUG_LLM"),
    help="Let a litellm model rewrite wording (never answers), where the generator supports it.",
)
@click.option("--api-base", help="Base URL of an OpenAI-compatible endpoint for --llm.")
@click.option("-o", "pairs", multiple=True, metavar="KEY=VALUE", help="Generator option (repeatable).")
def generate_command(
    dataset: str,
    out: Path,
    n: int | None,
    seed: int,
    data: Path | None,
    check: bool,
    llm: str | None,
    api_base: str | None,
    pairs: tuple[str, ...],
) -> None:
    """Generate a dataset offline and write it as JSON lines.

    With --data, load a released dataset instead and write it the same way, which
    with --check validates the release.

    \b
    Examples:
      memplug generate --dataset memsim --n 300 --seed 7 --out ms.jsonl --check
      memplug generate --dataset factcon -o tokens=32000 --out fc.jsonl
      memplug generate --dataset factcon --out release.jsonl --check \\
          --data ../shared/data/factconsolidation
    """
    from memplug.plugins import get_plugins

    builder = get_plugins().registry("datasets").get(dataset).load()()
    checker = builder if isinstance(builder, ChecksSamples) else None
    if check and checker is None:  # before any work, and before --out is written
        raise MemplugError(f"dataset {dataset!r} has no validator (--check)")
    raw = parse_pairs(pairs)
    declared = options_of(builder)
    if n is not None:
        if "n" not in {o.name for o in declared}:
            raise MemplugError(f"dataset {dataset!r} has no option n; --n does not apply")
        raw["n"] = str(n)
    values = resolve(declared, raw, f"dataset {dataset!r}")
    if check and data is not None and isinstance(builder, ChecksData):
        # a file of the user's own: every problem with its line number, before anything is built
        first = builder.check_data(data, values)
        if not first.ok:
            click.echo(
                json.dumps(
                    {
                        "ok": False,
                        "problems": first.problems[:50],
                        "n_problems": len(first.problems),
                        "stats": first.stats,
                    },
                    indent=2,
                    ensure_ascii=False,
                    default=str,
                )
            )
            raise SystemExit(1)
    model = None
    if llm:
        from memplug.llm import LLM

        model = LLM(llm, api_base=api_base)
    samples = list(builder.build(BuildOptions(values=values, data=data, seed=seed, llm=model)))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_lines_atomic(out, map(dumps_sample, samples))
    except OSError as exc:
        raise MemplugError(f"--out {out}: cannot write ({exc.strerror})") from None
    n_questions = sum(len(s.questions) for s in samples)
    click.echo(f"wrote {len(samples)} samples, {n_questions} questions to {out}", err=True)
    if check:
        assert checker is not None  # refused above
        report = checker.check(samples)
        click.echo(
            json.dumps(
                {
                    "ok": report.ok,
                    "problems": report.problems[:20],
                    "n_problems": len(report.problems),
                    "stats": report.stats,
                },
                indent=2,
                ensure_ascii=False,
                default=str,
            )
        )
        if not report.ok:
            raise SystemExit(1)
