"""--context-tokens: one budget of recalled context for every reader (issue 30)."""

from __future__ import annotations

from memplug.budget import cut
from memplug.models import Recalled
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec
from memplug.tokens import count_tokens

ITEMS = (Recalled("one two three four five"), Recalled("six"), Recalled("seven eight"), Recalled("nine"))


def test_items_are_kept_whole_in_rank_order_until_one_does_not_fit():
    sizes = [count_tokens(i.text) for i in ITEMS]
    kept, context = cut(ITEMS, sizes[0] + sizes[1])
    assert kept == ITEMS[:2]
    assert context == {
        "budget": sizes[0] + sizes[1],
        "tokens": sizes[0] + sizes[1],
        "kept": 2,
        "recalled": 4,
        "recalled_tokens": sum(sizes),
    }
    # "seven eight" does not fit one token more; "nine" would, but never ahead of its rank
    kept, context = cut(ITEMS, sizes[0] + sizes[1] + 1)
    assert context is not None
    assert kept == ITEMS[:2] and context["tokens"] == sizes[0] + sizes[1]


def test_a_first_item_larger_than_the_budget_leaves_nothing_and_no_budget_leaves_all():
    kept, context = cut(ITEMS, 1)
    assert context is not None
    assert kept == () and context["kept"] == 0 and context["tokens"] == 0
    assert cut(ITEMS, None) == (ITEMS, None)


def test_the_reader_sees_only_the_items_within_the_budget(tmp_path, openai_stub):
    openai_stub.reply = lambda body: "A"
    spec = RunSpec(
        agent="bm25",
        dataset="memsim",
        dataset_options={"n": "4"},
        llm="openai/stub",
        api_base=openai_stub.base_url,
        context_tokens=40,
        concurrency=1,
    )
    run = RunDir(Evaluation(spec).run(output=tmp_path))
    records = sorted(run.records(), key=lambda r: r.key)
    prompts = [b["messages"][-1]["content"] for b in openai_stub.chat_requests]
    assert len(prompts) == len(records)
    cut_somewhere = False
    for record in records:
        context = record.context
        assert context is not None
        assert context["budget"] == 40 and context["tokens"] <= 40 and context["recalled"] == len(record.recalled)
        shown, hidden = record.recalled[: context["kept"]], record.recalled[context["kept"] :]
        (prompt,) = [p for p in prompts if record.question in p]
        assert all(item.text in prompt for item in shown)
        assert not any(item.text in prompt for item in hidden if all(item.text not in s.text for s in shown))
        cut_somewhere |= bool(hidden)
    assert cut_somewhere
    assert run.info().spec["context_tokens"] == 40
    assert "recall@5" in run.summary().metrics.overall  # recall still reads every item recalled


def test_from_run_tries_another_budget_without_ingesting(tmp_path):
    source = Evaluation(RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "3"})).run(output=tmp_path)
    assert all(r.context is None for r in RunDir(source).records())
    replay = Evaluation(
        RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "3"}, from_run=str(source), context_tokens=30)
    ).run(output=tmp_path)
    records = RunDir(replay).records()
    assert all(r.context is not None and r.context["budget"] == 30 for r in records)
    assert all(r.timings.ingest_s == 0 for r in records)
