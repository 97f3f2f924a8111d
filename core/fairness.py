"""What makes two runs' numbers not comparable as they stand, for `memplug report` to say.

Two systems compared side by side should differ in the system only. The settings that
most often differ without anyone noticing, and move scores the most, are the items each
system handed the reader (K, ``--top-k``), the tokens of context it was allowed
(``--context-tokens``), who wrote the answers (the reader and its model), who scored them
(the judge: name, model and prompts' sha256), the answer protocol (prompt, parser,
memory unit) and the questions asked (how many, of which categories). :func:`differences` names each of those that differs among runs on the
same dataset; the report prints them as one warning line, and never refuses: a study of
K is a fine thing to report, as long as nobody takes it for a comparison of systems.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from memplug import compare
from memplug.record import RunInfo
from memplug.results import RunDir


def _top_k(run: RunInfo) -> str:
    return str(run.recorded_top_k or "?")


def _budget(run: RunInfo) -> str:
    budget = run.context_tokens
    return "none" if budget is None else f"{budget} tokens"


def _reader(run: RunInfo) -> str:
    reader = str(run.reader or "?")
    model = run.llm
    return f"{reader} ({model})" if model and reader != "extractive" else reader


@functools.lru_cache(maxsize=64)
def _asked(path: Path, stamp: float) -> tuple[int, str]:
    """How many questions the run holds records of, and their categories (``stamp``: the
    records' mtime, so a run resumed since is read again)."""
    records = RunDir(path).records()
    keys = {(r.sample_id, r.question_id) for r in records}
    return len(keys), "/".join(sorted({str(r.category) for r in records}))


def _questions(path: Path) -> tuple[int, str]:
    """Runs on one dataset averaged over other questions: other categories (``-o
    categories=1,2,3,4``; a mean over LoCoMo's 1-4 was ranked above one over 1-5, whose
    adversarial zeros it left out), another ``--limit``, a run interrupted."""
    samples = RunDir(path).samples
    return _asked(path, samples.stat().st_mtime if samples.exists() else 0.0)


#: the settings compared, each with how a run's value reads from run.json (or its path)
SETTINGS: tuple[tuple[str, Callable[[Path, RunInfo], str]], ...] = (
    ("K", lambda path, run: _top_k(run)),
    ("context budget", lambda path, run: _budget(run)),
    ("reader", lambda path, run: _reader(run)),
    ("judge", lambda path, run: compare.judge_text(j) if (j := compare.judge_identity(path)) else "none"),
    ("protocol", lambda path, run: compare.protocol_label(path)),
    ("questions", lambda path, run: str(_questions(path)[0])),
    ("categories", lambda path, run: _questions(path)[1]),
)


def differences(paths: list[Path]) -> list[str]:
    """One text per dataset whose runs differ in one of :data:`SETTINGS`, e.g. ``"on locomo:
    K (#1 5, #2 30); context budget (#1 none, #2 2000 tokens)"`` (runs numbered as the report
    numbers them); empty when the runs of each dataset share every setting."""
    runs = [RunDir(p).info() for p in paths]
    by_dataset: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        by_dataset.setdefault(str(run.dataset), []).append(i)
    out = []
    for dataset, members in by_dataset.items():
        if len(members) < 2:
            continue
        differ = []
        for name, read in SETTINGS:
            values = {i: read(paths[i], runs[i]) for i in members}
            if len(set(values.values())) > 1:
                differ.append(f"{name} ({', '.join(f'#{i + 1} {v}' for i, v in values.items())})")
        if differ:
            out.append(f"on {dataset}: {'; '.join(differ)}")
    return out
