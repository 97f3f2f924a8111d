"""`memplug report --export`: the official scripts' files, regraded by the official rules (issue 30).

Each test runs memplug, writes the export and scores it the way the benchmark's own script
does, from the export and the release file alone (restated below from the upstream code,
never calling memplug's scorers), then checks that it gets memplug's numbers (summary.json
holds them to 6 decimals). The last tests register an export from a plugin, as a third-party
dataset would (``register_exports``).
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memplug import hookimpl
from memplug.cli import cli
from memplug.record import QuestionRecord
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec

LME = Path(__file__).parent / "fixtures" / "longmemeval" / "longmemeval_s_cleaned.json"


def _export(run: Path, folder: Path) -> Path:
    done = CliRunner().invoke(cli, ["report", str(run), "--export", str(folder), "--json"])
    assert done.exit_code == 0, done.output
    (written,) = folder.iterdir()
    return written


# -- LongMemEval: src/evaluation/evaluate_qa.py and print_qa_metrics.py -----------------


def _says_yes(answer: str, response: str) -> bool:
    """The stand-in judge model: "yes" when a word of the answer is in the response."""
    words = {w for w in re.findall(r"[a-z0-9]+", answer.lower()) if len(w) > 2}
    return bool(words & set(re.findall(r"[a-z0-9]+", response.lower())))


def _judge_reply(body: dict[str, Any]) -> str:
    """The judge's reply to one of the official prompts, read back from the prompt itself."""
    prompt = body["messages"][-1]["content"]
    found = re.search(r"\n\n(?:Correct Answer|Rubric|Explanation): (.*)\n\nModel Response: (.*)\n\n", prompt, re.DOTALL)
    if found is None:  # the reader's prompt: an answer made of the words of the question
        return " ".join(re.findall(r"[A-Za-z]+", prompt)[-12:])
    return "Yes." if _says_yes(found.group(1), found.group(2)) else "No."


def test_longmemeval_hypotheses_regrade_to_memplugs_judge(tmp_path, openai_stub):
    openai_stub.reply = _judge_reply
    spec = RunSpec(
        agent="bm25",
        dataset="longmemeval",
        data=str(LME),
        llm="openai/stub",
        judge="openai/stub",
        api_base=openai_stub.base_url,
        top_k=5,
    )
    run = Evaluation(spec).run(output=tmp_path / "runs")
    hypotheses = [json.loads(line) for line in _export(run, tmp_path / "out").read_text().splitlines()]
    assert all(set(h) == {"question_id", "hypothesis"} for h in hypotheses) and len(hypotheses) == 6

    # evaluate_qa.py: each hypothesis joined to the release by question_id, judged, labelled
    references = {r["question_id"]: r for r in json.loads(LME.read_text())}
    labels: dict[str, list[int]] = {}
    abstention = []
    for h in hypotheses:
        ref = references[h["question_id"]]  # a KeyError here: an id the official script would skip
        label = int(_says_yes(str(ref["answer"]), h["hypothesis"]))
        labels.setdefault(ref["question_type"], []).append(label)
        if "_abs" in h["question_id"]:
            abstention.append(label)
    every = [x for v in labels.values() for x in v]
    assert 0 < sum(every) < len(every)  # a regrade that can fail both ways

    summary = RunDir(run).summary()
    assert sum(every) / len(every) == pytest.approx(summary.metrics.overall["judge"], abs=1e-6)  # "Overall Accuracy"
    assert abstention == [summary.metrics.by_category["temporal-reasoning_abs"]["judge"]]  # "Abstention Accuracy"
    for qtype, values in labels.items():  # "Evaluation results by task": memplug keeps _abs apart
        mine = [r.scores["judge"] for r in RunDir(run).records() if r.question_meta["question_type"] == qtype]
        scored = [s for s in mine if s is not None]
        assert scored == mine, qtype  # every question judged
        assert sum(values) / len(values) == pytest.approx(sum(scored) / len(scored)), qtype


# -- LoCoMo: task_eval/evaluation.py, eval_question_answering ---------------------------


def _normalize(s: str) -> str:
    s = s.replace(",", "").lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the|and)\b", " ", s).split())


def _token_f1(prediction: str, truth: str) -> float:
    from nltk.stem import PorterStemmer

    stem = PorterStemmer().stem
    p, g = [stem(w) for w in _normalize(prediction).split()], [stem(w) for w in _normalize(truth).split()]
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def _official(qa: dict[str, Any], key: str) -> tuple[float, float]:
    """One question's (score, retrieval recall) by eval_question_answering's rules."""
    answer = str(qa["answer"] if "answer" in qa else qa["adversarial_answer"])
    output = qa[key]
    if qa["category"] == 3:
        answer = answer.split(";")[0].strip()
    if qa["category"] in (2, 3, 4):
        score = _token_f1(output, answer)
    elif qa["category"] == 1:
        parts = [p.strip() for p in output.split(",")]
        golds = [g.strip() for g in answer.split(",")]
        score = sum(max(_token_f1(p, g) for p in parts) for g in golds) / len(golds)
    else:
        score = float("no information available" in output.lower() or "not mentioned" in output.lower())
    context = qa.get(key + "_context")
    recall = (
        sum(ev in context for ev in qa["evidence"]) / len(qa["evidence"])
        if context is not None and qa["evidence"]
        else 1.0
    )
    return score, recall


def _locomo_reply(body: dict[str, Any]) -> str:
    """The reader: for a third of the questions "Not mentioned in the conversation", else
    words drawn from the prompt, so that scores spread between 0 and 1."""
    prompt = body["messages"][-1]["content"]
    pick = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    if pick % 3 == 0:
        return "Not mentioned in the conversation"
    words = re.findall(r"[A-Za-z0-9]+", prompt)
    start = pick % max(1, len(words) - 6)
    return ", ".join(" ".join(words[i : i + 2]) for i in range(start, start + 6, 2))


def test_locomo_predictions_regrade_to_memplugs_scores(tmp_path, shared_data, openai_stub):
    openai_stub.reply = _locomo_reply
    spec = RunSpec(
        agent="bm25",
        dataset="locomo",
        data=str(shared_data / "locomo" / "locomo_conv26.json"),
        llm="openai/stub",
        api_base=openai_stub.base_url,
        limit=60,
    )
    run = Evaluation(spec).run(output=tmp_path / "runs")
    exported = json.loads(_export(run, tmp_path / "out").read_text())
    (sample,) = exported
    assert sample["sample_id"] == "conv-26" and len(sample["qa"]) == 60

    key = "memplug_prediction"
    scored = [(qa["category"], *_official(qa, key)) for qa in sample["qa"]]
    assert {c for c, _, _ in scored} == {1, 2, 3, 4, 5}
    assert 0 < sum(s for _, s, _ in scored) < len(scored)
    overall = RunDir(run).summary().metrics.overall
    assert sum(s for _, s, _ in scored) / len(scored) == pytest.approx(overall["locomo_f1"], abs=1e-6)
    no_adv = [s for c, s, _ in scored if c != 5]
    assert sum(no_adv) / len(no_adv) == pytest.approx(overall["locomo_f1_no_adv"], abs=1e-6)
    # the official recall counts a question without evidence as 1; memplug leaves it out (no targets)
    with_evidence = [r for (_, _, r), qa in zip(scored, sample["qa"]) if qa["evidence"]]
    assert sum(with_evidence) / len(with_evidence) == pytest.approx(overall["recall@5"], abs=1e-6)
    by_category = RunDir(run).summary().metrics.by_category
    for name, values in by_category.items():
        mine = [s for c, s, _ in scored if c == int(name.split("-")[0])]
        assert sum(mine) / len(mine) == pytest.approx(values["locomo_f1"], abs=1e-6), name


def test_export_refuses_a_dataset_without_an_official_file(tmp_path):
    run = Evaluation(RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "2"})).run(output=tmp_path)
    done = CliRunner().invoke(cli, ["report", str(run), "--export", str(tmp_path / "out")])
    assert done.exit_code == 2, done.output
    line = done.output.strip()
    assert line.startswith("memplug: error: --export: memsim has no official export; ") and "locomo" in line
    assert len(line) <= 80, line
    assert not (tmp_path / "out").exists()  # refused before anything was written


# -- a plugin's export ------------------------------------------------------------------


def _tsv(records: Sequence[QuestionRecord]) -> list[str]:
    return [f"{r.question_id}\t{r.prediction}" for r in records]


class TsvExport:
    def __init__(self, suffix: str = ".answers.tsv") -> None:
        self.suffix = suffix

    @hookimpl
    def register_exports(self, register: Callable[..., None]) -> None:
        register("memsim", _tsv, suffix=self.suffix, description="question id and answer, a line")


def test_register_exports(tmp_path, plugins):
    """A dataset's official file may come from any plugin: `--export` writes what it returns."""
    plugins.register(TsvExport(), dist="tsv-export")
    run = Evaluation(RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "2"})).run(output=tmp_path)
    written = _export(run, tmp_path / "out")
    info = RunDir(run).info()
    assert written.name == f"{info.run_id}.answers.tsv"
    records = [r for r in RunDir(run).records() if r.error is None and r.prediction is not None]
    assert records and written.read_text(encoding="utf-8") == "".join(
        f"{r.question_id}\t{r.prediction}\n" for r in records
    )
    listed = json.loads(CliRunner().invoke(cli, ["list", "--json", "--kind", "exports"]).output)["exports"]
    assert [(e["name"], e["plugin"], e["suffix"]) for e in listed] == [
        ("locomo", "memplug", ".locomo.json"),
        ("longmemeval", "memplug", ".hypotheses.jsonl"),
        ("memsim", "tsv-export", ".answers.tsv"),
    ]


def test_an_export_without_a_valid_suffix_is_refused_in_one_line(tmp_path, plugins):
    plugins.register(TsvExport(suffix="answers/../x"), dist="tsv-export")
    run = Evaluation(RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "2"})).run(output=tmp_path)
    done = CliRunner().invoke(cli, ["report", str(run), "--export", str(tmp_path / "out")])
    assert done.exit_code == 2
    assert "export 'memsim' from plugin 'tsv-export': suffix='answers/../x' is not a file name's ending" in done.output
    assert not (tmp_path / "out").exists()
