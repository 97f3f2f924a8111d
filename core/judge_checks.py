"""Judge checks: how far an LLM judge can be trusted where the gold is objective (`memplug judge-check`).

A judged score is only as good as the judge. On multiple-choice questions (scored by
`accuracy`) and short exact-answer questions (scored by `em`, or `--exact subem`) the
right verdict is known without a judge, so the judge's verdicts can be compared with
exact scoring: agreement and Cohen's kappa. With two judges, their mutual agreement is
measured on every answered question, open-ended ones included. Results are printed and
merged into ``judge-check.json`` in the run directory, where `memplug report` finds them.

``--leniency`` asks each judge about a set shipped with memplug (``judge_leniency.json``):
per benchmark, answers a judge should reject (vague, hedged, plausible but wrong) and
correct controls it should accept; the share of the former it accepts is its leniency.
It needs no run. ``--judge-prompt NAME`` judges with the judge called NAME (memplug,
longmemeval, locomo-j, a plugin's) instead of each question's dataset's.
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timezone
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from memplug.errors import MemplugError
from memplug.files import read_json
from memplug.plugins import Plugins, get_plugins
from memplug.protocols import MetricConfig
from memplug.record import QuestionRecord
from memplug.rescoring import build_metrics, dataset_info, make_llm, score_records, scorable
from memplug.results import RunDir, write_json_atomic
from memplug.stats import agreement, cohen_kappa
from memplug.text import tokens

if TYPE_CHECKING:
    from memplug.llm import LLM


#: a judge verdict (a score in [0, 1]) counts as "correct" from this value on
VERDICT_THRESHOLD = 0.5


def question_kind(record: QuestionRecord, language: str, max_answer_words: int) -> str | None:
    """ "multiple_choice", "exact_answer" (every gold answer is short), or None (open-ended)."""
    if record.choices and record.correct_choice is not None:
        return "multiple_choice"
    gold = record.gold
    if gold and all(0 < len(tokens(g, language)) <= max_answer_words for g in gold):
        return "exact_answer"
    return None


def compare(x: list[int], y: list[int]) -> dict[str, Any]:
    """n, agreement, Cohen's kappa (None when undefined) and the 2x2 table of two 0/1 raters."""
    if not x:
        return {"n": 0, "agreement": None, "kappa": None, "table": None}
    kappa = cohen_kappa(x, y)
    table = {f"{a}{b}": sum(1 for p, q in zip(x, y) if (p, q) == (a, b)) for a in (1, 0) for b in (1, 0)}
    return {"n": len(x), "agreement": agreement(x, y), "kappa": None if math.isnan(kappa) else kappa, "table": table}


def judge_llms(judges: list[str], api_base: str | None, cache: bool) -> dict[str, "LLM"]:
    """{model: its client} for every judge, each checked as `memplug eval` checks its judge
    (:func:`memplug.rescoring.make_llm`): a missing key or an endpoint that does not answer
    stops the check before any judge is called."""
    return {model: make_llm(model, api_base, cache) for model in judges}


def check_run(
    path: Path,
    judges: list[str],
    exact: str = "em",
    max_answer_words: int = 5,
    api_base: str | None = None,
    cache: bool = True,
    plugins: Plugins | None = None,
    judge_prompt: str | None = None,
) -> dict[str, Any]:
    """Judge the run's answers with each model and compare with exact scoring (and each other)."""
    if not judges:
        raise MemplugError("judge-check needs at least one --judge MODEL")
    if len(set(judges)) != len(judges):
        raise MemplugError(f"the same judge is given twice: {', '.join(judges)}")
    plugins = plugins or get_plugins()
    run = RunDir(path).check()
    stored = run.info()
    info = dataset_info(stored.spec, plugins)
    # every judge's model checked (key, endpoint) before the first call of any
    llms = judge_llms(judges, api_base or stored.api_base, cache)
    answered = [r for r in run.records() if scorable(r)]
    kinds = {r.key: question_kind(r, info.language, max_answer_words) for r in answered}
    objective = [r for r in answered if kinds[r.key]]
    if not objective and len(judges) == 1:
        raise MemplugError(f"{path}: no multiple-choice or exact-answer question to check the judge on")
    # two or more judges are also compared with each other on open-ended questions
    to_judge = answered if len(judges) > 1 else objective
    config = MetricConfig(top_k=stored.top_k, language=info.language)
    accuracy, exact_metric = build_metrics(["accuracy", exact], config, plugins)
    exact_scores = asyncio.run(score_records(objective, [accuracy, exact_metric], info.language))
    truth = {
        r.key: s["accuracy"] if kinds[r.key] == "multiple_choice" else s[exact_metric.name]
        for r, s in zip(objective, exact_scores)
        if s is not None
    }  # all are: answered

    verdicts: dict[str, dict[tuple[str, str], int]] = {}
    #: per judge, the objective questions its replies gave no verdict on (left out of its figures)
    unreadable: dict[str, int] = {}
    described: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    for model in judges:
        llm = llms[model]
        (judge,) = build_metrics(
            ["judge"], MetricConfig(top_k=config.top_k, language=info.language, judge=llm), plugins
        )
        if judge_prompt:
            judge.force(judge_prompt, "--judge-prompt")
        scores = asyncio.run(score_records(to_judge, [judge], info.language))
        verdicts[model] = {
            r.key: int(s["judge"] >= VERDICT_THRESHOLD)
            for r, s in zip(to_judge, scores)
            if s is not None and s["judge"] is not None
        }
        described[model] = judge.describe()
        usage[model] = llm.usage.as_dict()
        unreadable[model] = sum(1 for r in objective if r.key not in verdicts[model])

    result: dict[str, Any] = {
        "checked_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "exact_metric": exact_metric.name,
        "max_answer_words": max_answer_words,
        "verdict_threshold": VERDICT_THRESHOLD,
        "questions": {
            "answered": len(answered),
            "multiple_choice": sum(v == "multiple_choice" for v in kinds.values()),
            "exact_answer": sum(v == "exact_answer" for v in kinds.values()),
        },
        "judges": {},
        "between_judges": [],
    }
    for model in judges:
        v = verdicts[model]
        by_kind = {}
        for kind in ("multiple_choice", "exact_answer", None):
            ids = [k for k in truth if k in v and (kind is None or kinds[k] == kind)]
            by_kind[kind or "all"] = compare([v[k] for k in ids], [int(truth[k]) for k in ids])
        disagree = [k for k in truth if k in v and v[k] != int(truth[k])]
        result["judges"][model] = {
            "judge": described[model],
            "vs_exact": by_kind,
            "unreadable": unreadable[model],
            "disagreements": [{"sample_id": s, "question_id": q} for s, q in disagree],
            "llm": usage[model],
        }
    for a, b in combinations(judges, 2):
        ids = [k for k in verdicts[a] if k in verdicts[b]]
        result["between_judges"].append(
            {"judges": [a, b], **compare([verdicts[a][k] for k in ids], [verdicts[b][k] for k in ids])}
        )
    merge_into_run(run.judge_check, result)
    return result


LENIENCY_FILE = Path(__file__).resolve().parent / "judge_leniency.json"
#: the kinds of answer a judge should reject; "correct" answers are controls it should accept
REJECT = ("vague", "hedged", "wrong")


def leniency_set() -> dict[str, Any]:
    """The shipped set: {"version", "benchmarks": {name: {"judge", "items": [...]}}}."""
    leniency: dict[str, Any] = read_json(LENIENCY_FILE)
    return leniency


def leniency_questions(block: dict[str, Any]) -> list[tuple[dict[str, Any], Any]]:
    """(item, ScoreContext) for every item of one benchmark's block."""
    from memplug.models import Question
    from memplug.protocols import ScoreContext

    out = []
    for item in block["items"]:
        meta = {"answer": item["gold"], "question_type": item.get("question_type", "")}
        question = Question(
            item["id"], item["question"], (item["gold"],), category=item.get("question_type", "default"), meta=meta
        )
        out.append((item, ScoreContext(question, item["answer"], ())))
    return out


def check_leniency(
    judges: list[str],
    benchmarks: list[str] | None = None,
    judge_prompt: str | None = None,
    api_base: str | None = None,
    cache: bool = True,
    llms: Mapping[str, "LLM"] | None = None,
) -> dict[str, Any]:
    """Per judge model and benchmark: the share of vague, hedged and wrong answers the judge
    accepts (its leniency), per kind, and the share of correct controls it accepts.
    ``llms``: the judges' clients from :func:`judge_llms`, when the caller checked them earlier."""
    from memplug.judge import Judge

    if not judges:
        raise MemplugError("judge-check --leniency needs at least one --judge MODEL")
    data = leniency_set()
    known = list(data["benchmarks"])
    chosen = benchmarks or known
    unknown = [b for b in chosen if b not in known]
    if unknown:
        raise MemplugError(f"--benchmark {unknown[0]!r}: the leniency set has {', '.join(known)}")
    if llms is None:
        llms = judge_llms(judges, api_base, cache)
    result: dict[str, Any] = {"set_version": data["version"], "verdict_threshold": VERDICT_THRESHOLD, "judges": {}}
    for model in judges:
        llm = llms[model]
        per: dict[str, Any] = {}
        for bench in chosen:
            block = data["benchmarks"][bench]
            judge = Judge(MetricConfig(judge=llm), judge=judge_prompt or block["judge"])
            pairs = leniency_questions(block)

            async def all_scores(j: Any = judge, ps: list[tuple[dict[str, Any], Any]] = pairs) -> list[float | None]:
                return list(await asyncio.gather(*(j.score(ctx) for _, ctx in ps)))

            scores = asyncio.run(all_scores())
            accepted = {item["id"]: s >= VERDICT_THRESHOLD for (item, _), s in zip(pairs, scores) if s is not None}
            kinds = sorted({item["kind"] for item, _ in pairs})
            rate = {}
            for kind in kinds:
                ids = [item["id"] for item, _ in pairs if item["kind"] == kind and item["id"] in accepted]
                rate[kind] = sum(accepted[i] for i in ids) / len(ids) if ids else None
            bad = [item["id"] for item, _ in pairs if item["kind"] in REJECT and item["id"] in accepted]
            per[bench] = {
                "judge": judge.judge_name,
                "prompt_sha256": judge.prompt_sha256,
                "n": len(pairs),
                "unreadable": sum(s is None for s in scores),
                "leniency": sum(accepted[i] for i in bad) / len(bad) if bad else None,
                "control_acceptance": rate.get("correct"),
                "accepted": rate,
                "accepted_wrong": [i for i in bad if accepted[i]],
            }
        result["judges"][model] = {"benchmarks": per, "llm": llm.usage.as_dict()}
    return result


def merge_into_run(path: Path, result: dict[str, Any]) -> None:
    """Keep earlier checks of other judges; a judge checked again replaces its old entry."""
    stored = read_json(path) if path.is_file() else {"judges": {}, "between_judges": []}
    if "leniency" in result:
        stored["leniency"] = {**stored.get("leniency", {}), **result["leniency"]}
        result = {k: v for k, v in result.items() if k != "leniency"}
        if not result.get("judges") and not result.get("between_judges"):
            write_json_atomic(path, stored)
            return
    stored.setdefault("judges", {}).update(result["judges"])
    stored.setdefault("between_judges", [])
    pairs = {tuple(p["judges"]) for p in result["between_judges"]}
    stored["between_judges"] = [p for p in stored["between_judges"] if tuple(p["judges"]) not in pairs]
    stored["between_judges"] += result["between_judges"]
    stored.update({k: v for k, v in result.items() if k not in ("judges", "between_judges")})
    write_json_atomic(path, stored)
