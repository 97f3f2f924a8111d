"""MemSim/MemDaily protocol conformance: memplug's prompt, parsing and scoring against MemSim's code.

The official functions below are copied from github nuster1128/MemSim at db9d5d5
(``benchmark/methods/FullMemAgent.py`` ``response_answer`` and ``__read_memory__``,
``benchmark/utils.py`` ``remove_space_and_ent``, ``benchmark/TimeFlow.py``
``cal_metrics``/``get_recall``, ``benchmark/rawdata/infuse_noise.py``), with only the
LLM call taken out, so that the fixture is rendered and scored by both.
"""

from __future__ import annotations

import json

import pytest

from memplug.answering import protocol_of
from memplug.datasets.memsim.memdaily import MemDailyLoader
from memplug.metrics import Accuracy
from memplug.models import AgentQuestion, Recalled
from memplug.options import resolve
from memplug.protocols import BuildOptions, MetricConfig, ScoreContext


# --- MemSim's code (db9d5d5), the LLM call removed --------------------------------------


def official_message(m):  # rawdata/infuse_noise.py, OT == 0
    return "%s (消息地点 %s, 消息时间 %s)" % (m["message"], m["place"], m["time"])


def official_prompt(memory_list, question, choices, time):  # FullMemAgent.response_answer
    mem = ""
    for index, m in enumerate(memory_list):
        mem += "[%d] %s\n" % (index, m)
    prompt = "[用户消息] \n"
    prompt += mem
    prompt += "[单选题] %s \n" % question
    for k, v in choices.items():
        prompt += "%s: %s\n" % (k, v)
    prompt += "当前时间是 %s\n" % time
    prompt += "请根据[用户消息]，给出[单选题]的正确答案。\n"
    prompt += "只输出答案所对应的选项，不要输出解释或其他任何的内容。\n"
    prompt += "输出样例: A"
    return prompt


def remove_space_and_ent(s):  # utils.py
    return s.replace(" ", "").replace("\n", "")


def official_accuracy(reply, ground_truth):  # TimeFlow.cal_metrics on response_answer's result
    return float(remove_space_and_ent(reply) == ground_truth)


# --- the fixture: a real MemDaily trajectory ---------------------------------------------


@pytest.fixture(scope="module")
def trajectory(shared_data):
    return json.loads((shared_data / "memdaily" / "01_simple_roles.json").read_text(encoding="utf-8"))[0]


@pytest.fixture(scope="module")
def sample(shared_data):
    loader = MemDailyLoader()
    values = resolve(loader.options, {}, "memdaily")
    data = shared_data / "memdaily" / "01_simple_roles.json"
    return next(iter(loader.build(BuildOptions(values=values, data=data)))), loader.info_for(values, data)


def test_memory_units_are_the_official_messages(trajectory, sample):
    built, _ = sample
    assert [m.text for m in built.messages] == [official_message(m) for m in trajectory["message_list"]]


def test_the_prompt_equals_memsims_on_the_same_memories(trajectory, sample):
    built, info = sample
    qa = trajectory["question_list"][0]
    question = AgentQuestion.of(built.questions[0])
    memories = [official_message(m) for m in trajectory["message_list"]][:5]
    ours = protocol_of(info).messages(question, [Recalled(text) for text in memories])
    assert ours == [{"role": "user", "content": official_prompt(memories, qa["question"], qa["choices"], qa["time"])}]
    empty = protocol_of(info).messages(question, [])
    assert empty[0]["content"] == official_prompt([], qa["question"], qa["choices"], qa["time"])


#: raw replies a model gives; MemSim's code scores only the bare letter (spaces and line breaks removed)
REPLIES = ["D", " D\n", "D\n\n", "d", "D.", "(D)", "答案：D", "D: 高中", "The answer is D", "A", "", "D D"]


def test_replies_are_parsed_and_scored_as_memsims_code_does(sample):
    built, info = sample
    question = built.questions[0]
    protocol = protocol_of(info)
    metric = Accuracy(MetricConfig(choices=protocol.choices))
    ours = [metric.score(ScoreContext(question, protocol.parse_reply(r), ())) for r in REPLIES]
    theirs = [official_accuracy(r, question.correct_choice) for r in REPLIES]
    assert question.correct_choice == "D"
    assert ours == theirs == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_lenient_parsing_is_a_named_recorded_deviation(sample, shared_data):
    built, _ = sample
    loader = MemDailyLoader()
    values = resolve(loader.options, {"parse": "lenient"}, "memdaily")
    info = loader.info_for(values, shared_data / "memdaily")
    protocol = protocol_of(info)
    assert protocol.variations == ("parse=lenient",) and protocol.describe()["official"] is False
    metric = Accuracy(MetricConfig(choices=protocol.choices))
    question = built.questions[0]
    scores = [metric.score(ScoreContext(question, protocol.parse_reply(r), ())) for r in ("D.", "(D)", "答案：D")]
    assert scores == [1.0, 1.0, 1.0]


def test_a_run_records_its_protocol(tmp_path, shared_data):
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    path = Evaluation(RunSpec(agent="bm25", dataset="memdaily", data=str(shared_data / "memdaily"), limit=3)).run(
        output=tmp_path
    )
    resolved = RunDir(path).info().resolved
    protocol = resolved["protocol"]
    assert protocol["name"] == "memsim" and protocol["official"] and protocol["parse"] == "memsim"
    assert "db9d5d5" in protocol["source"] and len(protocol["sha256"]["user"]) == 64
    assert resolved["memory_unit"] == "message" and resolved["top_k"] == 5


def test_the_extractive_reader_leaves_counting_questions_unanswered_and_says_so(tmp_path, shared_data):
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    data = shared_data / "memdaily" / "04_aggregative_roles.json"
    path = Evaluation(RunSpec(agent="bm25", dataset="memdaily", data=str(data), limit=10)).run(output=tmp_path)
    run = RunDir(path)
    records = run.records()
    assert all(r.unanswerable == "the extractive reader cannot do counting" for r in records)
    assert all(r.prediction is None and set(r.scores) == {"recall@5"} for r in records)
    summary = run.summary()
    assert summary.outcome is not None
    assert summary.outcome.status == "finished" and summary.n_errors == 0
    assert summary.unanswerable == {"aggregative": {"n": 10, "reason": "the extractive reader cannot do counting"}}
    assert "accuracy" not in summary.metrics.overall and "recall@5" in summary.metrics.overall


def test_runs_under_two_protocols_are_never_compared_silently(tmp_path, shared_data):
    from click.testing import CliRunner

    from memplug.cli import cli
    from memplug.compare import comparisons
    from memplug.runner import Evaluation, RunSpec

    data = str(shared_data / "memdaily" / "01_simple_roles.json")
    official = Evaluation(RunSpec(agent="bm25", dataset="memdaily", data=data, limit=5)).run(output=tmp_path)
    lenient = Evaluation(
        RunSpec(agent="bm25", dataset="memdaily", data=data, limit=5, dataset_options={"parse": "lenient"})
    ).run(output=tmp_path)
    (pair,) = comparisons([official, lenient])
    assert pair["metrics"] == {} and "memsim v1 (official) vs memsim v1 (parse=lenient)" in pair["skipped"]
    shown = CliRunner().invoke(cli, ["report", str(official), str(lenient)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "not compared:" in shown.output and "protocol memsim v1 (official)" in shown.output
    # each protocol's numbers in tables of their own, never in one column
    assert "Scores, protocol memsim v1 (official) (95% CI)" in shown.output
    assert "Scores, protocol memsim v1 (parse=lenient) (95% CI)" in shown.output
    table = CliRunner().invoke(cli, ["report", str(official), str(lenient), "--format", "markdown"])
    assert table.exit_code == 2 and "cannot share a table: different answer protocols" in table.output


def test_every_prompt_of_the_release_equals_memsims(shared_data):
    """Choice texts ending in spaces were trimmed: 114 of the release's 2,954 prompts differed from
    MemSim's (28 of the 589 of the shared files)."""
    loader = MemDailyLoader()
    values = resolve(loader.options, {}, "memdaily")
    folder = shared_data / "memdaily"
    asked = differing = 0
    for path in sorted(folder.glob("0*_*.json")):
        raw = {str(t["tid"]): t for t in json.loads(path.read_text(encoding="utf-8"))}
        info = loader.info_for(values, path)
        for built in loader.build(BuildOptions(values=values, data=path)):
            qas = {
                f"{built.id}-q{qa.get('qid', j)}": qa
                for j, qa in enumerate(raw[str(built.meta["tid"])]["question_list"])
            }
            for question in built.questions:
                qa = qas[question.id]
                (message,) = protocol_of(info).messages(AgentQuestion.of(question), [])
                asked += 1
                differing += message["content"] != official_prompt([], qa["question"], qa["choices"], qa["time"])
    assert asked >= 589 and differing == 0
