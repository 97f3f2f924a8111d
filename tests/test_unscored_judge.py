"""A judge that cannot read its verdicts, an LLM reader, an unfinished run: said, not hidden.

A new user's `memplug eval ... --reader llm --llm local --judge local` printed "judge 1.000
(n=1)" with "errors 0": only memplug.log said that 4 of the 5 verdicts were unreadable, the
"wrong: ..." line was gone (the judge decided the diagnosis, and it had decided 1 question),
the header did not name the reader's model, and `report` of a run that answered nothing
printed an empty table.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from click.testing import CliRunner, Result

from memplug import diagnosis
from memplug.cli import cli
from memplug.judge import UNREADABLE, Judge
from memplug.models import Question
from memplug.protocols import ScoreContext
from memplug.record import Outcome, QuestionRecord, RunSummary
from memplug.results import RunDir, summarize
from test_judge import FakeJudgeLLM, judge_config

if TYPE_CHECKING:
    from openai_stub import OpenAIStub


def test_an_unreadable_verdict_is_noted_in_the_context() -> None:
    question = Question("q1", "What is Wang Wei's occupation?", ("cameraman",))
    ctx = ScoreContext(question, "a cameraman", ())
    judge = Judge(judge_config(FakeJudgeLLM("I would rather not say")))
    assert asyncio.run(judge.score(ctx)) is None
    assert ctx.unscored == {"judge": UNREADABLE}
    readable = ScoreContext(question, "a cameraman", ())
    assert asyncio.run(Judge(judge_config(FakeJudgeLLM('{"correct": true}'))).score(readable)) == 1.0
    assert readable.unscored == {}


def _record(qid: str, judge: float | None, accuracy: float, unscored: bool) -> QuestionRecord:
    return QuestionRecord(
        "s1",
        qid,
        "simple",
        "q?",
        prediction="x",
        scores={"accuracy": accuracy, "judge": judge},
        unscored={"judge": UNREADABLE} if unscored else None,
    )


def test_summary_counts_the_unscored_questions_and_keeps_them_through_json() -> None:
    records = [
        _record("q1", 1.0, 1.0, False),
        _record("q2", None, 0.0, True),
        _record("q3", None, 1.0, True),
        _record("q4", None, 0.0, False),  # not applicable (no gold): not a failure to score
    ]
    summary = summarize(records, "a", "d", "r", 1.0, resamples=10)
    assert summary.unscored == {"judge": {"n": 2, "of": 3, "reason": UNREADABLE}}
    assert summary.metrics.overall["judge"] == 1.0 and summary.n is not None and summary.n.overall["judge"] == 1
    again = RunSummary.from_json(json.loads(json.dumps(summary.to_json())), "summary.json")
    assert again.unscored == summary.unscored
    line = QuestionRecord.from_line(records[1].to_line())
    assert line.unscored == {"judge": UNREADABLE}
    assert summarize(records[:1], "a", "d", "r", 1.0, resamples=10).to_json().get("unscored") is None


def test_a_question_the_judge_left_unscored_is_decided_by_the_datasets_metric() -> None:
    metrics = ["accuracy", "recall@5", "judge"]
    assert diagnosis.deciding_metric(_record("q1", 0.0, 1.0, False), metrics) == "judge"
    assert diagnosis.deciding_metric(_record("q2", None, 1.0, True), metrics) == "accuracy"
    assert diagnosis.deciding_metric(_record("q3", None, 1.0, True), ["judge", "recall@5"]) == "judge"
    assert diagnosis.deciding_metric(_record("q4", None, 1.0, False), ["accuracy"]) == "accuracy"
    tallied = {"overall": {"correct": 1, "misread": 4}, "metric": "accuracy", "decided_by": {"accuracy": 4, "judge": 1}}
    assert diagnosis.wrong_line(tallied) == "wrong: 100% misread (4 of 5 answers; decided 4 by accuracy, 1 by judge)"


def _eval(tmp_path: Path, stub: OpenAIStub, *extra: str) -> Result:
    return CliRunner().invoke(
        cli,
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "memsim",
            "-o",
            "n=5",
            "--llm",
            "openai/stub",
            "--judge",
            "openai/stub",
            "--api-base",
            stub.base_url,
            "--output",
            str(tmp_path / "runs"),
            *extra,
        ],
        env={"OPENAI_API_KEY": "sk-test", "COLUMNS": "80"},
    )


def _one_readable_verdict(stub: OpenAIStub) -> None:
    """The reader answers "no idea"; the judge gives one readable verdict of five."""
    verdicts = itertools.count()
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> str:
        if "Grade strictly" not in body["messages"][-1]["content"]:
            return "no idea"
        with lock:
            first = next(verdicts) == 0
        return '{"correct": false}' if first else "Hmm, hard to tell."

    stub.reply = reply


def test_eval_says_how_many_verdicts_it_could_not_read_and_still_diagnoses(
    tmp_path: Path, openai_stub: OpenAIStub
) -> None:
    _one_readable_verdict(openai_stub)
    result = _eval(tmp_path, openai_stub)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "judge: 4 of 5 questions not scored (unreadable verdict); see memplug.log" in text, result.output
    # every answer is diagnosed: the judge's one, and the dataset's accuracy for the four others
    assert "wrong: 100% misread (5 of 5 answers; decided 4 by accuracy, 1 by judge)" in text, result.output
    assert "answered by the llm reader (openai/stub), judge memplug (openai/stub," in text, result.output
    # every line but the run's path (printed whole) holds in 80 columns
    assert max(len(line) for line in result.output.splitlines()[:-1]) <= 80, result.output
    (run,) = (tmp_path / "runs").iterdir()
    summary = RunDir(run).summary()
    assert summary.unscored == {"judge": {"n": 4, "of": 5, "reason": UNREADABLE}}
    assert summary.diagnosis is not None and summary.diagnosis["decided_by"] == {"accuracy": 4, "judge": 1}
    assert sum(r.unscored is not None for r in RunDir(run).records()) == 4
    report = CliRunner().invoke(cli, ["report", str(run)], env={"COLUMNS": "80"})
    assert "judge: 4 of 5 questions not scored" in " ".join(report.output.split()), report.output


def test_quiet_eval_still_says_it(tmp_path: Path, openai_stub: OpenAIStub) -> None:
    _one_readable_verdict(openai_stub)
    result = _eval(tmp_path, openai_stub, "--quiet")
    assert result.exit_code == 0, result.output
    assert "judge: 4 of 5 questions not scored (unreadable verdict)" in " ".join(result.output.split())


def _unfinished(run: Path, answered: int, expected: int) -> None:
    """The run as if interrupted after ``answered`` of ``expected`` questions."""
    records = RunDir(run).records()
    for r in records[answered:]:
        r.error, r.scores, r.diagnosis = "interrupted", {}, None
    (run / "samples.jsonl").write_bytes(b"".join(r.to_line() for r in records))
    summary = summarize(records, "bm25", "memsim", run.name, 1.0, resamples=10)
    summary.outcome = Outcome("interrupted", expected, answered, 0)
    (run / "summary.json").write_text(json.dumps(summary.to_json()))
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, **summary.outcome.to_json()}))


def test_report_of_an_unfinished_run_says_how_many_were_answered(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["eval", "--agent", "bm25", "--dataset", "memsim", "-o", "n=5", "--quiet", "--output", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    (run,) = (p for p in tmp_path.iterdir() if p.is_dir())
    _unfinished(run, 3, 5000)
    text = " ".join(CliRunner().invoke(cli, ["report", str(run)], env={"COLUMNS": "80"}).output.split())
    assert "INTERRUPTED: 3 of 5000 questions answered" in text and "overall" in text, text
    _unfinished(run, 0, 5000)
    report = CliRunner().invoke(cli, ["report", str(run)], env={"COLUMNS": "80"})
    text = " ".join(report.output.split())
    assert "INTERRUPTED: 0 of 5000 questions answered" in text, text
    assert f"{run.name}: no question answered, nothing scored" in text and "overall" not in text, text
