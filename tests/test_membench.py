"""MemBench: the loader on files written in MemData's layout, the official prompt, letter
accuracy and recall of target steps, held against what MemBench's own code produced."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memplug.answering import protocol_of
from memplug.datasets.membench.builder import MemBenchBuilder, parse_choice
from memplug.errors import DataError, MemplugError
from memplug.metrics import Accuracy, RecallAtK
from memplug.models import AgentQuestion, Recalled, Sample
from memplug.protocols import BuildOptions, MetricConfig, ScoreContext
from memplug.testing import assert_dataset_conforms, run_cli

BOSTON = "Boston, MA"
TUE, WED = "'2024-10-01 {}' Tuesday", "'2024-10-02 {}' Wednesday"


def statement(mid: int, message: str, time: str, place: str = BOSTON) -> dict[str, Any]:
    """A ThirdAgent step as MemData writes it."""
    return {"mid": mid, "message": message, "time": time, "place": place}


def qa(question: str, answer: str, targets: list[Any], choices: list[str], truth: str, time: str) -> dict[str, Any]:
    return {
        "qid": 0,
        "question": question,
        "answer": answer,
        "target_step_id": targets,
        "choices": dict(zip("ABCD", choices)),
        "ground_truth": truth,
        "time": time,
    }


COMPANIES = ["Globex", "Initech", "Umbrella", "TechInnovate Systems LLC"]
THIRD_SIMPLE = {
    "roles": [
        {
            "tid": 0,
            "message_list": [
                statement(0, "My subordinate is Maya Carter.", TUE.format("08:00")),
                statement(1, "Maya Carter holds an Associate Degree.", TUE.format("08:05")),
                statement(2, "My uncle Landon Pierce is 27 years old.", WED.format("09:00"), "Salem, MA"),
            ],
            "QA": qa(
                "What is the education level of my subordinate?",
                "Associate Degree",
                [1],
                ["Bachelor's Degree", "Associate Degree", "High School Diploma", "Master's Degree"],
                "B",
                "'2024-10-04 08:49' Friday",
            ),
        },
        {
            "tid": 1,
            "message_list": [
                statement(0, "My niece works at TechInnovate Systems LLC.", TUE.format("10:00"), "Austin, TX"),
                statement(1, "My niece is called Ruby Hale.", TUE.format("10:02"), "Austin, TX"),
            ],
            "QA": qa(
                "Where does Ruby Hale work?",
                "TechInnovate Systems LLC",
                [0, 1],
                COMPANIES,
                "D",
                "'2024-10-03 11:00' Thursday",
            ),
        },
    ],
}
#: a high-level trajectory: one session of statements, targets as [step, session]
THIRD_HIGH = {
    "movie": [
        {
            "tid": 0,
            "message_list": [
                [
                    statement(0, "I watched The Godfather again.", TUE.format("08:00")),
                    statement(1, "The weather was rainy.", TUE.format("09:00")),
                    statement(2, "I loved 12 Angry Men.", WED.format("08:00")),
                ]
            ],
            "QA": qa(
                "What kind of movies might I prefer?",
                "Drama",
                [[0, 0], [2, 0]],
                ["Musical", "Drama", "Horror", "Children"],
                "B",
                "'2024-10-03 08:13' Thursday",
            ),
        },
    ],
}
#: two sessions of turns, the second spelled user/assistant as some files do
FIRST_SIMPLE = {
    "roles": [
        {
            "tid": 0,
            "message_list": [
                [
                    {
                        "sid": 0,
                        "user_message": "I want to tell you about my uncle, Landon Pierce.",
                        "assistant_message": "Sure, tell me.",
                        "time": TUE.format("08:00"),
                        "place": BOSTON,
                    },
                    {
                        "sid": 1,
                        "user_message": "He is 27 years old.",
                        "assistant_message": "Landon is quite young at 27.",
                        "time": TUE.format("08:01"),
                        "place": BOSTON,
                    },
                ],
                [
                    {
                        "sid": 2,
                        "user": "My niece works at TechInnovate Systems LLC.",
                        "assistant": "Noted!",
                        "time": WED.format("08:00"),
                        "place": BOSTON,
                    }
                ],
            ],
            "QA": qa(
                "What is the name of my niece's company?",
                "TechInnovate Systems LLC",
                [[2, 1]],
                COMPANIES,
                "D",
                "'2024-10-04 08:49' Friday",
            ),
        },
    ],
}

#: What MemBench's code (github import-myself/Membench @ 0495679) made of these fixtures in a
#: scratch copy: load_test_data.py's no-noise formatting (infuse_single_trajectory_session,
#: length 0) stored as MembenchAgent.response stores a step, its targets, and the prompt
#: INSTRUCTION_FIRST.format(...) over FullMemory.recall's "\n"-joined memory
OFFICIAL_FIRST_STORED = [
    "0[|]'user': I want to tell you about my uncle, Landon Pierce. (place: Boston, MA; time'2024-10-01 08:00' "
    "Tuesday); "
    "'agent': Sure, tell me. (place: Boston, MA; time'2024-10-01 08:00' Tuesday)",
    "1[|]'user': He is 27 years old. (place: Boston, MA; time'2024-10-01 08:01' Tuesday); 'agent': Landon is quite "
    "young at 27. (place: Boston, MA; time'2024-10-01 08:01' Tuesday)",
    "2[|]'user': My niece works at TechInnovate Systems LLC. (place: Boston, MA; time'2024-10-02 08:00' Wednesday); "
    "'agent': Noted! (place: Boston, MA; time'2024-10-02 08:00' Wednesday)",
]
OFFICIAL_FIRST_PROMPT = (
    "Please answer the following question based on past memories of your'conversation with the user.\nPast memory: "
    + "\n".join(OFFICIAL_FIRST_STORED)
    + "\nQuestion: (current time is '2024-10-04 08:49' Friday) What is the name of my niece's company?\nChoices:\n"
    "A. Globex\nB. Initech\nC. Umbrella\nD. TechInnovate Systems LLC\nPlease output the correct option for the "
    "question, only one corresponding letter, without any other messages.\nExample: D\n"
)
OFFICIAL_THIRD_STORED = [
    "0[|]My subordinate is Maya Carter. (place: Boston, MA; time'2024-10-01 08:00' Tuesday)",
    "1[|]Maya Carter holds an Associate Degree. (place: Boston, MA; time'2024-10-01 08:05' Tuesday)",
    "2[|]My uncle Landon Pierce is 27 years old. (place: Salem, MA; time'2024-10-02 09:00' Wednesday)",
]
#: Membenenv.get_recall(res, std) on these inputs, as it returned them
OFFICIAL_RECALL = [
    ([1, 5, 1], [1], 1.0),
    ([0, 3], [0, 1], 0.5),
    ([3, 4], [0, 1], 0.0),
    ([2, 0, 1], [0, 0, 2], 1.0),
    ([], [1], 0.0),
]


def write_memdata(root: Path) -> Path:
    for mode, name, data in (
        ("ThirdAgent", "simple", THIRD_SIMPLE),
        ("ThirdAgent", "highlevel", THIRD_HIGH),
        ("FirstAgent", "simple", FIRST_SIMPLE),
    ):
        (root / mode).mkdir(parents=True, exist_ok=True)
        (root / mode / f"{name}.json").write_text(json.dumps(data, indent=4), encoding="utf-8")
    return root


def load(data: Path, **values: str) -> dict[str, Sample]:
    return {s.id: s for s in MemBenchBuilder().build(BuildOptions(values=values, data=data))}


@pytest.fixture
def memdata(tmp_path: Path) -> Path:
    return write_memdata(tmp_path / "MemData")


def test_one_sample_per_trajectory_with_the_official_steps_and_targets(memdata):
    samples = load(memdata)
    assert list(samples) == [
        "membench-FirstAgent-simple-roles-0",
        "membench-ThirdAgent-highlevel-movie-0",
        "membench-ThirdAgent-simple-roles-0",
        "membench-ThirdAgent-simple-roles-1",
    ]
    first = samples["membench-FirstAgent-simple-roles-0"]
    assert [m.text for m in first.messages] == OFFICIAL_FIRST_STORED  # sessions flattened, both key spellings
    assert [m.text for m in samples["membench-ThirdAgent-simple-roles-0"].messages] == OFFICIAL_THIRD_STORED
    assert first.questions[0].targets == ("2",)  # [step, session] -> step
    assert samples["membench-ThirdAgent-highlevel-movie-0"].questions[0].targets == ("0", "2")
    assert samples["membench-ThirdAgent-simple-roles-1"].questions[0].targets == ("0", "1")
    q = first.questions[0]
    assert q.category == "FirstAgent/simple" and q.correct_choice == "D" and q.time == "2024-10-04T08:49"
    assert AgentQuestion.of(q).time_text == "'2024-10-04 08:49' Friday"
    assert first.messages[0].time == "2024-10-01T08:00"


def test_the_dataset_keeps_the_contract(memdata):
    assert_dataset_conforms(MemBenchBuilder(), data=memdata)


def test_the_prompt_is_instruction_first_over_full_memory(memdata):
    sample = load(memdata)["membench-FirstAgent-simple-roles-0"]
    items = [Recalled(m.text, message_ids=(m.id,)) for m in sample.messages]
    protocol = protocol_of(MemBenchBuilder.info)
    assert protocol.messages(AgentQuestion.of(sample.questions[0]), items) == [
        {"role": "user", "content": OFFICIAL_FIRST_PROMPT}
    ]
    assert protocol.top_k == 10 and protocol.unit == "message" and protocol.variations == ("no-json-schema",)


@pytest.mark.parametrize(
    "reply,letter",
    [('{"choice": "B"}', "B"), ("B", "B"), (" B\n", "B"), ("B.", "B."), ('{"answer": "B"}', '{"answer":"B"}')],
)
def test_replies_are_read_as_the_official_agent_reads_them(reply, letter):
    assert parse_choice(reply) == letter


def test_accuracy_is_the_letter_itself_and_recall_is_get_recall(memdata):
    q = load(memdata)["membench-ThirdAgent-simple-roles-1"].questions[0]
    accuracy = Accuracy(MetricConfig(choices="exact"))
    assert accuracy.score(ScoreContext(q, "D", ())) == 1.0
    assert accuracy.score(ScoreContext(q, "D.", ())) == 0.0  # Membenenv.step: response == ground_truth
    for retrieved, std, official in OFFICIAL_RECALL:
        question = type(q)("x", "?", ("y",), targets=[str(t) for t in std])
        items = tuple(Recalled("t", message_ids=(str(r),)) for r in retrieved)
        assert RecallAtK(MetricConfig(top_k=10)).score(ScoreContext(question, "", items)) == official


def test_mode_option_and_single_files(memdata):
    assert {s.meta["mode"] for s in load(memdata, mode="FirstAgent").values()} == {"FirstAgent"}
    assert len(load(memdata / "ThirdAgent")) == 3
    assert list(load(memdata / "ThirdAgent" / "highlevel.json")) == ["membench-ThirdAgent-highlevel-movie-0"]
    with pytest.raises(MemplugError, match="mode"):
        load(memdata, mode="SecondAgent")


def _broken(memdata: Path, change: Callable[[Any], object]) -> Path:
    data = json.loads(json.dumps(THIRD_SIMPLE))
    change(data["roles"][0])
    path = memdata / "ThirdAgent" / "simple.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda t: t["QA"].update(target_step_id=[7]), "target_step_id 7 names no step"),
        (lambda t: t["QA"].update(ground_truth="E"), "ground_truth 'E' is not one of"),
        (lambda t: t["QA"]["choices"].pop("D"), "keys A, B, C, D"),
        (lambda t: t["message_list"][0].pop("place"), "lacks 'place'"),
        (lambda t: t["message_list"][1].pop("message"), "needs 'message'"),
        (lambda t: t.pop("QA"), "tid, message_list, QA"),
        (lambda t: t.update(message_list=[]), "non-empty list"),
    ],
)
def test_broken_trajectories_name_the_file_and_the_place(memdata, change, message):
    path = _broken(memdata, change)
    with pytest.raises(DataError, match=message) as err:
        load(path)
    assert str(path) in str(err.value) and "['roles'][0]" in str(err.value)


def test_broken_layouts_are_one_line_errors(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load(tmp_path / "nope")
    with pytest.raises(DataError, match="no MemBench files"):
        load(tmp_path)
    (tmp_path / "simple.json").write_text("{}")
    with pytest.raises(DataError, match="folder named FirstAgent or ThirdAgent"):
        load(tmp_path / "simple.json")
    (tmp_path / "ThirdAgent").mkdir()
    (tmp_path / "ThirdAgent" / "simple.json").write_text('{"roles": {"tid": 0}}')
    with pytest.raises(DataError, match="scenario"):
        load(tmp_path)
    with pytest.raises(DataError, match="needs the release"):
        load(None)  # type: ignore[arg-type]


def test_eval_runs_end_to_end_offline(memdata, tmp_path):
    result = run_cli(
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "membench",
            "--data",
            memdata,
            "--output",
            tmp_path / "runs",
            "--quiet",
        ],
        cwd=tmp_path,
    )
    assert result.exit_code == 0, result.stderr
    assert result.run_dir is not None
    summary = json.loads((result.run_dir / "summary.json").read_text())
    run = json.loads((result.run_dir / "run.json").read_text())
    assert run["resolved"]["protocol"]["name"] == "membench" and run["resolved"]["top_k"] == 10
    assert set(summary["metrics"]["by_category"]) == {"FirstAgent/simple", "ThirdAgent/highlevel", "ThirdAgent/simple"}
    overall = summary["metrics"]["overall"]
    assert overall["recall@10"] == 1.0  # three steps or fewer: every one is recalled
    assert 0.0 <= overall["accuracy"] <= 1.0
    assert "membench" in run_cli(["list"], cwd=tmp_path).stdout


def test_bad_data_is_one_line_exit_2_before_any_run(memdata, tmp_path):
    _broken(memdata, lambda t: t["QA"].update(ground_truth="Z"))
    result = run_cli(
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "membench",
            "--data",
            memdata,
            "--output",
            tmp_path / "runs",
            "--quiet",
        ],
        cwd=tmp_path,
    )
    assert result.exit_code == 2 and result.run_dir is None
    assert len(result.stderr.strip().splitlines()) == 1 and "ground_truth 'Z'" in result.stderr


def test_the_llm_reader_gets_instruction_first_and_a_json_choice_counts(memdata, tmp_path, openai_stub):
    openai_stub.reply = '{"choice": "D"}'
    result = run_cli(
        [
            "eval",
            "--agent",
            "full",
            "--dataset",
            "membench",
            "--data",
            memdata,
            "--llm",
            "openai/stub",
            "--api-base",
            openai_stub.base_url,
            "--output",
            tmp_path / "runs",
            "--quiet",
        ],
        cwd=tmp_path,
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert result.exit_code == 0, result.stderr
    assert OFFICIAL_FIRST_PROMPT in [b["messages"][-1]["content"] for b in openai_stub.chat_requests]
    assert result.run_dir is not None
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["metrics"]["overall"]["accuracy"] == 0.5  # D is right for two trajectories of four
