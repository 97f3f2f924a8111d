"""`memplug judge-check`: a judge's verdicts against exact scoring, and two judges against each other.

The judges here are scripted (their verdict per question is fixed), so agreement and
kappa have hand-worked values; the judge module itself is tested with its own prompts.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from memplug.cli import cli
from memplug.cli.judge_check import judge_check_command
from memplug.judge_checks import check_run, compare, question_kind
from memplug.record import QuestionRecord
from memplug.results import summarize, write_json_atomic, write_records_atomic
from test_rescore import record as counting_record
from test_rescore import scripted_judge  # noqa: F401 (fixture)
from test_rescore import closed_port, one_line_exit_2, stub_judge
from test_rescore import keyless_env  # noqa: F401 (fixture)

CHOICES = {"A": "apple", "B": "river", "C": "lamp", "D": "violin"}


def mc_record(i: int, right: bool) -> QuestionRecord:
    r = counting_record(i, 0, "A" if right else "B")
    return attrs.evolve(
        r,
        sample_id=f"mc{i}",
        question_id="q",
        gold=["apple"],
        choices=CHOICES,
        correct_choice="A",
        scores={"accuracy": float(right)},
    )


def exact_record(i: int, right: bool) -> QuestionRecord:
    r = counting_record(i, 0, "apple" if right else "a red fruit")
    return attrs.evolve(r, sample_id=f"ex{i}", question_id="q", gold=["apple"])


def open_record(i: int) -> QuestionRecord:
    r = counting_record(i, 0, "She moved there because of her new job at the hospital.")
    return attrs.evolve(
        r,
        sample_id=f"op{i}",
        question_id="q",
        gold=["She moved to Leeds in 2019 to take up a post as a hospital pharmacist."],
    )


#: exact scoring: 6 of 10 multiple-choice right, 5 of 10 exact answers right, 4 open-ended
RECORDS = (
    [mc_record(i, i < 6) for i in range(10)]
    + [exact_record(i, i < 5) for i in range(10)]
    + [open_record(i) for i in range(4)]
)
#: per judge model, the questions it calls correct (one question per sample, named like it)
VERDICTS = {
    "always-yes": {r.sample_id for r in RECORDS},
    # agrees with exact scoring except that it accepts two paraphrases ("a red fruit"),
    # and accepts two of the four open-ended answers
    "fair": {f"mc{i}" for i in range(6)} | {f"ex{i}" for i in range(7)} | {"op0", "op1"},
}


@pytest.fixture
def scripted(scripted_judge):
    scripted_judge.update(VERDICTS)


def write_run(folder: Path) -> Path:
    # the question id the scripted judge sees is the sample id (one question per sample)
    records = [attrs.evolve(r, question_id=r.sample_id) for r in RECORDS]
    folder.mkdir(parents=True)
    spec = {"agent": "lookup", "dataset": "counting", "dataset_options": {}, "top_k": 5, "judge": None}
    write_json_atomic(folder / "run.json", {"run_id": folder.name, "spec": spec, "status": "finished"})
    write_records_atomic(folder / "samples.jsonl", records)
    write_json_atomic(folder / "summary.json", summarize(records, "lookup", "counting", folder.name, 1.0).to_json())
    return folder


def test_question_kinds():
    assert question_kind(mc_record(0, True), "en", 5) == "multiple_choice"
    assert question_kind(exact_record(0, True), "en", 5) == "exact_answer"
    assert question_kind(open_record(0), "en", 5) is None
    assert question_kind(attrs.evolve(open_record(0), gold=["张三的上司"]), "zh", 5) == "exact_answer"  # 5 characters
    assert question_kind(attrs.evolve(open_record(0), gold=["张三的新上司"]), "zh", 5) is None


def test_compare_table_and_undefined_kappa():
    c = compare([1, 1, 0, 0], [1, 0, 0, 0])
    assert c["table"] == {"11": 1, "10": 1, "01": 0, "00": 2} and c["agreement"] == 0.75
    assert compare([1, 1], [1, 1])["kappa"] is None  # one label throughout
    assert compare([], []) == {"n": 0, "agreement": None, "kappa": None, "table": None}


def test_one_judge_against_exact_scoring(scripted, tmp_path):
    result = check_run(write_run(tmp_path / "run"), ["fair"])
    assert result["questions"] == {"answered": 24, "multiple_choice": 10, "exact_answer": 10}
    check = result["judges"]["fair"]["vs_exact"]
    # all 20 objective questions: exact says yes 11, judge yes 13, agreeing on 18.
    # p_o = 18/20 = 0.9; p_e = (13/20)(11/20) + (7/20)(9/20) = (143 + 63)/400 = 0.515
    # kappa = (0.9 - 0.515) / (1 - 0.515) = 0.385 / 0.485 = 0.79381...
    assert check["all"]["n"] == 20 and check["all"]["agreement"] == pytest.approx(0.9)
    assert check["all"]["kappa"] == pytest.approx(0.385 / 0.485)
    assert check["all"]["table"] == {"11": 11, "10": 2, "01": 0, "00": 7}
    assert check["multiple_choice"]["agreement"] == 1.0 and check["multiple_choice"]["kappa"] == 1.0
    assert check["exact_answer"]["agreement"] == pytest.approx(0.8)
    assert result["judges"]["fair"]["disagreements"] == [
        {"sample_id": "ex5", "question_id": "ex5"},
        {"sample_id": "ex6", "question_id": "ex6"},
    ]
    assert result["judges"]["fair"]["judge"]["prompt_version"] == "test"
    assert result["between_judges"] == []


def test_two_judges_and_their_mutual_agreement(scripted, tmp_path):
    path = write_run(tmp_path / "run")
    result = check_run(path, ["always-yes", "fair"])
    yes = result["judges"]["always-yes"]["vs_exact"]["all"]
    # a judge that always says yes agrees on the 11 exact "yes" only, and no better than chance
    assert yes["agreement"] == pytest.approx(11 / 20) and yes["kappa"] == pytest.approx(0.0)
    (between,) = result["between_judges"]
    # all 24 answered questions: "fair" says yes on 13 + 2 open-ended = 15, "always-yes" on 24
    assert between["judges"] == ["always-yes", "fair"] and between["n"] == 24
    assert between["agreement"] == pytest.approx(15 / 24) and between["kappa"] == pytest.approx(0.0)
    stored = json.loads((path / "judge-check.json").read_text())
    assert set(stored["judges"]) == {"always-yes", "fair"} and len(stored["between_judges"]) == 1


def test_checks_accumulate_in_the_run(scripted, tmp_path):
    path = write_run(tmp_path / "run")
    check_run(path, ["fair"])
    check_run(path, ["always-yes"])
    stored = json.loads((path / "judge-check.json").read_text())
    assert set(stored["judges"]) == {"fair", "always-yes"}


@pytest.fixture
def memplug_cli(monkeypatch):
    monkeypatch.setitem(cli.commands, "judge-check", judge_check_command)
    return lambda *args: CliRunner().invoke(cli, list(args))


def test_cli_table_and_json(scripted, tmp_path, memplug_cli):
    path = write_run(tmp_path / "run")
    out = memplug_cli("judge-check", str(path), "--judge", "fair", "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["judges"]["fair"]["vs_exact"]["all"]["n"] == 20
    out = memplug_cli("judge-check", str(path), "--judge", "fair", "--judge", "always-yes")
    assert out.exit_code == 0, out.output
    assert "0.794" in out.stdout and "Between judges" in out.stdout


def test_replies_without_a_verdict_are_said_beside_the_table(scripted, scripted_judge, tmp_path, memplug_cli):
    """Only --json told that a judge's figures rest on fewer questions than were checked."""
    scripted_judge["fair:unreadable"] = {"mc0", "ex9"}
    path = write_run(tmp_path / "run")
    out = memplug_cli("judge-check", str(path), "--judge", "fair", "--json")
    assert out.exit_code == 0, out.output
    fair = json.loads(out.stdout)["judges"]["fair"]
    assert fair["unreadable"] == 2 and fair["vs_exact"]["all"]["n"] == 18
    out = memplug_cli("judge-check", str(path), "--judge", "fair")
    assert out.exit_code == 0, out.output
    said = " ".join(out.stdout.split())
    assert "fair: 2 of 20 replies held no readable verdict, left out of these figures" in said, said


def test_cli_refuses_the_same_judge_twice(scripted, tmp_path, memplug_cli):
    out = memplug_cli("judge-check", str(write_run(tmp_path / "run")), "--judge", "fair", "--judge", "fair")
    assert out.exit_code == 2 and "the same judge is given twice" in out.stderr


def test_cli_needs_objective_questions(scripted, tmp_path, memplug_cli):
    path = write_run(tmp_path / "run")
    lines = [json.loads(line) for line in (path / "samples.jsonl").read_text().splitlines()]
    (path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines if r["sample_id"].startswith("op")))
    out = memplug_cli("judge-check", str(path), "--judge", "fair")
    assert out.exit_code == 2 and "no multiple-choice or exact-answer question" in out.stderr


def test_the_real_judge_through_the_llm_layer(testkit, openai_stub, tmp_path):
    openai_stub.reply = stub_judge
    path = write_run(tmp_path / "run")
    result = check_run(path, ["openai/stub-judge"], api_base=openai_stub.base_url)
    check = result["judges"]["openai/stub-judge"]
    assert check["vs_exact"]["all"] == {
        "n": 20,
        "agreement": 1.0,
        "kappa": 1.0,
        "table": {"11": 11, "10": 0, "01": 0, "00": 9},
    }
    assert check["judge"]["prompt_version"].startswith("strict@")
    assert len(openai_stub.chat_requests) == 20  # one judge: only the objective questions are judged
    assert check["llm"]["calls"] == 20


# --- the judges' LLMs are checked before the first call, as eval checks them -------------


@pytest.mark.parametrize("with_run", [True, False])
def test_a_hosted_judge_without_its_key_fails_before_any_call(keyless_env, openai_stub, tmp_path, with_run):
    from inprocess import memplug_main

    args = ["judge-check", write_run(tmp_path / "run")] if with_run else ["judge-check", "--leniency"]
    result = memplug_main([*args, "--judge", "openai/gpt-4o-mini"], env=keyless_env, cwd=tmp_path)
    one_line_exit_2(result, "openai needs OPENAI_API_KEY in the environment")
    assert not openai_stub.log  # no request reached the stub
    assert not (tmp_path / "run" / "judge-check.json").exists()


def test_the_leniency_judges_are_checked_before_the_runs_check(keyless_env, openai_stub, tmp_path):
    """The run's judges go to the run's endpoint (the stub); --leniency's to the provider, whose
    key is missing: that stops the command before the run's check calls anyone."""
    openai_stub.reply = stub_judge
    path = write_run(tmp_path / "run")
    stored = json.loads((path / "run.json").read_text())
    stored["spec"]["api_base"] = openai_stub.base_url
    write_json_atomic(path / "run.json", stored)
    from inprocess import memplug_main

    result = memplug_main(
        ["judge-check", path, "--leniency", "--judge", "openai/stub-judge"], env=keyless_env, cwd=tmp_path
    )
    one_line_exit_2(result, "openai needs OPENAI_API_KEY in the environment")
    assert not openai_stub.chat_requests


@pytest.mark.parametrize("with_run", [True, False])
def test_an_endpoint_that_does_not_answer_fails_at_once(keyless_env, openai_stub, tmp_path, with_run):
    from inprocess import memplug_main

    args = ["judge-check", write_run(tmp_path / "run")] if with_run else ["judge-check", "--leniency"]
    result = memplug_main(
        [*args, "--judge", "openai/gpt-4o", "--api-base", f"http://127.0.0.1:{closed_port()}/v1"],
        env=keyless_env,
        cwd=tmp_path,
    )
    one_line_exit_2(result, "does not answer")
    assert not openai_stub.log


@pytest.mark.parametrize("with_run", [True, False])
def test_a_judge_error_every_call_would_repeat_stops_the_check_unretried(keyless_env, openai_stub, tmp_path, with_run):
    from memplug.judge_checks import leniency_set

    from inprocess import memplug_main

    openai_stub.fail_next(1000, "401")
    if with_run:
        args, most = ["judge-check", write_run(tmp_path / "run")], 20  # the objective questions, once each
    else:
        args = ["judge-check", "--leniency", "--benchmark", "memplug"]
        most = len(leniency_set()["benchmarks"]["memplug"]["items"])
    result = memplug_main(
        [*args, "--judge", "openai/stub-judge", "--api-base", openai_stub.base_url, "--no-cache"],
        env=keyless_env,
        cwd=tmp_path,
    )
    one_line_exit_2(result, "HTTP 401")
    assert 1 <= len(openai_stub.chat_requests) <= most
