"""memplug.stats against cases whose answer is known in closed form or by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memplug import stats
from memplug.stats import (
    agreement,
    bootstrap_ci,
    cohen_kappa,
    mcnemar_exact,
    paired_comparison,
    repeat_summary,
    summarize_metric,
)


@pytest.fixture(params=["multinomial", "indices"])
def resampling_path(request, monkeypatch):
    """Force each way of drawing replicates in turn (they must agree in law)."""
    monkeypatch.setattr(stats, "_CLUSTERS_PER_KIND", 1 if request.param == "multinomial" else 10**9)
    return request.param


def _bernoulli(n: int, p: float) -> list[float]:
    ones = round(n * p)
    return [1.0] * ones + [0.0] * (n - ones)


def test_bernoulli_interval_matches_normal_closed_form(resampling_path):
    # n = 400, p = 0.3: p +/- 1.96 * sqrt(0.3 * 0.7 / 400) = 0.3 +/- 0.0449
    n, p = 400, 0.3
    half = 1.96 * math.sqrt(p * (1 - p) / n)
    low, high = bootstrap_ci(_bernoulli(n, p), resamples=10_000, seed=1)
    assert low == pytest.approx(p - half, abs=0.01)
    assert high == pytest.approx(p + half, abs=0.01)


def test_correlated_clusters_widen_the_interval(resampling_path):
    # 20 samples of 20 questions; a sample is answered all right (6 samples) or all wrong
    # (14): really 20 observations, so the interval is p +/- 1.96 * sqrt(p(1-p)/20).
    values = [1.0] * (6 * 20) + [0.0] * (14 * 20)
    clusters = [i // 20 for i in range(400)]
    iid_low, iid_high = bootstrap_ci(values, resamples=5000)
    low, high = bootstrap_ci(values, clusters, resamples=5000)
    assert high - low > 3 * (iid_high - iid_low)
    half = 1.96 * math.sqrt(0.3 * 0.7 / 20)
    assert low == pytest.approx(0.3 - half, abs=0.05)
    assert high == pytest.approx(0.3 + half, abs=0.05)


def test_singleton_clusters_are_the_plain_bootstrap():
    values = list(np.random.default_rng(3).random(200))
    assert bootstrap_ci(values, [f"s{i}" for i in range(200)]) == bootstrap_ci(values)


def test_unequal_cluster_sizes_weigh_questions_not_samples():
    # One sample of 90 right answers and nine samples of one wrong answer each: the mean
    # over questions is 0.9 and every replicate stays within [0, 1] around it.
    values = [1.0] * 90 + [0.0] * 9
    clusters = ["big"] * 90 + [f"small{i}" for i in range(9)]
    low, high = bootstrap_ci(values, clusters, resamples=2000)
    assert 0.0 <= low < 0.9 < high <= 1.0


def test_none_values_are_dropped_before_resampling():
    values = [1.0, None, 0.0, 1.0, None, 0.5]
    clusters = ["a", "a", "b", "b", "c", "c"]
    kept = [1.0, 0.0, 1.0, 0.5]
    assert bootstrap_ci(values, clusters) == bootstrap_ci(kept, ["a", "b", "b", "c"])


def test_deterministic_for_a_seed():
    values = list(np.random.default_rng(0).random(500))
    assert bootstrap_ci(values, seed=7) == bootstrap_ci(values, seed=7)
    assert bootstrap_ci(values, seed=7) != bootstrap_ci(values, seed=8)


def test_level_controls_the_width():
    values = _bernoulli(300, 0.4)
    low90, high90 = bootstrap_ci(values, level=0.90)
    low99, high99 = bootstrap_ci(values, level=0.99)
    assert low99 < low90 < 0.4 < high90 < high99


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: bootstrap_ci([None, None]), "no applicable values"),
        (lambda: bootstrap_ci([1.0, math.nan]), "NaN"),
        (lambda: bootstrap_ci([1.0, 0.0], ["a"]), "2 values but 1 cluster ids"),
        (lambda: bootstrap_ci([1.0], level=1.5), "level"),
        (lambda: bootstrap_ci([1.0], resamples=0), "resamples"),
    ],
)
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_summarize_metric():
    summary = summarize_metric([1.0, 0.0, None, 1.0, 1.0], ["a", "a", "b", "b", "c"])
    assert summary["mean"] == 0.75 and summary["n"] == 4
    low, high = summary["ci"]
    assert 0.0 <= low <= 0.75 <= high <= 1.0
    assert summarize_metric([None], ["a"]) == {"mean": None, "n": 0, "ci": None}


# --- paired comparison -----------------------------------------------------------------


def test_identical_runs_differ_by_nothing():
    scores = {f"q{i}": float(i % 3 == 0) for i in range(90)}
    result = paired_comparison(scores, dict(scores))
    assert result["diff"] == 0.0 and result["ci"] == [0.0, 0.0]
    assert result["p_value"] == 1.0 and result["p_bootstrap"] == 1.0
    assert result["test"] == "mcnemar-exact" and result["a_only"] == result["b_only"] == 0

    graded = {f"q{i}": i / 90 for i in range(90)}
    result = paired_comparison(graded, dict(graded))
    assert result["test"] == "paired-bootstrap"
    assert result["diff"] == 0.0 and result["p_value"] == 1.0


def test_a_right_wherever_b_is_wrong():
    a = {f"q{i}": 1.0 for i in range(50)}
    b = {f"q{i}": 0.0 for i in range(50)}
    result = paired_comparison(a, b, resamples=999)
    assert result["diff"] == 1.0 and result["n"] == 50
    assert result["a_only"] == 50 and result["b_only"] == 0
    assert result["p_value"] == pytest.approx(2 / 2**50)
    assert result["p_bootstrap"] == pytest.approx(1 / 1000)  # the smallest 999 resamples can give


def test_graded_scores_with_a_real_difference():
    rng = np.random.default_rng(5)
    base = rng.random(300)
    a = {f"q{i}": float(v) for i, v in enumerate(np.clip(base + 0.1 + rng.normal(0, 0.05, 300), 0, 1))}
    b = {f"q{i}": float(v) for i, v in enumerate(base)}
    result = paired_comparison(a, b, resamples=2000)
    expected = np.mean([a[q] - b[q] for q in a])
    assert result["test"] == "paired-bootstrap"
    assert result["diff"] == pytest.approx(expected)
    assert 0 < result["ci"][0] < expected < result["ci"][1]
    assert result["p_value"] < 0.001


def test_no_real_difference_gives_a_large_p_value():
    rng = np.random.default_rng(11)
    a = {f"q{i}": float(v) for i, v in enumerate(rng.random(400))}
    b = {f"q{i}": float(v) for i, v in enumerate(rng.random(400))}
    result = paired_comparison(a, b)
    assert result["ci"][0] < 0 < result["ci"][1]
    assert result["p_value"] > 0.05


def test_only_questions_both_runs_scored_are_compared():
    a = {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": None}
    b = {"q1": 0.0, "q2": 0.0, "q4": 1.0, "q5": 1.0}
    result = paired_comparison(a, b)
    assert result["n"] == 2 and result["mean_a"] == 0.5 and result["mean_b"] == 0.0
    with pytest.raises(ValueError, match="no scored question in common"):
        paired_comparison({"q1": 1.0}, {"q2": 1.0})


def test_paired_interval_is_cluster_resampled():
    # 10 samples of 10 questions; A beats B on a whole sample or not at all.
    a = {f"q{i}": 1.0 if (i // 10) < 4 else 0.0 for i in range(100)}
    b = {f"q{i}": 0.0 for i in range(100)}
    clusters = {f"q{i}": i // 10 for i in range(100)}
    plain = paired_comparison(a, b)
    clustered = paired_comparison(a, b, clusters)
    assert clustered["diff"] == plain["diff"] == 0.4
    width = clustered["ci"][1] - clustered["ci"][0]
    assert width > 2 * (plain["ci"][1] - plain["ci"][0])


def test_mcnemar_hand_worked():
    # Discordant pairs: A alone right on 3 questions, B alone right on 11. Under the null
    # the smaller count is Binomial(14, 1/2):
    #   P(X <= 3) = (C(14,0) + C(14,1) + C(14,2) + C(14,3)) / 2^14 = (1 + 14 + 91 + 364) / 16384
    #             = 470 / 16384 = 0.028686...,  two-sided p = 2 * 470 / 16384 = 0.057373...
    assert mcnemar_exact(3, 11) == pytest.approx(940 / 16384)
    assert mcnemar_exact(11, 3) == pytest.approx(940 / 16384)
    # 1 against 9: 2 * (1 + 10) / 1024 = 0.021484375
    assert mcnemar_exact(1, 9) == 0.021484375
    assert mcnemar_exact(5, 5) == 1.0  # doubled tail above 1 is capped
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_through_paired_comparison():
    # A 2x2 table over 30 questions: both right 10, A only 3, B only 11, both wrong 6.
    rows = [(1, 1)] * 10 + [(1, 0)] * 3 + [(0, 1)] * 11 + [(0, 0)] * 6
    a = {f"q{i}": float(x) for i, (x, _) in enumerate(rows)}
    b = {f"q{i}": float(y) for i, (_, y) in enumerate(rows)}
    result = paired_comparison(a, b)
    assert (result["a_only"], result["b_only"]) == (3, 11)
    assert result["diff"] == pytest.approx((13 - 21) / 30)
    assert result["p_value"] == pytest.approx(940 / 16384)


# --- agreement ---------------------------------------------------------------------------


def test_cohen_kappa_hand_worked():
    # 50 items rated yes/no by two raters:
    #                 y: yes   y: no
    #     x: yes         20       5     (x says yes 25 times)
    #     x: no          10      15     (x says no 25 times)
    # y says yes 30 times, no 20 times.
    # observed agreement p_o = (20 + 15) / 50 = 0.70
    # chance agreement  p_e = (25/50)(30/50) + (25/50)(20/50) = 0.30 + 0.20 = 0.50
    # kappa = (0.70 - 0.50) / (1 - 0.50) = 0.40
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    x = [p for p, _ in pairs]
    y = [q for _, q in pairs]
    assert agreement(x, y) == pytest.approx(0.70)
    assert cohen_kappa(x, y) == pytest.approx(0.40)
    assert cohen_kappa(y, x) == pytest.approx(0.40)


def test_cohen_kappa_edges():
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == 1.0
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))  # one label throughout: undefined
    with pytest.raises(ValueError, match="3 labels against 2"):
        cohen_kappa([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="no labels"):
        agreement([], [])


def test_repeat_summary():
    summary = repeat_summary([0.5, 0.7, 0.6])
    assert summary["mean"] == pytest.approx(0.6)
    assert summary["std"] == pytest.approx(0.1)
    assert (summary["min"], summary["max"], summary["n"]) == (0.5, 0.7, 3)
    assert summary["values"] == [0.5, 0.7, 0.6]
    assert repeat_summary([0.4])["std"] == 0.0
