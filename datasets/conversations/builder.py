"""`conversations`: bring your own conversations (the JSON-lines layout of :mod:`.layout`).

Any memory benchmark whose data are dated sessions of turns and questions with answers,
evidence turns and categories runs without a plugin: ``memplug eval --dataset
conversations --data FILE.jsonl``; ``memplug generate --dataset conversations --data FILE
--out X --check`` lists every problem of the file with its line number.
docs/datasets/conversations.md documents the layout.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from memplug.datasets.checks import CheckReport
from memplug.datasets.conversations.layout import load, read_file
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

#: memplug's prompt (no benchmark stands behind this dataset): the memory, the question's date, the question
PROMPT = (
    "Answer the question using only the memory below. Reply with the answer only; if the memory does not "
    "say, reply: Not mentioned in the conversation.\n\nMemory:\n{memory}\n\nCurrent date: {time}\n"
    "Question: {question}\nAnswer:"
)


class ConversationsBuilder:
    """Your own dated multi-session conversations with questions, answers, evidence turns and categories."""

    info = DatasetInfo(
        name="conversations",
        version="1",
        description="bring your own conversations: JSON lines of dated sessions of turns with questions, "
        "answers, evidence turn ids and categories (docs/datasets/conversations.md)",
        language="auto",
        capabilities=frozenset({"AR", "LRU"}),
        default_chunk_size=512,
        metrics=("subem", "f1", "em", "abstention", "recall@K", "session_hit@K"),
        answer_prompt=PROMPT,
        answer_prompt_source="memplug default for the conversations dataset (no official protocol)",
    )

    options = (
        Option("dates", bool, True, "start each turn's text with its session's date"),
        Option("judge", str, "memplug", "judge for --judge: 'memplug', 'longmemeval', 'locomo-j' or a plugin's"),
    )

    def _data(self, data: Path | None) -> Path:
        if data is None:
            raise MemplugError(
                "dataset 'conversations' reads your file: pass --data FILE.jsonl "
                "(layout: docs/datasets/conversations.md)"
            )
        if data.is_dir():
            raise MemplugError(f"--data {data}: expected a .jsonl file of conversations, not a directory")
        return data

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'conversations'")
        from memplug.judge import judge_set

        judge_set(values["judge"])  # an unknown judge fails here, before any question
        for sample in load(self._data(options.data), dates=values["dates"]):
            yield _with_judge(sample, values["judge"])

    def check_data(self, data: Path, values: dict[str, Any]) -> CheckReport:
        """Every problem of the file, each with its line number (``memplug generate --check``)."""
        samples, reader = read_file(self._data(data), dates=values.get("dates", True))
        return CheckReport(
            ok=not reader.problems,
            problems=reader.problems + reader.warnings,
            stats=_stats(samples) | {"n_problems": len(reader.problems), "n_warnings": len(reader.warnings)},
        )

    def check(self, samples: list[Sample]) -> CheckReport:
        """The loaded samples' counts (their problems were found while reading)."""
        return CheckReport(ok=True, problems=[], stats=_stats(samples))


def _with_judge(sample: Sample, judge: str) -> Sample:
    import attrs

    return attrs.evolve(
        sample,
        questions=[attrs.evolve(q, meta={**q.meta, "judge": q.meta.get("judge", judge)}) for q in sample.questions],
    )


def _stats(samples: list[Sample]) -> dict[str, Any]:
    questions = [q for s in samples for q in s.questions]
    return {
        "samples": len(samples),
        "sessions": sum(s.meta.get("sessions", 0) for s in samples),
        "turns": sum(len(s.messages) for s in samples),
        "questions": len(questions),
        "with_evidence": sum(bool(q.targets) for q in questions),
        "abstention": sum(bool(q.meta.get("abstention")) for q in questions),
        "categories": dict(sorted(Counter(q.category for q in questions).items())),
    }
