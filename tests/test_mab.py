"""`mab`: MemoryAgentBench's release read as the official loader reads it, every source's
protocol, the offline NIAH-MQ generator, and runs end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memplug.datasets.mab.builder import MABBuilder, needle_chunks
from memplug.datasets.mab.generator import SOURCE as SYNTHETIC
from memplug.datasets.mab.release import rows, sources_in, split_of
from memplug.datasets.mab.sources import SOURCES, family_of, scoring_of
from memplug.errors import MemplugError
from memplug.models import Sample
from memplug.protocols import BuildOptions
from memplug.testing import CliResult, assert_dataset_conforms, run_cli

META_KEYS = (
    "source",
    "qa_pair_ids",
    "question_ids",
    "question_types",
    "question_dates",
    "previous_events",
    "keypoints",
    "demo",
    "haystack_sessions",
)
STORY = " ".join(f"Sentence number {i} of the story tells what happened on day {i}." for i in range(400))


def row(source: str, questions: list[str], answers: list[list[str]], **meta: Any) -> dict[str, Any]:
    """A release row: every metadata field present, as the parquet schema has them."""
    full: dict[str, Any] = {k: None for k in META_KEYS}
    full.update(source=source, qa_pair_ids=[f"{source}_no{i}" for i in range(len(questions))], **meta)
    return {"context": STORY, "questions": questions, "answers": answers, "metadata": full}


def _run_dir(result: CliResult) -> Path:
    """The run an ``eval`` wrote."""
    assert result.run_dir is not None, result.stderr
    return result.run_dir


def write_release(folder: Path, split: str, rows_: list[dict[str, Any]]) -> Path:
    path = folder / "data" / f"{split}-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows_), path)
    return path


def build(data: Path | None, **values: Any) -> list[Sample]:
    return list(MABBuilder().build(BuildOptions(values=values, data=data)))


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """A release folder of two splits: AR (RULER-QA, EventQA, LongMemEval) and LRU (InfBench-Sum)."""
    write_release(
        tmp_path,
        "Accurate_Retrieval",
        [
            row("ruler_qa1_197K", ["What happened on day 3?", "What happened on day 7?"], [["day 3"], ["day 7", "7"]]),
            row("eventqa_full", ["Which event comes next?", "And then?"], [["day 4", "story"], ["day 5"]]),
            row(
                "longmemeval_s*",
                ["What colour is my car?", "Where do I live?"],
                [["blue"], ["Berlin"]],
                question_ids=["q1", "q2_abs"],
                question_types=["single-session-user", "knowledge-update"],
                question_dates=["2023/05/30 (Tue) 23:40", "2023/06/01 (Thu) 10:00"],
            ),
        ],
    )
    write_release(
        tmp_path,
        "Long_Range_Understanding",
        [
            row(
                "infbench_sum_eng_shots2",
                ["Summarise the story."],
                [["A story told day by day."]],
                keypoints=["It is told day by day.", "It has 400 days."],
            ),
        ],
    )
    return tmp_path


def test_the_release_is_read_and_kept_by_source_as_the_official_loader(release):
    assert sources_in(release) == {
        "ruler_qa1_197K": 1,
        "eventqa_full": 1,
        "longmemeval_s*": 1,
        "infbench_sum_eng_shots2": 1,
    }
    kept = rows(release, "eventqa_full")
    assert [r.source for r in kept] == ["eventqa_full"]
    assert split_of(release, "infbench_sum_eng_shots2") == "Long_Range_Understanding"
    # _process_single_sample_qa_lists: a missing list field is an empty list
    assert kept[0].metadata["question_types"] == [] and kept[0].metadata["qa_pair_ids"] == [
        "eventqa_full_no0",
        "eventqa_full_no1",
    ]


def test_an_unknown_source_lists_the_sources_the_file_has(release):
    with pytest.raises(
        MemplugError,
        match=r"no rows of source 'ruler_qa2_421K'.*ruler_qa1_197K \(1\).*"
        r"infbench_sum_eng_shots2 \(1\)",
    ):
        build(release, source="ruler_qa2_421K")
    with pytest.raises(MemplugError, match="holds 4 sources; pick one with -o source=NAME"):
        MABBuilder().info_for({}, release)


def test_json_with_the_same_columns_reads_like_parquet(tmp_path, release):
    parquet = release / "data" / "Accurate_Retrieval-00000-of-00001.parquet"
    as_json = tmp_path / "ar.json"
    as_json.write_text(json.dumps(pq.read_table(parquet).to_pylist()))
    as_jsonl = tmp_path / "ar.jsonl"
    as_jsonl.write_text("\n".join(json.dumps(r) for r in pq.read_table(parquet).to_pylist()))
    one = [build(p, source="ruler_qa1_197K", chunk=64) for p in (parquet, as_json, as_jsonl)]
    assert (
        [(s.messages, s.questions) for s in one[0]]
        == [(s.messages, s.questions) for s in one[1]]
        == [(s.messages, s.questions) for s in one[2]]
    )
    assert [s.meta["file"] for s in one[0] + one[1]] == [str(parquet), str(as_json)]


def test_a_sample_is_the_official_chunks_and_question_answer_pairs(release):
    [sample] = build(release, source="ruler_qa1_197K", chunk=200)
    assert sample.id == "ruler_qa1_197K" and sample.meta["competency"] == "AR"
    assert len(sample.messages) == sample.meta["n_chunks"] > 5
    assert sample.messages[0].text.startswith(
        "Dialogue between User and Assistant 2025-07-07 00:00:00\\n<User> "
        "The following context is the documents I have read: \nSentence"
    )
    assert [q.id for q in sample.questions] == ["ruler_qa1_197K_no0", "ruler_qa1_197K_no1"]
    assert sample.questions[1].answers == ("day 7", "7") and sample.questions[1].meta["answer"] == ["day 7", "7"]
    assert_dataset_conforms(MABBuilder(), options={"source": "ruler_qa1_197K", "chunk": "200"}, data=release)


def test_a_row_with_one_question_asks_it_with_every_answer(release):
    [sample] = build(release, source="infbench_sum_eng_shots2")
    [question] = sample.questions
    # _create_query_answer_pairs: one question, its gold the whole answers list
    assert question.meta["answer"] == [["A story told day by day."]] and question.answers == (
        "A story told day by day.",
    )
    assert question.meta["judge"] == "infbench-sum" and question.meta["keypoints"] == [
        "It is told day by day.",
        "It has 400 days.",
    ]


def test_longmemeval_questions_carry_type_id_date_and_its_judge(release):
    [sample] = build(release, source="longmemeval_s*")
    q1, q2 = sample.questions
    assert (q1.category, q1.time, q1.meta["judge"]) == ("single-session-user", "2023/05/30 (Tue) 23:40", "longmemeval")
    assert q2.meta["question_id"] == "q2_abs" and q2.meta["answer"] == ["Berlin"]


def test_a_source_the_table_lacks_runs_by_its_name_and_split(tmp_path):
    path = write_release(tmp_path, "Test_Time_Learning", [row("icl_new_100shot", ["text a", "text b"], [["1"], ["2"]])])
    info = MABBuilder().info_for({}, path)
    assert info.capabilities == {"TTL"} and info.metrics[0] == "em"
    assert info.protocol.name == "memoryagentbench-in_context_learning" and not info.protocol.score_raw_too


def test_every_source_of_the_issue_has_a_family_scoring_and_competency():
    assert {s.competency for s in SOURCES.values()} == {"AR", "TTL", "LRU", "CR"}
    assert len(SOURCES) == 25  # the issue's 24 and Longmemeval_s.yaml's longmemeval_s_-1_500
    assert family_of("factconsolidation_mh_262k") == "factconsolidation"
    assert (scoring_of("ruler_niah_mq_448K"), scoring_of("ruler_qa2_421K")) == ("ruler_niah", "default")
    assert scoring_of("icl_trec_fine_6400shot_balance") == "icl" and scoring_of("recsys_redial_full") == "recsys"
    assert SOURCES["recsys_redial_full"].file == "data/Test_Time_Learning-00000-of-00001.parquet"


def test_info_names_the_sources_protocol_metric_and_competency(release):
    info = MABBuilder().info_for({"source": "eventqa_full", "chunk": 512}, release)
    assert info.metrics[0] == "subem" and "eventqa_recall" in info.metrics and info.capabilities == {"AR"}
    assert info.protocol.name == "memoryagentbench-eventqa" and info.protocol.variations == ("chunk=512",)
    assert not info.protocol.score_raw_too and info.protocol.parse == "memoryagentbench"
    lru = MABBuilder().info_for({"source": "infbench_sum_eng_shots2"}, release)
    assert lru.capabilities == {"LRU"} and lru.metrics[0] == "judge"
    # the judge reads the reply itself, once
    assert (lru.protocol.parse, lru.protocol.score_raw_too) == ("strip", False)


def test_a_source_without_data_says_where_the_release_is():
    with pytest.raises(
        MemplugError,
        match=r"download data/Test_Time_Learning-00000-of-00001.parquet from "
        r"huggingface.co/datasets/ai-hyz/MemoryAgentBench and pass --data PATH",
    ):
        build(None, source="icl_nlu_8296shot_balance")


def test_recsys_needs_the_entity_map(tmp_path):
    path = write_release(
        tmp_path, "Test_Time_Learning", [row("recsys_redial_full", ["User: hi", "User: more"], [["1"], ["2"]])]
    )
    with pytest.raises(MemplugError, match="entity2id.json"):
        build(path, source="recsys_redial_full")
    (tmp_path / "entity2id.json").write_text(json.dumps({"<http://dbpedia.org/resource/Up_(2009_film)>": 1}))
    [sample] = build(path, source="recsys_redial_full")
    assert sample.questions[0].meta["entity_map"] == str(tmp_path / "entity2id.json")


def test_the_generator_hides_every_needle_in_one_chunk():
    [sample] = build(None, tokens=3000, questions=3, chunk=256)
    assert sample.meta["source"] == SYNTHETIC and len(sample.questions) == 3
    for q in sample.questions:
        assert len(q.answers) == 4 and len(q.targets) >= 1
        for value in q.answers:
            assert any(value in m.text for m in sample.messages if m.id in q.targets)
    assert_dataset_conforms(MABBuilder(), options={"tokens": "3000", "questions": "3", "chunk": "256"})
    again = build(None, tokens=3000, questions=3, chunk=256)
    assert again == [sample]  # the same seed, the same haystack
    assert needle_chunks(["x", "One of the special magic uuids for odd-wagon is: 3f2a-9c. y"]) == {"3f2a-9c": "chunk1"}


def test_eval_runs_offline_on_the_generated_niah_mq(tmp_path):
    result = run_cli(
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "mab",
            "-o",
            "tokens=4000",
            "-o",
            "questions=4",
            "-o",
            "chunk=256",
            "--quiet",
        ],
        cwd=tmp_path,
    )
    assert result.exit_code == 0, result.stderr
    assert result.run_dir is not None
    run = json.loads((result.run_dir / "run.json").read_text())
    protocol = run["resolved"]["protocol"]
    assert protocol["name"] == "memoryagentbench-ruler_niah_mq" and "tasks/templates.py" in protocol["source"]
    assert result.summary.metrics.overall["recall@10"] == 1.0
    assert 0 < result.summary.metrics.overall["ruler_recall"] <= 1


def test_eval_reads_a_release_jsonl_and_a_generated_samples_file(tmp_path, release):
    """A release's rows as JSON lines (context, questions, answers, metadata) were taken for
    memplug samples ("line 1: missing key 'id'"), and `memplug generate`'s own file for
    release rows ("row 0: metadata must be an object"): neither could be evaluated."""
    parquet = release / "data" / "Accurate_Retrieval-00000-of-00001.parquet"
    as_jsonl = tmp_path / "ar.jsonl"
    as_jsonl.write_text("\n".join(json.dumps(r) for r in pq.read_table(parquet).to_pylist()))
    args = ["eval", "--agent", "bm25", "--dataset", "mab", "-o", "chunk=256", "--quiet"]
    result = run_cli([*args, "--data", str(as_jsonl), "-o", "source=ruler_qa1_197K"], cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    generated = tmp_path / "niah.jsonl"
    made = run_cli(
        ["generate", "--dataset", "mab", "-o", "tokens=4000", "-o", "questions=4", "--out", str(generated)],
        cwd=tmp_path,
    )
    assert made.exit_code == 0, made.stderr
    result = run_cli([*args, "--data", str(generated)], cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert result.summary is not None and result.summary.metrics.overall["recall@10"] == 1.0


def test_eval_runs_a_release_file_of_factconsolidation(tmp_path, shared_data):
    source = json.loads((shared_data / "factconsolidation" / "factconsolidation_sh_6k.json").read_text())
    path = write_release(tmp_path, "Conflict_Resolution", [source])
    result = run_cli(
        ["eval", "--agent", "bm25", "--dataset", "mab", "--data", path, "--limit", "1", "--quiet"], cwd=tmp_path
    )
    assert result.exit_code == 0, result.stderr
    assert result.run_dir is not None
    run = json.loads((result.run_dir / "run.json").read_text())
    assert run["resolved"]["protocol"]["name"] == "memoryagentbench-factconsolidation"
    assert run["resolved"]["protocol"]["score_raw_too"] is True
    assert set(result.summary.metrics.overall) >= {"subem", "em", "f1"}


def test_a_parquet_file_that_is_not_the_release_is_one_line(tmp_path):
    path = tmp_path / "other.parquet"
    pq.write_table(
        pa.Table.from_pylist([{"context": "x", "questions": ["q"], "answers": [["a"]], "metadata": "m"}]), path
    )
    with pytest.raises(MemplugError, match="column metadata must be a struct with a source field"):
        sources_in(path)
    (tmp_path / "broken.parquet").write_text("not parquet")
    with pytest.raises(MemplugError, match="not a readable parquet file"):
        sources_in(tmp_path / "broken.parquet")


def test_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"context": "x", "questions": ["q"], "metadata": {"source": "detective_qa"}}]))
    result = run_cli(["eval", "--agent", "bm25", "--dataset", "mab", "--data", bad, "--quiet"], cwd=tmp_path)
    assert result.exit_code == 2 and "row 0: missing key 'answers'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_factcon_reads_the_parquet_release_as_its_json_copy(tmp_path, shared_data):
    from memplug.datasets.factcon.release import load_release

    copy = shared_data / "factconsolidation" / "factconsolidation_sh_6k.json"
    folder = tmp_path / "MemoryAgentBench"
    write_release(folder, "Conflict_Resolution", [json.loads(copy.read_text())])
    from_parquet, from_json = list(load_release(folder)), list(load_release(copy))
    assert [(s.id, s.messages, s.questions) for s in from_parquet] == [
        (s.id, s.messages, s.questions) for s in from_json
    ]
    assert len(from_parquet[0].questions) == 100


def test_report_groups_runs_of_several_sources_by_competency(tmp_path, shared_data):
    copy = shared_data / "factconsolidation" / "factconsolidation_mh_6k.json"
    path = write_release(tmp_path, "Conflict_Resolution", [json.loads(copy.read_text())])
    runs = [
        _run_dir(run_cli(["eval", "--agent", "bm25", "--dataset", "mab", *args, "--quiet"], cwd=tmp_path))
        for args in (["-o", "tokens=3000", "-o", "questions=2", "-o", "chunk=256"], ["--data", path])
    ]
    markdown = run_cli(["report", *runs, "--format", "markdown"], cwd=tmp_path)
    assert markdown.exit_code == 0, markdown.stderr
    lines = markdown.stdout.splitlines()
    assert lines[0] == "| | AR |  | CR |  |"
    assert lines[2] == (
        "| agent | ruler_niah_mq_synthetic (ruler_recall) | avg | factconsolidation_mh_6k (subem) | avg |"
    )
    assert lines[3].startswith("| bm25 (extractive) | ")
    latex = run_cli(["report", *runs, "--format", "latex"], cwd=tmp_path).stdout
    assert r"\multicolumn{2}{c}{AR} & \multicolumn{2}{c}{CR}" in latex and r"factconsolidation\_mh\_6k" in latex
    terminal = run_cli(["report", *runs], cwd=tmp_path)
    assert terminal.exit_code == 0 and "MemoryAgentBench by competency" in terminal.stdout
    page = run_cli(["report", *runs, "--html", tmp_path / "page.html"], cwd=tmp_path)
    assert page.exit_code == 0, page.stderr
    html = (tmp_path / "page.html").read_text()
    assert "<h2>By competency</h2>" in html and '<th colspan="2">AR</th><th colspan="2">CR</th>' in html


def test_judged_sources_end_to_end(release, tmp_path, openai_stub):
    """InfBench-Sum's three calls and LongMemEval's yes/no prompt, through the runner."""

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if "Answer yes or no only" in prompt:
            return "yes" if "['blue']" in prompt else "no"  # the gold as MemoryAgentBench writes it
        if "evaluate the fluency" in prompt:
            return '{"fluency": 1}'
        if "key points" in prompt:
            return 'Output: {"recall": 1}'
        return '{"precision": 1, "sentence_count": 2}'

    openai_stub.reply = reply
    scores: dict[str, Any] = {}
    for source in ("infbench_sum_eng_shots2", "longmemeval_s*"):
        result = run_cli(
            [
                "eval",
                "--agent",
                "bm25",
                "--dataset",
                "mab",
                "--data",
                release,
                "-o",
                f"source={source}",
                "--judge",
                "openai/stub",
                "--api-base",
                openai_stub.base_url,
                "--quiet",
            ],
            cwd=tmp_path,
            env={"OPENAI_API_KEY": "sk-test"},
        )
        assert result.exit_code == 0, result.stderr
        assert result.run_dir is not None
        resolved = json.loads((result.run_dir / "run.json").read_text())["resolved"]
        assert "without --judge MODEL the run reports" in resolved["data_warnings"]["first"][0]
        judge = resolved["judge"]
        records = [json.loads(line) for line in (result.run_dir / "samples.jsonl").read_text().splitlines()]
        scores[source] = (judge["name"], {r["question_id"]: r["scores"]["judge"] for r in records})
    # recall 1 of 2 key points, precision 1 of 2 sentences, fluency 1: F1 0.5
    assert scores["infbench_sum_eng_shots2"] == ("infbench-sum", {"infbench_sum_eng_shots2_no0": 0.5})
    sent = [b for b in openai_stub.chat_requests if "evaluate the fluency" in b["messages"][-1]["content"]]
    assert len(sent) == 1 and (sent[0]["temperature"], sent[0]["top_p"], sent[0]["max_tokens"]) == (0.1, 0.9, 4096)
    assert len([b for b in openai_stub.chat_requests if "Answer yes or no only" in b["messages"][-1]["content"]]) == 2
    assert scores["longmemeval_s*"] == ("longmemeval", {"longmemeval_s*_no0": 1.0, "longmemeval_s*_no1": 0.0})
