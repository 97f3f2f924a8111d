"""Why a question was missed (issue 29): the stage of each miss, recorded per question,
re-staged by rescore, printed by report and report --why.

Agents built to fail at one stage each run on MemSim, LoCoMo and FactConsolidation data:
one stores nothing, one stores everything and recalls at random, one recalls the evidence
and answers wrong; each miss must land in its stage.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from memplug import diagnosis
from memplug.diagnosis import Diagnosis, Evidence, Store
from memplug.hookspecs import hookimpl
from memplug.models import AgentQuestion, Chunk, Recall, Recalled, StoredItem
from memplug.protocols import AgentConfig
from memplug.record import QuestionRecord
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec


class _Amnesiac:
    """Stores nothing: every miss is ``not_stored``."""

    blocking = False

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        pass

    def ingest(self, chunk: Chunk) -> None:
        pass

    def stored(self) -> list[StoredItem]:
        return []

    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(())

    def close(self) -> None:
        pass


class _Scatter(_Amnesiac):
    """Stores every message and recalls K of them at random (seeded): misses are
    ``not_recalled`` unless chance brought the evidence back."""

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.messages: list[Recalled] = []
        self.k, self.rng = config.top_k, random.Random(f"{config.seed}:{config.sample_id}")

    def ingest(self, chunk: Chunk) -> None:
        self.messages += [Recalled(m.text, None, (m.id,)) for m in chunk.messages]

    def stored(self) -> list[StoredItem]:
        return [StoredItem(m.text, None, m.message_ids) for m in self.messages]

    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(tuple(self.rng.sample(self.messages, min(self.k, len(self.messages)))))


class _Misreader(_Scatter):
    """Recalls exactly the evidence (the reference channel, as `oracle`) and answers wrong: ``misread``."""

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        super().__init__(config, workdir)
        assert config.reference is not None
        self.reference = config.reference

    def recall(self, question: AgentQuestion) -> Recall:
        targets = set(self.reference.targets(question.id))
        return Recall(tuple(m for m in self.messages if m.message_ids[0] in targets), answer="zzz qqq")


class _Rewriter(_Amnesiac):
    """Stores each message rewritten, without its source ids (as Mem0 does with an LLM):
    "My cousin's phone number is 2018939428. (place: …)" -> "User: cousin's phone number 2018939428".
    Recalls nothing, so a miss whose evidence it rewrote is ``not_recalled``, by token overlap."""

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.items: list[StoredItem] = []

    def ingest(self, chunk: Chunk) -> None:
        for m in chunk.messages:
            kept = [
                w for w in m.text.split(" (place:")[0].rstrip(".").split() if w.lower() not in diagnosis.FUNCTION_WORDS
            ]
            self.items.append(StoredItem("User: " + " ".join(kept), f"mem-{m.id}"))

    def stored(self) -> list[StoredItem]:
        return self.items


@pytest.fixture
def failing_agents(plugins):
    class Plugin:
        @hookimpl
        def register_agents(self, register):
            register("amnesiac", _Amnesiac)
            register("scatter", _Scatter)
            register("misreader", _Misreader, reference=True)
            register("rewriter", _Rewriter)

    plugin = Plugin()
    plugins.register(plugin, name="diagnosis-test")
    yield
    plugins.unregister(plugin)


def _datasets(shared_data: Path) -> dict[str, dict[str, Any]]:
    return {
        "memsim": {"dataset": "memsim", "dataset_options": {"n": "12"}, "top_k": 1},
        "locomo": {
            "dataset": "locomo",
            "data": str(shared_data / "locomo" / "locomo_conv26.json"),
            "limit": 40,
            "dataset_options": {"categories": "1,2,3,4"},
        },
        # the generator: the release names no target message (FactConsolidation's rows say which
        # answer is right, not which fact holds it)
        "factcon": {"dataset": "factcon", "dataset_options": {"tokens": "6000", "questions": "12"}, "top_k": 1},
    }


def _run(tmp_path: Path, agent: str, **spec: Any) -> RunDir:
    return RunDir(Evaluation(RunSpec(agent=agent, **spec)).run(output=tmp_path / "runs"))


def _hits(record: QuestionRecord, items: Any) -> bool:
    return any(set(i.message_ids) & set(record.targets) for i in items)


@pytest.mark.parametrize("data", ["memsim", "locomo", "factcon"])
def test_each_failing_agent_lands_in_its_stage(failing_agents, shared_data, tmp_path, data):
    spec = _datasets(shared_data)[data]
    stages: dict[str, list[str]] = {}
    for agent in ("amnesiac", "scatter", "misreader"):
        rd = _run(tmp_path / agent, agent, **spec)
        records = [r for r in rd.records() if r.diagnosis is not None]
        assert records, f"{agent} on {data}: no question diagnosed"
        for r in records:
            d = r.diagnosis
            assert d is not None and d.rule == ("empty" if agent == "amnesiac" else "ids") and d.n_stored is not None
            assert (d.stage == "correct") == (d.score >= diagnosis.CORRECT_AT)
            if d.stage == "correct":
                continue
            if agent == "amnesiac":
                assert (d.stored, d.recalled, d.stage) == (False, False, "not_stored"), r.question_id
            elif agent == "scatter":
                assert d.stored is True, r.question_id  # everything is stored
                assert d.stage == ("misread" if _hits(r, r.recalled) else "not_recalled"), r.question_id
            else:
                assert d.stage == "misread" and d.recalled is True, r.question_id
        stages[agent] = [r.diagnosis.stage for r in records if r.diagnosis is not None]
        summary = rd.summary()
        assert summary.diagnosis is not None
        assert summary.diagnosis["overall"] == {s: stages[agent].count(s) for s in diagnosis.STAGES}
    # each agent's misses are mostly of its kind
    for agent, stage in (("amnesiac", "not_stored"), ("scatter", "not_recalled"), ("misreader", "misread")):
        wrong = [s for s in stages[agent] if s != "correct"]
        assert wrong and wrong.count(stage) / len(wrong) > 0.6, (agent, data, wrong)


def test_the_factcon_release_names_no_evidence_so_the_gold_rule_decides(failing_agents, shared_data, tmp_path):
    data = shared_data / "factconsolidation" / "factconsolidation_sh_6k.json"
    rd = _run(tmp_path, "scatter", dataset="factcon", data=str(data), limit=30, top_k=2)
    diagnosed = [r.diagnosis for r in rd.records() if r.diagnosis is not None]
    assert len(diagnosed) == 30 and all(d.rule == "gold" for d in diagnosed)
    wrong = [d for d in diagnosed if d.stage != "correct"]
    # the fact holding the gold answer beside the question's subject is in the store, rarely recalled
    assert [d.stage for d in wrong].count("not_recalled") / len(wrong) > 0.6
    held = next(d for d in wrong if d.stored)
    assert held.stored_items and held.evidence == []


def test_rewritten_memories_are_found_by_token_overlap(failing_agents, tmp_path):
    rd = _run(tmp_path, "rewriter", dataset="memsim", dataset_options={"n": "12"})
    diagnosed = [r.diagnosis for r in rd.records() if r.diagnosis is not None and r.diagnosis.stage != "correct"]
    assert diagnosed and all(d.rule == "overlap" for d in diagnosed)
    # the rewrites keep the evidence's words: stored, never recalled
    assert [d.stage for d in diagnosed].count("not_recalled") / len(diagnosed) > 0.8
    held = next(d for d in diagnosed if d.stored)
    assert held.stored_items and held.stored_items[0]["text"].startswith("User: ")
    assert held.stored_items[0]["message_ids"] == []
    # MemSim's generator knows the fact behind each message ("my cousin phone: 2018939428"):
    # the rewrites hold nearly all of them, and the conversation supports every rewrite
    memory = (rd.summary().diagnosis or {})["memory"]
    assert memory["points_recall"]["value"] > 0.8 and memory["points_recall"]["ci"] is not None
    assert memory["store_precision"]["value"] == 1.0


def _item(text: str, *ids: str) -> diagnosis.Item:
    return diagnosis.Item.of(text, ids, "en")


def test_overlap_and_gold_rules() -> None:
    ev = Evidence.of(
        ["m4"],
        ["My cousin's phone number is 2018939428. (place: Austin)"],
        ["2018939428"],
        "What is my cousin's phone number?",
        "en",
    )
    assert ev.held_by(_item("User: cousin phone number 2018939428")) == (True, "overlap")
    assert ev.held_by(_item("User likes tea and hiking in Austin")) == (False, "overlap")
    assert ev.held_by(_item("cousin phone number 2018939428", "m9")) == (False, "ids")
    # no target message: a sentence of an item holds the gold answer beside two words of the question
    gold = Evidence.of([], [], ["North America"], "Which continent is Indonesia located in?", "en")
    assert gold.held_by(_item("Indonesia is located in the continent of North America.")) == (True, "gold")
    assert not gold.held_by(_item("Canada is located in North America."))[0]
    assert gold.held_by(_item("1. Oslo is in Norway. 2. Indonesia is located in the continent of North America."))[0]
    # a chunk with the answer in one fact and the question's words in others does not hold it
    assert not gold.held_by(_item("1. Canada is located in North America. 2. Indonesia is located in Asia."))[0]
    # one shared word is chance, not a rewrite of the message
    assert not Evidence.of(["m1"], ["I adopted a cat"], [], "q", "en").held_by(_item("a cat sat"))[0]


def _record(**kw: Any) -> QuestionRecord:
    base: dict[str, Any] = dict(
        sample_id="s",
        question_id="q",
        category="c",
        question="What is my sister's job?",
        prediction="teacher",
        gold=["nurse"],
        targets=["m4"],
        scores={"em": 0.0},
    )
    return QuestionRecord(**{**base, **kw})


def test_stage_rules_at_the_edges() -> None:
    texts = {"m4": "My sister works as a nurse.", "m1": "I like tea."}
    conversation = diagnosis.Conversation(texts, "en")
    store = Store.of([{"text": texts["m1"], "message_ids": ["m1"]}, {"text": texts["m4"], "message_ids": ["m4"]}], "en")
    recalled = [Recalled(texts["m1"], 1.0, ("m1",))]
    d = diagnosis.diagnose(_record(recalled=recalled), "em", conversation, store, "en")
    assert d is not None and (d.stage, d.stored, d.recalled, d.rule) == ("not_recalled", True, False, "ids")
    assert d.evidence == [{"id": "m4", "text": texts["m4"]}] and d.stored_items[0]["message_ids"] == ["m4"]
    # no stored(): recalled evidence is still a misread, the rest is unknown
    seen = diagnosis.diagnose(_record(recalled=[Recalled(texts["m4"], 1.0, ("m4",))]), "em", conversation, None, "en")
    assert seen is not None and seen.stage == "misread" and seen.n_stored is None
    blind = diagnosis.diagnose(_record(recalled=recalled), "em", conversation, None, "en")
    assert blind is not None and blind.stage == "unknown" and "does not list" in (blind.why or "")
    # a listing cut short (stored.jsonl keeps 200 of more) cannot say "not stored"
    cut = Store.of([{"text": texts["m1"], "message_ids": ["m1"]}], "en", total=500)
    partial = diagnosis.diagnose(_record(recalled=recalled), "em", conversation, cut, "en")
    assert partial is not None and partial.stage == "unknown" and "listed more" in (partial.why or "")
    # an agent that answered itself and returned nothing: recall cannot be told from reading
    own = diagnosis.diagnose(_record(agent_answered=True), "em", conversation, store, "en")
    assert own is not None and own.stage == "unknown" and "answered itself" in (own.why or "")
    # no evidence, no gold: unknown; an error or an unscored question: no diagnosis
    bare = diagnosis.diagnose(_record(targets=[], gold=[]), "em", conversation, store, "en")
    assert bare is not None and bare.stage == "unknown" and bare.rule == "none"
    assert diagnosis.diagnose(_record(error="boom", scores={}), "em", conversation, store, "en") is None
    assert diagnosis.diagnose(_record(scores={"recall@5": 1.0}), "em", conversation, store, "en") is None
    # no target message, and no message holds the gold answer: the data cannot say
    absent = diagnosis.diagnose(
        _record(targets=[], gold=["a ferry pilot"], question="What work does my sister do now?"),
        "em",
        conversation,
        store,
        "en",
    )
    assert absent is not None and absent.stage == "unknown" and "holds the gold answer" in (absent.why or "")
    found = diagnosis.diagnose(
        _record(targets=[], question="What work does my sister do now?"), "em", conversation, Store.of([], "en"), "en"
    )
    assert found is not None and (found.rule, found.stage) == ("empty", "not_stored")
    # graded metrics: at least half right is correct
    assert diagnosis.diagnose(_record(scores={"f1": 0.5}), "f1", conversation, store, "en").stage == "correct"  # type: ignore[union-attr]


def test_items_that_name_their_sources_are_never_tokenised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ids rule decides from message ids alone: where every stored and recalled item names
    its sources, diagnosing tokenises no text (it was half of a warm rerun's CPU)."""
    texts = {"m4": "My sister works as a nurse.", "m1": "I like tea."}
    store = Store.of([{"text": t, "message_ids": [i]} for i, t in texts.items()], "en")
    conversation = diagnosis.Conversation(texts, "en")

    def refuse(*args: Any) -> Any:
        raise AssertionError(f"tokenised {args!r}")

    monkeypatch.setattr(diagnosis, "content_words", refuse)
    monkeypatch.setattr(diagnosis, "sentences", refuse)
    points = diagnosis.sample_points([{"text": "sister: nurse", "message_ids": ["m4"]}], store, conversation)
    assert points == {"points": 1, "held": 1, "items": 2, "supported": 2}
    d = diagnosis.diagnose(
        _record(recalled=[Recalled(texts["m4"], 1.0, ("m4",))]), "em", conversation, store, "en", points
    )
    assert d is not None and (d.stage, d.rule, d.stored, d.recalled) == ("misread", "ids", True, True)
    assert d.stored_items[0]["message_ids"] == ["m4"] and d.points == points


def test_memory_points_held_as_an_item_by_item_scan_finds_them() -> None:
    """sample_points looks a point's ids up in every message the store names, and overlaps it
    with the items naming none: the same count as scanning item by item (ids where both
    name messages, else overlap), for points and items with and without ids."""
    rng = random.Random(7)
    words = ["sister", "nurse", "leeds", "tea", "garden", "piano", "boston", "doctor", "paris", "chess"]
    texts = {f"m{i}": " ".join(rng.sample(words, 3)) for i in range(12)}
    for _ in range(40):
        listed = [
            {"text": " ".join(rng.sample(words, 3)), "message_ids": rng.sample(sorted(texts), rng.choice([0, 0, 1, 2]))}
            for _ in range(rng.randint(0, 6))
        ]
        store = Store.of(listed, "en")
        points = [
            {"text": " ".join(rng.sample(words, 2)), "message_ids": rng.sample(sorted(texts), rng.choice([0, 1]))}
            for _ in range(rng.randint(1, 6))
        ]

        def scan(point: dict[str, Any]) -> bool:
            ids = set(point["message_ids"])
            for item in store.items:
                if ids and item.message_ids:
                    if not ids.isdisjoint(item.message_ids):
                        return True
                    continue
                if diagnosis._overlaps(item.words, diagnosis.content_words(point["text"], "en")):
                    return True
            return False

        found = diagnosis.sample_points(points, store, diagnosis.Conversation(texts, "en"))
        assert found is not None and found["points"] == len(points)
        assert found["held"] == sum(map(scan, points))


def test_a_miss_shows_the_first_of_the_nearest_stored_items() -> None:
    texts = {"m4": "My sister works as a nurse in Leeds."}
    listed = [
        {"text": "I like tea.", "message_ids": ["m1"]},
        {"text": "My sister lives in Leeds.", "message_ids": ["m2"]},
        {"text": "My sister moved to Leeds.", "message_ids": ["m3"]},
    ]
    conversation = diagnosis.Conversation(texts, "en")
    d = diagnosis.diagnose(_record(), "em", conversation, Store.of(listed, "en"), "en")
    # m2 and m3 share two words with the evidence each: the first listed is shown
    assert d is not None and d.stored is False and [i["message_ids"] for i in d.stored_items] == [["m2"]]
    far = diagnosis.diagnose(_record(), "em", conversation, Store.of(listed[:1], "en"), "en")
    assert far is not None and far.stored_items == []


def test_records_round_trip_with_and_without_a_diagnosis() -> None:
    old = _record()
    assert "diagnosis" not in old.to_json()  # a run from before diagnoses is written as it was
    assert QuestionRecord.from_line(old.to_line()) == old
    new = _record(diagnosis=Diagnosis("misread", "ids", "em", 0.0, True, True, None, [{"id": "m4", "text": "x"}]))
    line = new.to_line()
    assert QuestionRecord.from_line(line) == new and QuestionRecord.from_line(line).to_line() == line


def test_wrong_line_gives_shares_of_the_wrong_answers() -> None:
    records = [
        _record(question_id=str(i), diagnosis=Diagnosis(stage, "ids", "accuracy", 0.0))
        for i, stage in enumerate(["correct"] * 5 + ["not_stored"] * 2 + ["not_recalled"] + ["misread"])
    ]
    tallied = diagnosis.tally(records)
    assert tallied is not None and tallied["overall"]["not_stored"] == 2 and tallied["metric"] == "accuracy"
    assert (
        diagnosis.wrong_line(tallied) == "wrong: 50% not stored, 25% not recalled, 25% misread "
        "(4 of 9 answers by accuracy)"
    )
    assert diagnosis.wrong_line(diagnosis.tally(records[:5]) or {}) is None  # nothing wrong: no line


def test_wrong_line_shares_add_up_to_100() -> None:
    # bm25 on LoCoMo conv-26: each share rounded alone printed 52% + 48% + 1% = 101%
    counts = {"correct": 7, "not_stored": 0, "not_recalled": 99, "misread": 92, "unknown": 1}
    line = diagnosis.wrong_line({"overall": counts, "metric": "locomo_f1"})
    assert line == "wrong: 52% not recalled, 48% misread, 0% unknown (192 of 199 answers by locomo_f1)"
    counts = {"not_stored": 1, "not_recalled": 1, "misread": 1}  # 33.3% each: the first gets the point
    assert diagnosis.wrong_line({"overall": counts, "metric": "em"}) == (
        "wrong: 34% not stored, 33% not recalled, 33% misread (3 of 3 answers by em)"
    )


def test_report_prints_the_line_and_why_lists_examples(failing_agents, tmp_path):
    from memplug.testing import run_cli

    rd = _run(tmp_path, "scatter", dataset="memsim", dataset_options={"n": "12"}, top_k=1)
    out = run_cli(["report", rd.path])
    assert out.exit_code == 0, out.stderr
    assert f"{rd.path.name}: wrong: " in out.stdout and "not recalled" in out.stdout
    why = run_cli(["report", "--why", rd.path, "--n", "1", "--category", "simple"])
    assert why.exit_code == 0, why.stderr
    text = why.stdout
    assert "== not recalled:" in text and "evidence: [" in text and "stored, holding it: [" in text
    assert "recalled 1  [" in text  # not holding the evidence: no star
    # one example per stage shown (--n 1), of the category asked for
    assert text.count("  question: ") == sum(1 for line in text.splitlines() if line.startswith("== "))
    assert "(simple): accuracy 0" in text and "(comparative)" not in text
    bad = run_cli(["report", "--why", rd.path, "--category", "nope"])
    assert bad.exit_code != 0 and "categories: " in bad.stderr
    # another view beside --why was left undone with exit 0 (`--html page.html` wrote nothing)
    page = tmp_path / "page.html"
    both = run_cli(["report", "--why", rd.path, "--html", page, "--json"])
    assert both.exit_code == 2 and not page.exists()
    assert "--why is a view of its own: run --json and --html without it" in both.stderr


def _strip_diagnoses(run: Path) -> None:
    """Make ``run`` look written before diagnoses: no record and no summary holds one."""
    lines = [json.loads(x) for x in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    (run / "samples.jsonl").write_text(
        "".join(json.dumps({k: v for k, v in x.items() if k != "diagnosis"}) + "\n" for x in lines), encoding="utf-8"
    )
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    del summary["diagnosis"]
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")


def test_rescore_restages_and_diagnoses_an_old_run(failing_agents, tmp_path):
    from memplug.rescoring import rescore_run

    rd = _run(tmp_path, "scatter", dataset="memsim", dataset_options={"n": "12"}, top_k=1)
    assert rescore_run(rd.path).changes["identical"]  # same scores, same stages
    # a judge that finds every answer right: each miss re-staged as correct, its facts kept
    records = rd.records()
    for r in records:
        if r.diagnosis is not None:
            r.scores["accuracy"] = 1.0
            restaged = diagnosis.restage(r, "accuracy", None, "en")
            assert restaged is not None and restaged.stage == "correct"
            assert (restaged.stored, restaged.recalled) == (r.diagnosis.stored, r.diagnosis.recalled)
    # a run from before diagnoses is rescored as it was; --diagnose adds them from stored.jsonl
    # and the recalled items, as the run would have
    stages = {r.key: r.diagnosis.stage for r in rd.records() if r.diagnosis is not None}
    _strip_diagnoses(rd.path)
    assert rescore_run(rd.path).changes["identical"]
    result = rescore_run(rd.path, diagnose=True)
    again = [QuestionRecord.from_line(x) for x in result.samples_path.read_bytes().splitlines()]
    assert {r.key: r.diagnosis.stage for r in again if r.diagnosis is not None} == stages
    assert all(r.diagnosis.evidence == [] for r in again if r.diagnosis is not None)  # texts were not kept
    assert json.loads(result.summary_path.read_text())["diagnosis"]["overall"]["not_recalled"] > 0


def test_the_html_page_draws_where_answers_were_lost(failing_agents, tmp_path):
    from memplug.htmlreport import render_html

    runs = [
        _run(tmp_path / a, a, dataset="memsim", dataset_options={"n": "6"}, top_k=1).path
        for a in ("amnesiac", "misreader")
    ]
    page = render_html(runs)
    assert 'data-chart="stages-memsim"' in page
    # a bar segment per run and category holding answers of that stage: all of the amnesiac's
    # answers were lost at storage (overall and 5 categories: the extractive reader does not
    # count, so aggregative is unscored), all of the misreader's at reading (overall and 6)
    assert page.count("-mark-not_stored-") == 6 and page.count("-mark-misread-") == 7
    assert "-mark-correct-" not in page
    assert 'data-stage="not_stored"' in page and 'data-stage="misread"' in page
    # the memory measures beside the scores: the amnesiac kept nothing, the misreader recalled everything
    assert page.count("<tr data-memory=") == 2 and ">extraction</th>" in page and ">reading</th>" in page


def test_a_changed_fact_answered_with_its_stale_value() -> None:
    texts = {
        "c0": "1. Indonesia is located in the continent of Asia.",
        "c1": "2. Indonesia is located in the continent of North America.",
    }
    store = Store.of([{"text": t, "message_ids": [i]} for i, t in texts.items()], "en")
    asked = dict(
        question="Which continent is Indonesia located in?",
        gold=["North America"],
        targets=["c1"],
        question_meta={diagnosis.STALE_KEY: "Asia"},
        recalled=[Recalled(texts["c0"], 1.0, ("c0",))],
    )
    stale = diagnosis.diagnose(
        _record(prediction="Asia", scores={"subem": 0.0}, **asked),
        "subem",
        diagnosis.Conversation(texts, "en"),
        store,
        "en",
    )
    assert stale is not None and stale.stage == "not_recalled"
    assert stale.update == {"answer": "stale", "stale_stored": True}
    # a store that replaced the old value, an answer with the new one
    fresh = diagnosis.diagnose(
        _record(prediction="North America", scores={"subem": 1.0}, **asked),
        "subem",
        None,
        Store.of([{"text": texts["c1"], "message_ids": ["c1"]}], "en"),
        "en",
    )
    assert fresh is not None and fresh.update == {"answer": "new", "stale_stored": False}
    # rescored as right, the stale answer's update is re-derived, its store's fact kept
    record = _record(prediction="Asia", scores={"subem": 1.0}, diagnosis=stale, **asked)
    assert diagnosis.restage(record, "subem", None, "en").update == {"answer": "new", "stale_stored": True}  # type: ignore[union-attr]
    # a question about a fact that never changed has no update
    assert diagnosis.diagnose(_record(**{**asked, "question_meta": {}}), "em", None, store, "en").update is None  # type: ignore[union-attr]


def test_memory_measures_have_intervals_over_samples() -> None:
    def rec(sample: str, stage: str, stored: bool, recalled: bool, answer: str | None = None) -> QuestionRecord:
        update = {"answer": answer, "stale_stored": True} if answer else None
        return _record(
            sample_id=sample,
            question_id=f"{sample}-{stage}-{answer}",
            diagnosis=Diagnosis(stage, "ids", "em", 0.0, stored, recalled, update=update),
        )

    records = [
        r
        for s in ("a", "b", "c")
        for r in (
            rec(s, "not_stored", False, False),
            rec(s, "not_recalled", True, False),
            rec(s, "misread", True, True, "stale"),
            rec(s, "correct", True, True, "new"),
        )
    ]
    memory = diagnosis.tally(records)["memory"]  # type: ignore[index]
    assert memory["extraction"]["value"] == 0.75 and memory["extraction"]["n"] == 12
    assert memory["retrieval"]["value"] == pytest.approx(2 / 3) and memory["retrieval"]["n"] == 9
    assert memory["reading"]["value"] == 0.5 and memory["reading"]["n"] == 6
    assert memory["update_accuracy"]["value"] == 0.5 and memory["stale_answer"]["value"] == 0.5
    assert memory["stale_kept"]["value"] == 1.0
    assert memory["extraction"]["ci"] == [0.75, 0.75]  # every sample alike: no spread
    one = diagnosis.tally(records[:4])["memory"]  # type: ignore[index]
    assert one["extraction"]["ci"] is None and one["extraction"]["na"] == "1 sample"
    line = diagnosis.memory_line({"memory": memory})
    assert line is not None and line.startswith("memory: extraction 0.750 [0.75, 0.75] (n 12), retrieval 0.667")


def test_factcon_generator_runs_report_update_accuracy(failing_agents, tmp_path):
    rd = _run(
        tmp_path, "scatter", dataset="factcon", dataset_options={"tokens": "6000", "questions": "12", "n": "2"}, top_k=1
    )
    records = rd.records()
    edited = [r for r in records if r.diagnosis is not None and diagnosis.stale_value(r)]
    assert edited and all(r.diagnosis.update is not None for r in edited)  # type: ignore[union-attr]
    # scatter stores every chunk: the stale fact is still there
    assert all(r.diagnosis.update["stale_stored"] for r in edited)  # type: ignore[union-attr,index]
    memory = (rd.summary().diagnosis or {})["memory"]
    assert memory["update_accuracy"]["n"] == len(edited) and memory["stale_kept"]["value"] == 1.0
    assert memory["extraction"]["value"] == 1.0 and memory["extraction"]["ci"] == [1.0, 1.0]
    # the final value of every subject and relation is a gold point, in the chunk of its fact
    facts = {r.sample_id: r.diagnosis.points for r in records if r.diagnosis is not None}
    assert len(facts) == 2 and all(p is not None and p["held"] == p["points"] > 20 for p in facts.values())
    assert memory["points_recall"]["value"] == 1.0


def test_locomo_observations_measure_what_was_stored(failing_agents, shared_data, tmp_path):
    spec = _datasets(shared_data)["locomo"]
    measures = {}
    for agent in ("amnesiac", "scatter", "rewriter"):
        rd = _run(tmp_path / agent, agent, **spec)
        points = {r.diagnosis.points["points"] for r in rd.records() if r.diagnosis and r.diagnosis.points}
        assert points == {184}  # conv-26's observations, all citing a turn
        measures[agent] = (rd.summary().diagnosis or {})["memory"]
    assert measures["amnesiac"]["points_recall"]["value"] == 0.0 and "store_precision" not in measures["amnesiac"]
    # every turn stored with its id: every observation's turn is held, every item is a turn
    assert (
        measures["scatter"]["points_recall"]["value"] == 1.0 and measures["scatter"]["store_precision"]["value"] == 1.0
    )
    # rewrites name no turn: held by word overlap only, some observations lost; each rewrite is its turn's words
    assert 0.0 < measures["rewriter"]["points_recall"]["value"] < 1.0
    assert (
        measures["rewriter"]["store_precision"]["value"] == 1.0 and measures["rewriter"]["store_precision"]["n"] == 419
    )


def test_with_a_judge_the_judge_decides_for_rewritten_items(failing_agents, openai_stub, tmp_path):
    import re

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if "Memory item:" in prompt:  # the storage question: yes when the item holds the gold answer
            gold = re.search(r"^Gold answer: (.*)$", prompt, re.M).group(1)  # type: ignore[union-attr]
            item = prompt.split("Memory item:\n", 1)[1]
            return "yes" if gold.lower() in item.lower() else "no"
        return json.dumps({"correct": False})  # the answer judge: every answer wrong

    openai_stub.reply = reply
    rd = _run(
        tmp_path,
        "rewriter",
        dataset="memsim",
        dataset_options={"n": "6"},
        judge="openai/stub-judge",
        api_base=openai_stub.base_url,
    )
    resolved = rd.info().resolved["diagnosis"]
    assert resolved == {"items_without_sources": "judge", "judge_prompt_sha256": diagnosis.JUDGE_PROMPT_SHA256}
    asked = [r for r in openai_stub.chat_requests if "Memory item:" in r["messages"][-1]["content"]]
    records = [r for r in rd.records() if r.diagnosis is not None]
    assert records and all(r.diagnosis.rule == "judge" and r.diagnosis.metric == "judge" for r in records)  # type: ignore[union-attr]
    assert 0 < len(asked) <= diagnosis.JUDGE_STORED * len(records)  # the nearest stored items only
    for r in records:
        d = r.diagnosis
        assert d is not None and d.recalled is False  # the rewriter recalls nothing
        held = any(g.lower() in i["text"].lower() for g in r.gold for i in d.stored_items)
        assert d.stored == held and d.stage == ("not_recalled" if held else "not_stored")
        assert r.usage is not None and r.usage.calls + r.usage.cache_hits >= 2  # the answer's verdict and the storage's
    assert {r.diagnosis.stage for r in records} == {"not_recalled", "not_stored"}  # type: ignore[union-attr]


def test_a_replayed_run_keeps_what_the_source_agent_stored(failing_agents, tmp_path):
    spec: dict[str, Any] = {"dataset": "memsim", "dataset_options": {"n": "12"}, "top_k": 1}
    source = _run(tmp_path / "a", "scatter", **spec)
    replayed = _run(tmp_path / "b", "scatter", from_run=str(source.path), **spec)
    before = {r.key: r.diagnosis for r in source.records()}
    after = {r.key: r.diagnosis for r in replayed.records()}
    assert after.keys() == before.keys()
    for key, d in after.items():
        old = before[key]
        if d is None or old is None:
            assert d is None and old is None
            continue
        # no agent was built, so nothing was listed: the source's store decides, the stage is the same
        assert (d.stage, d.stored, d.recalled, d.n_stored) == (old.stage, old.stored, old.recalled, old.n_stored)
    assert "not_recalled" in {d.stage for d in after.values() if d is not None}


def test_a_gold_the_rule_cannot_place_is_not_called_absent_where_the_dataset_says_it_is_there() -> None:
    """FactConsolidation's multi-hop questions: the last hop ("Olga of Kiev died in the city
    of Rodez.") shares no two words with the question, so the gold rule found no sentence for
    Rodez, and 75 questions read "no message of the conversation holds the gold answer"
    although the release's context holds it (``gold_in_context``)."""
    texts = {"m0": "Olga of Kiev died in the city of Rodez.", "m1": "Olga of Kiev is married to Ivan."}
    conversation = diagnosis.Conversation(texts, "en")
    asked = {"question": "Where did the spouse of Ivan pass away?", "gold": ["Rodez"], "targets": []}
    for meta, why in (
        ({diagnosis.GOLD_IN_CONTEXT_KEY: True}, "the gold rule cannot place it"),
        ({}, "no message of the conversation holds the gold answer"),
    ):
        d = diagnosis.diagnose(_record(**asked, question_meta=meta), "em", conversation, None, "en")
        assert d is not None and d.stage == "unknown" and d.stored is None and d.recalled is None
        assert d.why is not None and why in d.why, d.why
