"""Choosing the judge of a run (`eval/rescore --judge-prompt NAME`), what run.json records of it,
`memplug list` showing the judges, and reports that never put two judges' numbers in one column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result

from memplug import compare
from memplug.cli import cli
from memplug.datasets.locomo.judge import LOCOMO_J
from memplug.datasets.longmemeval.judge import LONGMEMEVAL
from memplug.judge import MEMPLUG, Judge
from memplug.models import Question
from memplug.record import RunSummary
from memplug.publish import tables
from memplug.runner import RunSpec
from test_judge import FakeJudgeLLM, judge_config

if TYPE_CHECKING:
    from openai_stub import OpenAIStub

LME = Path(__file__).parent / "fixtures" / "longmemeval" / "longmemeval_s_cleaned.json"


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env={"OPENAI_API_KEY": "sk-test", **(env or {})})


def judged_run(tmp_path: Path, stub: OpenAIStub, *extra: str, env: dict[str, str] | None = None) -> Path:
    out_dir = tmp_path / f"runs{len(list(tmp_path.glob('runs*')))}"
    out = invoke(
        "eval",
        "--agent",
        "bm25",
        "--dataset",
        "longmemeval",
        "--data",
        str(LME),
        "--judge",
        "openai/stub",
        "--api-base",
        stub.base_url,
        "--output",
        str(out_dir),
        "--quiet",
        *extra,
        env=env,
    )
    assert out.exit_code == 0, out.output
    (run,) = out_dir.iterdir()
    return run


def reply(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    return "yes" if "Answer yes or no only" in prompt else '{"correct": false}'


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--judge", "openai/stub", "--judge-prompt", "nope"],
            "unknown judge 'nope'; installed: beam, infbench-sum, locomo-j, locomo-plus, longmemeval, memplug",
        ),
        (["--judge-prompt", "memplug"], "--judge-prompt memplug chooses the judge's prompts; it needs --judge MODEL"),
    ],
)
def test_a_bad_judge_choice_is_one_line_exit_2_before_anything_runs(tmp_path, args, message):
    out = invoke(
        "eval",
        "--agent",
        "bm25",
        "--dataset",
        "longmemeval",
        "--data",
        str(LME),
        "--output",
        str(tmp_path / "runs"),
        *args,
    )
    assert out.exit_code == 2, out.output
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_the_dataset_official_judge_by_default_and_judge_prompt_for_every_question(tmp_path, openai_stub):
    openai_stub.reply = reply
    official = judged_run(tmp_path, openai_stub)
    run = json.loads((official / "run.json").read_text())
    assert run["spec"]["judge_prompt"] is None
    assert run["resolved"]["judge"]["name"] == "longmemeval"
    assert run["resolved"]["judge"]["prompt_sha256"] == LONGMEMEVAL.sha256
    assert json.loads((official / "summary.json").read_text())["metrics"]["overall"]["judge"] == 1.0

    n_before = len(openai_stub.chat_requests)
    strict = judged_run(tmp_path, openai_stub, "--judge-prompt", "memplug")
    run = json.loads((strict / "run.json").read_text())
    assert run["spec"]["judge_prompt"] == "memplug"
    judge = run["resolved"]["judge"]
    assert (judge["name"], judge["model"], judge["prompt_sha256"]) == ("memplug", "openai/stub", MEMPLUG.sha256)
    assert judge["selected_by"] == "--judge-prompt"
    asked = [b["messages"][-1]["content"] for b in openai_stub.chat_requests[n_before:]]
    assert asked and all("Grade strictly" in a for a in asked)
    assert json.loads((strict / "summary.json").read_text())["metrics"]["overall"]["judge"] == 0.0

    # $MEMPLUG_JUDGE_PROMPT is the option's default, so the choice is in the spec all the same
    by_env = judged_run(tmp_path, openai_stub, env={"MEMPLUG_JUDGE_PROMPT": "locomo-j"})
    assert json.loads((by_env / "run.json").read_text())["spec"]["judge_prompt"] == "locomo-j"

    # a resume with another judge is refused like any other scored field
    out = invoke("eval", "--resume", str(strict), "--judge-prompt", "longmemeval")
    assert out.exit_code == 2 and "judge_prompt: 'memplug' -> 'longmemeval'" in out.stderr

    # rescore: another judge rescores every verdict, and says which
    out = invoke("rescore", str(official), "--judge-prompt", "memplug")
    assert out.exit_code == 0, out.output
    (changes,) = official.glob("rescore-*.json")
    changes = json.loads(changes.read_text())
    assert changes["judge"]["rescore"]["name"] == "memplug" and changes["judge"]["run"]["name"] == "longmemeval"
    assert json.loads(Path(out.stdout.strip()).read_text())["metrics"]["overall"]["judge"] == 0.0
    out = invoke("rescore", str(official), "--judge-prompt", "nope")
    assert out.exit_code == 2 and "unknown judge 'nope'" in out.stderr

    # reports: one column per judge, and no paired test of one judge's verdicts against another's
    paths = [official, strict]
    assert compare.judge_columns(paths) == {0: "longmemeval", 1: "memplug"}
    out = invoke("report", *map(str, paths))
    assert out.exit_code == 0, out.output
    text = " ".join(out.stdout.split())
    assert "judge[longmemeval]" in text and "judge[memplug]" in text
    assert "judge longmemeval (openai/stub, sha256 " in text and "judge memplug (openai/stub, sha256 " in text
    assert "judge not compared" in text
    data = json.loads(invoke("report", *map(str, paths), "--json").stdout)
    assert [r["judge"]["name"] for r in data["runs"]] == ["longmemeval", "memplug"]
    assert "judge" not in data["paired"][0]["metrics"] and "recall@50" in data["paired"][0]["metrics"]
    assert data["paired"][0]["judges_differ"].startswith("longmemeval (openai/stub")
    for fmt in ("markdown", "latex", "csv"):
        text = tables(paths, fmt)
        assert "judge[longmemeval]" in text and "judge[memplug]" in text, fmt
    csv_rows = [line.split(",") for line in tables(paths, "csv").splitlines() if not line.startswith("#")]
    assert {r[0] for r in csv_rows if r[0].startswith("judge")} == {"judge[longmemeval]", "judge[memplug]"}
    page = tmp_path / "page.html"
    assert invoke("report", *map(str, paths), "--html", str(page)).exit_code == 0
    html = page.read_text(encoding="utf-8")
    assert "judge[longmemeval]" in html and "judge[memplug]" in html

    # the same judge twice: one column, compared as before
    again = judged_run(tmp_path, openai_stub)
    assert compare.judge_columns([official, again]) == {}
    same = json.loads(invoke("report", str(official), str(again), "--json").stdout)
    assert "judge" in same["paired"][0]["metrics"] and "judges_differ" not in same["paired"][0]


def test_columns_name_what_tells_the_judges_apart(tmp_path: Path) -> None:
    def run(name: str, judge: dict[str, str] | None, model: str | None = "openai/a") -> Path:
        path = tmp_path / name
        path.mkdir()
        resolved = {"judge": judge} if judge else {}
        (path / "run.json").write_text(json.dumps({"run_id": name, "spec": {"judge": model}, "resolved": resolved}))
        return path

    a = run("a", {"name": "memplug", "model": "openai/a", "prompt_sha256": "1" * 64})
    b = run("b", {"name": "memplug", "model": "openai/b", "prompt_sha256": "1" * 64})
    c = run("c", {"name": "memplug", "model": "openai/a", "prompt_sha256": "2" * 64})
    old = run("old", None)
    none = run("none", None, model=None)
    assert compare.judge_columns([a, b]) == {0: "openai/a", 1: "openai/b"}
    assert compare.judge_columns([a, c]) == {0: "sha256:11111111", 1: "sha256:22222222"}
    assert compare.judge_columns([a, none]) == {}
    assert compare.judge_columns([a, old]) == {0: "memplug", 1: "unrecorded"}
    summary = RunSummary.from_json(
        {
            "metrics": {"overall": {"judge": 1.0, "f1": 0.5}, "by_category": {"x": {"judge_coherence": 1.0}}},
            "n": {"overall": {"judge": 3}},
            "ci": {"level": 0.95, "overall": {"judge": None}, "na": {"overall": {"judge": "1 sample"}}},
        },
        "summary.json",
    )
    renamed = compare.judged_summary(summary, "memplug").to_json()
    assert renamed["metrics"] == {
        "overall": {"judge[memplug]": 1.0, "f1": 0.5},
        "by_category": {"x": {"judge_coherence[memplug]": 1.0}},
    }
    assert renamed["n"] == {"overall": {"judge[memplug]": 3}, "by_category": {}} and renamed["ci"]["level"] == 0.95
    assert renamed["ci"]["overall"] == {"judge[memplug]": None}
    assert renamed["ci"]["na"] == {"overall": {"judge[memplug]": "1 sample"}, "by_category": {}}


def test_run_json_names_the_judges_of_the_questions_before_any_is_judged():
    judge = Judge(judge_config(FakeJudgeLLM("yes")))
    judge.plan(
        [
            Question("q", "x?", ("a",), meta={"judge": "longmemeval"}),
            Question("l", "y?", ("b",), meta={"locomo_category": 1}),
        ]
    )
    described = judge.describe()
    assert described["name"] == "longmemeval+locomo-j" and set(described["judges"]) == {"longmemeval", "locomo-j"}
    forced = Judge(judge_config(FakeJudgeLLM("yes"), judge_name="memplug"))
    forced.plan([Question("q", "x?", ("a",), meta={"judge": "longmemeval"})])
    assert forced.describe()["name"] == "memplug" and forced.describe()["selected_by"] == "--judge-prompt"


def test_judge_prompt_is_a_scored_field_of_the_spec():
    import attrs

    stored = attrs.asdict(RunSpec(agent="a", dataset="d"))
    del stored["judge_prompt"]  # a run.json from before the option: no judge named, as None
    assert RunSpec(agent="a", dataset="d").differences(stored) == []
    assert RunSpec(agent="a", dataset="d", judge_prompt="memplug").differences(stored) == [
        "judge_prompt: None -> 'memplug'"
    ]


def test_list_shows_the_judges_with_their_prompts_and_sha256():
    out = CliRunner().invoke(cli, ["list", "--kind", "judges"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert all(len(line) <= 80 for line in out.stdout.splitlines())
    for judge in (MEMPLUG, LONGMEMEVAL, LOCOMO_J):
        assert f"│ {judge.name} " in out.stdout and f"sha256 {judge.sha256[:12]}" in out.stdout
    listed = json.loads(CliRunner().invoke(cli, ["list", "--kind", "judges", "--json"]).stdout)["judges"]
    by_name = {j["name"]: j for j in listed}
    assert by_name["longmemeval"]["sha256"] == LONGMEMEVAL.sha256
    assert by_name["longmemeval"]["prompts"] == [
        "fact",
        "temporal-reasoning",
        "knowledge-update",
        "single-session-preference",
        "abstention",
    ]
