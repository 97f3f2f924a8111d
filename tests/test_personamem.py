"""PersonaMem: the loader on files written in the release's layout, the cut at each
question's end index, the official prompt and the official answer extraction."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from memplug.answering import protocol_of
from memplug.datasets.personamem.builder import INSTRUCTIONS, PersonaMemBuilder
from memplug.datasets.personamem.scoring import PersonaMemAccuracy, extract_answer
from memplug.errors import DataError, MemplugError
from memplug.models import AgentQuestion, Recalled, Sample
from memplug.protocols import BuildOptions, ScoreContext
from memplug.testing import assert_dataset_conforms, run_cli

SID_A = "c26f05c585ec8f61860984e03cc33c9aaad5d416d8d3f505b7e580b6928ec091"
SID_B = "9b1d7e0f3a"
CONTEXTS = {
    SID_A: [
        {"role": "system", "content": "Current user persona:Name: Kanoa Manu, a software engineer who loves music."},
        {"role": "user", "content": "Patient: Attending that community music therapy workshop was transformative."},
        {"role": "assistant", "content": "Therapist: Music can help you express what words cannot."},
        {"role": "user", "content": "Patient: I participated in an art therapy class with paint and clay."},
        {"role": "assistant", "content": "Therapist: Which medium felt most liberating?"},
        {"role": "user", "content": "Patient: Lately I find art therapy tedious; I prefer gardening now."},
    ],
    SID_B: [
        {"role": "system", "content": "Current user persona:Name: Ada, a chemist."},
        {"role": "user", "content": "User: I am planning a trip to Kyoto in the spring."},
        {"role": "assistant", "content": "Assistant: Kyoto is lovely when the cherry trees bloom."},
    ],
}
OPTIONS_MUSIC = [
    "(a) Yoga retreats help mental health.",
    "(b) Meditation groups help.",
    "(c) Absolutely, I recall you mentioned the community music therapy workshop.",
    "(d) Art's role in wellness is what you'd stress, isn't it?",
]
#: (question_id, question_type, question, correct, options, shared context, end index)
ROWS = [
    ("q1", "recall_user_shared_facts", "Can music be used in therapy?", "(c)", OPTIONS_MUSIC, SID_A, 3),
    (
        "q2",
        "acknowledge_latest_user_preferences",
        "I went to another art therapy session.",
        "(a)",
        [
            "(a) It's nice you're continuing with art therapy.",
            "(b) Cooking classes are fun.",
            "(c) Nature walks are calming.",
            "(d) I don't know your hobbies.",
        ],
        SID_A,
        5,
    ),
    (
        "q3",
        "recall_user_shared_facts",
        "What did I try with paint and clay?",
        "(b)",
        ["(a) A cooking class", "(b) An art therapy class", "(c) A dance session", "(d) A yoga retreat"],
        SID_A,
        5,
    ),
    (
        "q4",
        "track_full_preference_evolution",
        "How have my hobbies changed?",
        "(d)",
        [
            "(a) You always loved art therapy.",
            "(b) You never tried art.",
            "(c) You dislike the outdoors.",
            "(d) You moved from art therapy to gardening.",
        ],
        SID_A,
        6,
    ),
    (
        "q5",
        "recall_user_shared_facts",
        "Where am I travelling in spring?",
        "(a)",
        ["(a) Kyoto", "(b) Paris", "(c) Lima", "(d) Oslo"],
        SID_B,
        3,
    ),
]
HEADER = [
    "persona_id",
    "question_id",
    "question_type",
    "topic",
    "context_length_in_tokens",
    "context_length_in_letters",
    "distance_to_ref_in_blocks",
    "distance_to_ref_in_tokens",
    "num_irrelevant_tokens",
    "distance_to_ref_proportion_in_context",
    "user_question_or_message",
    "correct_answer",
    "all_options",
    "shared_context_id",
    "end_index_in_shared_context",
]


def write_release(
    folder: Path,
    size: str = "32k",
    rows: Sequence[Sequence[object]] = ROWS,
    contexts: Mapping[str, list[dict[str, str]]] = CONTEXTS,
) -> Path:
    """questions_<size>.csv and shared_contexts_<size>.jsonl as the release writes them:
    all_options is str() of a Python list, each context one {id: [messages]} line."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"questions_{size}.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(HEADER)
        for qid, qtype, text, correct, options, sid, end in rows:
            writer.writerow(
                [
                    "7",
                    qid,
                    qtype,
                    "therapy",
                    "1200",
                    "6100",
                    "2",
                    "300",
                    "150",
                    "25.00%",
                    text,
                    correct,
                    str(options),
                    sid,
                    str(end),
                ]
            )
    with (folder / f"shared_contexts_{size}.jsonl").open("w", encoding="utf-8") as fh:
        for sid, turns in contexts.items():
            fh.write(json.dumps({sid: turns}) + "\n")
    return path


def load(data: Path, **values: Any) -> list[Sample]:
    return list(PersonaMemBuilder().build(BuildOptions(values=values, data=data)))


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return write_release(tmp_path / "pm")


def test_one_sample_per_context_and_end_index_holding_only_the_prefix(release):
    samples = load(release)
    assert [s.id for s in samples] == [f"{SID_A}@3", f"{SID_A}@5", f"{SID_A}@6", f"{SID_B}@3"]
    assert [[q.id for q in s.questions] for s in samples] == [["q1"], ["q2", "q3"], ["q4"], ["q5"]]
    for sample in samples:
        turns = CONTEXTS[sample.meta["shared_context_id"]][: sample.meta["end_index"]]
        # context[:end_index_in_shared_context], as the official run cuts it: nothing said later
        assert [(m.speaker, m.text) for m in sample.messages] == [(t["role"], t["content"]) for t in turns]
        assert [m.id for m in sample.messages] == [str(i) for i in range(len(turns))]
    assert "gardening" not in " ".join(m.text for m in samples[1].messages)


def test_questions_carry_type_choices_and_the_release_columns(release):
    q = load(release)[0].questions[0]
    assert q.category == "recall_user_shared_facts" and q.correct_choice == "c"
    assert q.choices is not None
    assert list(q.choices) == ["a", "b", "c", "d"] and q.answers == (OPTIONS_MUSIC[2],)
    assert q.meta["correct_answer"] == "(c)" and q.meta["topic"] == "therapy"
    assert q.meta["distance_to_ref_in_blocks"] == "2" and q.meta["shared_context_id"] == SID_A


def test_the_dataset_keeps_the_contract(release):
    assert_dataset_conforms(PersonaMemBuilder(), data=release)


def test_the_prompt_is_the_official_user_message(release):
    sample = load(release)[0]
    q = sample.questions[0]
    items = [Recalled(m.text, message_ids=(m.id,)) for m in sample.messages[1:3]]
    system, user = protocol_of(PersonaMemBuilder.info).messages(AgentQuestion.of(q), items)
    # Evaluation.query_llm: question + '\n\n' + instructions + '\n\n' + all_options, the cell as it is
    with release.open(encoding="utf-8", newline="") as fh:
        cell = next(csv.DictReader(fh))["all_options"]
    assert cell == str(OPTIONS_MUSIC) and "\"(d) Art's role" in cell  # str() switches quotes: kept
    assert user == {"role": "user", "content": q.text + "\n\n" + INSTRUCTIONS + "\n\n" + cell}
    assert system == {"role": "system", "content": items[0].text + "\n\n" + items[1].text}
    assert protocol_of(PersonaMemBuilder.info).describe()["variations"] == ["context-as-one-message"]


#: Evaluation.extract_answer of inference_standalone_openai.py @ 041d82ac, run on these
#: (reply, correct_answer) pairs in a scratch copy: its verdicts, not memplug's
OFFICIAL_VERDICTS = [
    ("<final_answer>(c)", "(c)", True),
    ("<final_answer>(c)</final_answer>", "(c)", True),
    ("  <final_answer> c  ", "(c)", True),
    ("c", "(c)", True),
    ("C", "(c)", True),
    ("(C) is the best reply.", "(c)", True),
    ("The answer is (b).", "(c)", False),
    ("(a) and (c) both fit, but <final_answer>(c)", "(c)", True),
    ("I think (a) fits. <final_answer> c", "(c)", True),
    ("I think (c) fits. <final_answer> b", "(c)", True),
    ("Option d is a distractor. <final_answer>(d)", "(d)", True),
    ("a or b", "(a)", False),
    ("<final_answer>(a)<final_answer>(b)", "(a)", False),
    ("<final_answer>(a)<final_answer>(b)", "(b)", True),
    ("The best response is a reply that acknowledges the workshop.", "(a)", True),
    ("", "(a)", False),
    ("<final_answer>", "(a)", False),
    ("Answer: (e)", "(a)", False),
    ("(A)", "(a)", True),
    ("d)", "(d)", True),
]


@pytest.mark.parametrize("reply,correct,verdict", OFFICIAL_VERDICTS)
def test_the_extraction_gives_the_official_verdicts(reply, correct, verdict):
    assert extract_answer(reply, correct) is verdict


def test_the_metric_scores_personamem_questions_only(release):
    q = load(release)[0].questions[0]
    metric = PersonaMemAccuracy()
    assert metric.score(ScoreContext(q, "Thinking... <final_answer>(c)", ())) == 1.0
    assert metric.score(ScoreContext(q, "(a) or (c)", ())) == 0.0
    other = type(q)("x", "?", ("y",))
    assert metric.score(ScoreContext(other, "c", ())) is None


def test_a_folder_needs_a_size_when_it_holds_several(tmp_path):
    write_release(tmp_path, "32k")
    write_release(tmp_path, "128k", rows=ROWS[:1])
    with pytest.raises(DataError, match="questions_128k.csv, questions_32k.csv"):
        load(tmp_path)
    assert [s.id for s in load(tmp_path, size="128k")] == [f"{SID_A}@3"]
    with pytest.raises(MemplugError, match="size"):
        load(tmp_path, size="64k")


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda rows: [(*r[:3], "(e)", *r[4:]) for r in rows], "correct_answer '\\(e\\)' is not one of the options"),
        (lambda rows: [(*r[:4], ["a", "b"], *r[5:]) for r in rows], "must start with a new letter"),
        (lambda rows: [(*r[:6], 9) for r in rows], "end_index_in_shared_context 9 is outside"),
        (lambda rows: [(*r[:5], "nope", r[6]) for r in rows], "shared_context_id 'nope' is not in"),
        (lambda rows: rows + rows[:1], "question_id 'q1' repeats"),
    ],
)
def test_broken_rows_name_the_file_and_the_problem(tmp_path, change, message):
    path = write_release(tmp_path, rows=change(list(ROWS)))
    with pytest.raises(DataError, match=message):
        load(path)


def test_broken_files_are_one_line_errors(tmp_path):
    path = write_release(tmp_path)
    (tmp_path / "shared_contexts_32k.jsonl").write_text('{"x": [1]}\nnot json\n')
    with pytest.raises(DataError, match="line 2"):
        load(path)
    (tmp_path / "shared_contexts_32k.jsonl").unlink()
    with pytest.raises(DataError, match="shared_contexts_32k.jsonl: no such file"):
        load(path)
    odd = tmp_path / "mine.csv"
    odd.write_text("question_id\n")
    with pytest.raises(DataError, match="questions_<size>.csv"):
        load(odd)
    write_release(tmp_path)
    path.write_text("question_id,question_type\nq,t\n")
    with pytest.raises(DataError, match="lacks the column"):
        load(path)
    with pytest.raises(DataError, match="needs the release"):
        load(None)  # type: ignore[arg-type]


def test_eval_runs_end_to_end_offline(release, tmp_path):
    result = run_cli(
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "personamem",
            "--data",
            release,
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
    assert run["resolved"]["protocol"]["name"] == "personamem" and run["resolved"]["memory_unit"] == "message"
    by_type = summary["metrics"]["by_category"]
    assert set(by_type) == {r[1] for r in ROWS}
    assert 0.0 <= summary["metrics"]["overall"]["personamem_accuracy"] <= 1.0
    listed = run_cli(["list"], cwd=tmp_path)
    assert "personamem" in listed.stdout


def test_short_rows_and_unreadable_bytes_are_data_errors(tmp_path):
    path = write_release(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], "7,q1,recall_user_shared_facts"]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: the row has fewer cells"):
        load(path)
    path.write_bytes(lines[0].encode() + b"\n7,q\xff\xfe,x\n")
    with pytest.raises(DataError, match="not a readable CSV"):
        load(path)


def test_bad_data_is_one_line_exit_2_before_any_run(tmp_path):
    path = write_release(tmp_path / "pm", rows=[(*ROWS[0][:6], 99)])
    result = run_cli(
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "personamem",
            "--data",
            path,
            "--output",
            tmp_path / "runs",
            "--quiet",
        ],
        cwd=tmp_path,
    )
    assert result.exit_code == 2 and result.run_dir is None
    assert len(result.stderr.strip().splitlines()) == 1 and "end_index_in_shared_context 99" in result.stderr


def test_the_llm_reader_sends_the_official_message_and_is_scored_officially(release, tmp_path, openai_stub):
    openai_stub.reply = "The reply that fits is (c).\n<final_answer>(c)"
    result = run_cli(
        [
            "eval",
            "--agent",
            "full",
            "--dataset",
            "personamem",
            "--data",
            release,
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
    asked = {b["messages"][-1]["content"].split("\n\n")[0]: b["messages"] for b in openai_stub.chat_requests}
    system, user = asked["I went to another art therapy session."]
    assert system["role"] == "system" and "art therapy class" in system["content"]
    assert "gardening" not in system["content"]  # said after this question's end index
    assert user["content"].endswith(INSTRUCTIONS + "\n\n" + str(ROWS[1][4]))
    assert result.run_dir is not None
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["metrics"]["overall"]["personamem_accuracy"] == 0.2  # (c) is right for one question of five
