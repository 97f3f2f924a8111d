"""--limit draws a stratified sample by category and abstention, with the seed (issue 30)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from memplug.models import Message, Question, Sample
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec
from memplug.sampling import stratified


def _samples() -> list[Sample]:
    """20 samples of 5 questions: categories a (60), b (30), c (10), every 10th of a an abstention."""
    out = []
    for s in range(20):
        questions = []
        for q in range(5):
            n = s * 5 + q
            category = "a" if n % 10 < 6 else "b" if n % 10 < 9 else "c"
            meta = {"abstention": category == "a" and n % 10 == 0}
            questions.append(Question(f"q{q}", f"question {n}?", ("x",), category=category, meta=meta))
        out.append(Sample(f"s{s}", [Message("m0", "hello")], questions))
    return out


def _strata(samples: list[Sample]) -> Counter[tuple[str, bool]]:
    return Counter((q.category, bool(q.meta.get("abstention"))) for s in samples for q in s.questions)


def test_each_stratum_gets_its_share():
    kept, drawn = stratified(_samples(), 20, seed=0)
    # a: 50 plain + 10 abstention, b: 30, c: 10 of 100 -> 10, 2, 6, 2 of 20
    assert _strata(kept) == {("a", False): 10, ("a", True): 2, ("b", False): 6, ("c", False): 2}
    assert drawn["n"] == 20 and drawn["of"] == 100 and drawn["seed"] == 0
    assert {(d["category"], d["abstention"]): (d["drawn"], d["of"]) for d in drawn["strata"]} == {
        ("a", True): (2, 10),
        ("a", False): (10, 50),
        ("b", False): (6, 30),
        ("c", False): (2, 10),
    }


def test_the_remainders_go_to_the_largest_fractions():
    kept, _ = stratified(_samples(), 7, seed=0)
    # exact shares 3.5, 0.7, 2.1, 0.7: floors 3, 0, 2, 0 and two left, to the 0.7s (the larger-stratum
    # rule does not arise: the 0.5 of a loses to both)
    assert _strata(kept) == {("a", False): 3, ("a", True): 1, ("b", False): 2, ("c", False): 1}


def test_the_draw_is_fixed_by_the_seed_and_differs_between_seeds():
    keys = lambda kept: [(s.id, q.id) for s in kept for q in s.questions]
    first, _ = stratified(_samples(), 20, seed=3)
    again, _ = stratified(reversed(list(reversed(_samples()))), 20, seed=3)
    other, _ = stratified(_samples(), 20, seed=4)
    assert keys(first) == keys(again) and keys(first) != keys(other)
    assert keys(first) == sorted(keys(first), key=lambda k: (int(k[0][1:]), k[1]))  # in dataset order


def test_samples_without_a_drawn_question_are_left_out_and_a_large_limit_keeps_all():
    kept, _ = stratified(_samples(), 3, seed=0)
    assert sum(len(s.questions) for s in kept) == 3 and len(kept) <= 3
    everything, drawn = stratified(_samples(), 1000, seed=0)
    assert sum(len(s.questions) for s in everything) == 100 and drawn["n"] == 100


def test_a_run_draws_stratified_by_default_and_records_it(testkit, tmp_path):
    # counting: 6 samples x (q0 even, q1 odd, q2 even); the first 4 questions would be 3 even, 1 odd
    path = Evaluation(RunSpec(agent="lookup", dataset="counting", limit=4, seed=1)).run(output=tmp_path)
    run = RunDir(path)
    assert Counter(r.category for r in run.records()) == {"even": 3, "odd": 1}  # 12:6 of 18 -> 2.67:1.33
    run_json = json.loads(run.run_json.read_text())
    assert run_json["spec"]["limit_by"] == "stratified"
    assert run_json["resolved"]["limit"]["by"] == "stratified" and run_json["resolved"]["limit"]["of"] == 18
    asked = {r.sample_id for r in run.records()}
    assert {p.name for p in (path / "work").iterdir()} == asked  # only the samples drawn from are ingested
    first = Evaluation(RunSpec(agent="lookup", dataset="counting", limit=4, limit_by="first")).run(output=tmp_path)
    assert sorted(r.key for r in RunDir(first).records()) == [("s0", "q0"), ("s0", "q1"), ("s0", "q2"), ("s1", "q0")]
    assert json.loads(RunDir(first).run_json.read_text())["resolved"]["limit"] == {"by": "first", "n": 4}


def test_a_run_from_before_limit_by_resumes_with_the_first_questions(testkit, tmp_path):
    """A run.json without limit_by was written when --limit kept the first N: a resume keeps them."""
    from memplug.api import resolve_spec

    path = Evaluation(RunSpec(agent="lookup", dataset="counting", limit=4, limit_by="first")).run(output=tmp_path)
    stored = json.loads((path / "run.json").read_text())
    del stored["spec"]["limit_by"]
    (path / "run.json").write_text(json.dumps(stored))
    spec = resolve_spec({}, resume=path)
    assert spec.limit_by == "first" and spec.differences(stored["spec"]) == []


def test_a_bad_limit_by_is_refused(testkit):
    from memplug.errors import MemplugError

    with pytest.raises(MemplugError, match="--limit-by 'random': use one of stratified, first"):
        Evaluation(RunSpec(agent="lookup", dataset="counting", limit_by="random"))


def test_limit_by_without_limit_is_refused(tmp_path):
    """`--limit-by first` alone was ignored: every question was asked, exit 0."""
    from inprocess import memplug_main

    done = memplug_main(["eval", "--agent", "bm25", "--dataset", "memsim", "--limit-by", "first"], cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "memplug: error: --limit-by first draws the questions of --limit N: give --limit, or drop it"
    ]
    assert not (tmp_path / "runs").exists()
