"""`memplug report --why RUN`: examples of each kind of miss, with what the system stored and recalled.

The terminal line "wrong: 41% not stored, 33% not recalled, 26% misread" says where a
run loses its answers; this shows the questions behind each share, so a reader can see
whether the rule put them in the right place and what to fix: the question, the gold
answer and the answer given, the evidence messages, what the system stored (the items
holding the evidence, or the nearest one when none does) and what it recalled, the
items holding the evidence marked ``*``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from memplug import diagnosis
from memplug.diagnosis import Diagnosis
from memplug.errors import MemplugError
from memplug.record import QuestionRecord
from memplug.results import RunDir
from memplug.text import clip

#: recalled items shown per example, and characters of each shown text
RECALLED_SHOWN = 5
TEXT_CHARS = 240


def _clip(text: str, limit: int = TEXT_CHARS) -> str:
    """``text`` on one line (its whitespace squeezed), cut to ``limit`` characters."""
    return clip(" ".join(str(text).split()), limit)


def _ids(ids: Sequence[Any]) -> str:
    return f"[{', '.join(str(i) for i in ids)}] " if ids else ""


def diagnosed(path: Path) -> tuple[list[QuestionRecord], bool]:
    """The run's records with diagnoses, and whether they were diagnosed now: a run from
    before diagnoses is diagnosed from its stored.jsonl and recalled items (as
    ``rescore --diagnose`` does), in the language its text is written in."""
    from memplug.rescoring import rediagnosed

    run = RunDir(path).check()
    records = run.records()
    if any(r.diagnosis is not None for r in records):
        return records, False
    metrics = run.info().metrics or list(run.summary().metrics.overall)
    return rediagnosed(run, records, metrics, "auto", anew=True), True


def example_lines(record: QuestionRecord, d: Diagnosis) -> list[str]:
    """One example: the question, answers, evidence, stored and recalled items, as lines."""
    lines = [
        f"{record.sample_id} / {record.question_id} ({record.category}): {d.metric} {d.score:g}",
        f"  question: {_clip(record.question)}",
        f"  gold: {_clip(' | '.join(record.gold)) or '-'}   answer: {_clip(record.prediction or '-')}",
    ]
    if record.correct_choice and record.choices:
        lines[-1] += f"   (choice {record.correct_choice}: {_clip(record.choices.get(record.correct_choice, ''))})"
    if d.evidence:
        lines += [f"  evidence: {_ids([e['id']])}{_clip(e['text'])}" for e in d.evidence]
    elif record.targets:
        lines.append(f"  evidence: {_ids(record.targets)}(texts not kept by this run)")
    else:
        lines.append("  evidence: none named (the rule looks for the gold answer)")
    if d.n_stored is None:
        lines.append("  stored: not listed by the agent")
    elif d.n_stored == 0:
        lines.append("  stored: nothing (the agent listed no item)")
    else:
        label = "stored, holding it" if d.stored else "stored, nearest" if d.stored_items else "stored"
        lines += [f"  {label}: {_ids(i.get('message_ids') or [])}{_clip(i.get('text', ''))}" for i in d.stored_items]
        lines.append(
            f"  ({d.n_stored} items stored in all)"
            if d.stored_items
            else f"  stored: nothing of {d.n_stored} items shares a word with the evidence"
        )
    evidence = diagnosis.Evidence.of(
        record.targets, [e["text"] for e in d.evidence], record.gold, record.question, "auto"
    )
    for n, item in enumerate(record.recalled[:RECALLED_SHOWN], 1):
        held, _ = evidence.held_by(diagnosis.Item.of(item.text, item.message_ids, "auto"))
        lines.append(f"  recalled {n}{'*' if held else ' '} {_ids(item.message_ids)}{_clip(item.text)}")
    if len(record.recalled) > RECALLED_SHOWN:
        lines.append(f"  … and {len(record.recalled) - RECALLED_SHOWN} more recalled")
    if not record.recalled:
        lines.append("  recalled: nothing" + (" (the agent answered itself)" if record.agent_answered else ""))
    if d.why and d.stage == "unknown":
        lines.append(f"  unknown because {d.why}")
    return lines


def why_lines(path: Path, category: str | None = None, n: int = 10) -> list[str]:
    """`report --why`: per kind of miss, its share and up to ``n`` examples (of ``category``)."""
    records, now = diagnosed(path)
    chosen = [r for r in records if r.diagnosis is not None and (category is None or r.category == category)]
    if category is not None and not chosen:
        known = sorted({r.category for r in records})
        raise MemplugError(f"{path}: no diagnosed question of category {category!r} (categories: {', '.join(known)})")
    wrong = [r for r in chosen if r.diagnosis is not None and r.diagnosis.stage != "correct"]
    tallied = diagnosis.tally(chosen)
    run_id = RunDir(path).info().run_id or Path(path).name
    where = f", category {category}" if category else ""
    lines = [
        f"{run_id}{where}: {len(chosen)} answers diagnosed"
        + (" now, from stored.jsonl and the recalled items (the run has no diagnoses)" if now else "")
    ]
    for line in (diagnosis.wrong_line(tallied), diagnosis.memory_line(tallied)) if tallied is not None else ():
        if line:
            lines.append(line)
    rules = ", ".join(f"{k} {v}" for k, v in (tallied or {}).get("rules", {}).items())
    if rules:
        lines.append(f"rules used (memplug.diagnosis; docs/diagnosis.md): {rules}")
    for stage in diagnosis.WRONG_STAGES:
        of_stage = [r for r in wrong if r.diagnosis is not None and r.diagnosis.stage == stage]
        if not of_stage:
            continue
        shown = min(n, len(of_stage))
        lines += [
            "",
            f"== {stage.replace('_', ' ')}: {len(of_stage)} of {len(wrong)} wrong"
            + (f" (first {shown})" if shown < len(of_stage) else ""),
        ]
        for record in of_stage[:shown]:
            assert record.diagnosis is not None
            lines += example_lines(record, record.diagnosis)
    if not wrong:
        lines.append("no wrong answer")
    return lines


def print_why(path: Path, category: str | None, n: int) -> None:
    """The lines of :func:`why_lines` on the text console (data shown as text, never markup)."""
    from memplug.display import console as text_console

    console = text_console()
    lines = why_lines(path, category, n)
    examples = lines.index("") if "" in lines else len(lines)
    for k, line in enumerate(lines):
        # wrapped to the terminal as report's lines are; an example's field ("  question: …")
        # folds under its own text, not at the left edge where the next field starts
        console.say(line, hang=4 if k >= examples else 2)
