"""Gates for pipelines: stop a run that fails too often, fail a run that scores too low.

``--max-errors N`` (or ``P%`` of the questions the run asks) stops a run once that many
questions have failed: a run where the endpoint half works would otherwise spend hours
and money on questions whose errors are never scored, and end as ``partial`` with a
score over the few that got through. The run ends ``failed`` (exit 1), its outcome's
``stopped`` saying why in one line, and stays resumable.

``--fail-under METRIC=VALUE`` (repeatable; ``METRIC[CATEGORY]=VALUE`` for a category)
compares a finished run's means with thresholds, so that a CI job of a memory product
fails when a change costs accuracy. Its exit code, :data:`EXIT_BELOW`, is distinct from
a run that broke (1) or was misconfigured (2): a pipeline can tell "worse" from "broken".
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from memplug.errors import MemplugError
from memplug.record import QuestionRecord, RunSummary
from memplug.results import RecordWriter

#: `memplug eval` exits with this code when a --fail-under threshold is not met (and every
#: question was answered: a run with failed questions exits 1 first)
EXIT_BELOW = 3

_COUNT = re.compile(r"(\d+)(%?)")
_THRESHOLD = re.compile(r"(?P<metric>[^\s=\[\]]+)(?:\[(?P<category>[^\]]+)\])?=(?P<value>[^=]+)")


def parse_max_errors(text: str | None) -> tuple[int, bool] | None:
    """``"5"`` -> (5, False); ``"10%"`` -> (10, True); None -> None. MemplugError (exit 2)
    for anything else: a count from 1, or a percentage from 1 to 100."""
    if text is None:
        return None
    found = _COUNT.fullmatch(text.strip())
    if not found:
        raise MemplugError(f"--max-errors {text!r}: expected a number of questions (5) or a percentage (10%)")
    value, percent = int(found.group(1)), bool(found.group(2))
    if value < 1 or (percent and value > 100):
        raise MemplugError(f"--max-errors {text!r}: expected a count from 1 or a percentage from 1% to 100%")
    return value, percent


def error_limit(text: str | None, n_expected: int) -> int | None:
    """The number of failed questions that stops a run of ``n_expected`` questions: N, or
    P% of them rounded up (at least 1); None without --max-errors."""
    parsed = parse_max_errors(text)
    if parsed is None:
        return None
    value, percent = parsed
    return max(1, math.ceil(value * n_expected / 100)) if percent else value


class TooManyErrors(MemplugError):
    """Raised by :class:`GatedWriter` when the run's failed questions reach --max-errors:
    the runner stops the run and records it as ``failed`` (not a configuration failure:
    the command exits 1, not 2)."""


class GatedWriter(RecordWriter):
    """A :class:`memplug.results.RecordWriter` that counts the failed questions it writes
    and raises :class:`TooManyErrors` once they reach ``limit``, after writing the record
    that reached it (so that the record is on file and its sample redone on resume).

    Counting where records are written, rather than where questions are asked, puts the
    gate under every executor: the local one and Ray's both write through it."""

    def __init__(self, path: Path, limit: int, option: str) -> None:
        super().__init__(path)
        self.limit, self.option = limit, option
        self.failed = 0

    def write(self, record: QuestionRecord) -> None:
        super().write(record)
        if record.error is not None and not self._closed:
            self.failed += 1
            if self.failed == self.limit:
                # "once": the questions in flight then still end, and may fail too (5 of 18 in all)
                raise TooManyErrors(f"stopped once {self.failed} questions had failed (--max-errors {self.option})")


def writer(path: Path, max_errors: str | None, n_expected: int) -> RecordWriter:
    """The run's record writer: gated when --max-errors is given, else a plain one."""
    limit = error_limit(max_errors, n_expected)
    if limit is None:
        return RecordWriter(path)
    return GatedWriter(path, limit, str(max_errors))


@attrs.frozen
class Threshold:
    """One --fail-under: the overall mean of ``metric`` (or its mean on ``category``) must be
    at least ``value``."""

    metric: str
    value: float
    category: str | None = None

    @classmethod
    def parse(cls, text: str) -> Threshold:
        """``judge=0.6``, ``f1[multi-hop]=0.4``; MemplugError (exit 2) for anything else."""
        found = _THRESHOLD.fullmatch(text.strip())
        try:
            value = float(found.group("value")) if found else math.nan
        except ValueError:
            value = math.nan
        if found is None or not math.isfinite(value):
            raise MemplugError(
                f"--fail-under {text!r}: expected METRIC=VALUE or METRIC[CATEGORY]=VALUE, "
                "e.g. accuracy=0.7 or f1[multi-hop]=0.4"
            )
        return cls(found.group("metric"), value, found.group("category"))

    @property
    def label(self) -> str:
        return f"{self.metric}[{self.category}]" if self.category else self.metric

    def check(self, summary: RunSummary) -> str | None:
        """None when met; else one line saying what scored what. A mean that is absent
        (no question of it was scored) does not meet the threshold: a gate that passes on
        nothing measured is no gate."""
        means = summary.metrics.overall if self.category is None else summary.metrics.by_category.get(self.category, {})
        score = means.get(self.metric)
        if score is None:
            return f"{self.label}: no score (nothing scored), below {self.value:g}"
        if score < self.value:
            return f"{self.label} = {score:.4f}, below {self.value:g}"
        return None


def thresholds(given: Iterable[str]) -> list[Threshold]:
    """Every --fail-under, parsed (MemplugError, exit 2, on the first malformed one)."""
    return [Threshold.parse(text) for text in given]


def check_names(found: Sequence[Threshold], metrics: Iterable[str], categories: Iterable[str] | None) -> None:
    """Before the run: each threshold names a metric the run scores and a category its
    questions have, so that a typo is one line now (exit 2), not a failed gate after hours.
    ``categories`` None: not known yet (a sweep's dry run loads no data), not checked."""
    from memplug.errors import did_you_mean

    metrics = list(metrics)
    for t in found:
        if t.metric not in metrics:
            raise MemplugError(
                f"--fail-under {t.label}: the run scores no metric {t.metric!r}"
                f"{did_you_mean(t.metric, metrics)} (it scores {', '.join(metrics)})"
            )
        if categories is not None and t.category is not None and t.category not in (categories := list(categories)):
            raise MemplugError(
                f"--fail-under {t.label}: the questions have no category {t.category!r}"
                f"{did_you_mean(t.category, categories)}"
            )


def below(found: Sequence[Threshold], summary: RunSummary) -> list[str]:
    """The thresholds ``summary`` does not meet, one line each."""
    return [line for t in found if (line := t.check(summary)) is not None]
