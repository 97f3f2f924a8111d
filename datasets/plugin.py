"""Registers memplug's own dataset builders, and the metrics, judges and official exports that
belong to one benchmark, through the `memplug` entry point (core/builtins.py registers the generic ones)."""

from __future__ import annotations

from pathlib import Path

from memplug.hookspecs import Register, hookimpl


@hookimpl
def register_datasets(register: Register) -> None:
    register("memsim", "memplug.datasets.memsim.generator:MemSimBuilder")
    register("memdaily", "memplug.datasets.memsim.memdaily:MemDailyLoader")
    register("factcon", "memplug.datasets.factcon.builder:FactConBuilder")
    register("mab", "memplug.datasets.mab.builder:MABBuilder")
    register("perltqa", "memplug.datasets.perltqa.builder:PerLTQABuilder")
    register("locomo", "memplug.datasets.locomo.builder:LoCoMoBuilder")
    register("longmemeval", "memplug.datasets.longmemeval.builder:LongMemEvalBuilder")
    register("locomo-plus", "memplug.datasets.locomo_plus.builder:LoCoMoPlusBuilder")
    register("beam", "memplug.datasets.beam.builder:BeamBuilder")
    register("personamem", "memplug.datasets.personamem.builder:PersonaMemBuilder")
    register("membench", "memplug.datasets.membench.builder:MemBenchBuilder")
    register("conversations", "memplug.datasets.conversations.builder:ConversationsBuilder")


@hookimpl
def register_metrics(register: Register) -> None:
    """Each benchmark's official score, and memplug's offline stand-ins for its judge."""
    register(
        "locomo_f1",
        "memplug.datasets.locomo.scoring:LoCoMoF1",
        description="LoCoMo official score (stemmed F1; category 5 by its not-mentioned rule), all categories",
    )
    register(
        "locomo_f1_no_adv",
        "memplug.datasets.locomo.scoring:LoCoMoF1NoAdversarial",
        description="LoCoMo official score, categories 1-4 (adversarial category 5 left out)",
    )
    register(
        "abstention",
        "memplug.datasets.longmemeval.scoring:Abstention",
        description="an abstention question's reply declines to answer (memplug's offline rule; "
        "the official score is the judge's)",
    )
    register(
        "personamem_accuracy",
        "memplug.datasets.personamem.scoring:PersonaMemAccuracy",
        description="PersonaMem official answer extraction: the reply names exactly the correct option",
    )
    register(
        "beam_tau",
        "memplug.datasets.beam.judge:BeamTau",
        needs_judge=True,
        description="BEAM event ordering: normalised Kendall tau-b alone (report_results.py's column; "
        "only with --judge)",
    )
    register(
        "beam_order_lexical",
        "memplug.datasets.beam.scoring:BeamOrderLexical",
        description="BEAM event ordering offline: tau_norm x F1 with a lexical event match (a variation "
        "of the judge's)",
    )
    register(
        "eventqa_recall",
        "memplug.datasets.mab.scoring:EventQARecall",
        description="MemoryAgentBench EventQA: every answer element in the raw reply",
    )
    register(
        "ruler_recall",
        "memplug.datasets.mab.scoring:RulerRecall",
        description="MemoryAgentBench RULER NIAH: share of the answer values in the raw reply",
    )
    register(
        "anchor_map",
        "memplug.datasets.perltqa.scoring:AnchorMAP",
        description="PerLTQA memory anchors found in the answer (Eq. 5)",
    )
    register(
        "memory_type",
        "memplug.datasets.perltqa.scoring:MemoryTypeAccuracy",
        description="PerLTQA memory classification: the agent's semantic/episodic call for the question",
    )
    for k in (1, 5, 10):
        register(
            f"recsys_recall@{k}",
            f"memplug.datasets.mab.scoring:RecsysRecall{'' if k == 5 else k}",
            description=f"MemoryAgentBench ReDial: gold movies among the first {k} recommendations "
            "(titles matched by edit distance)",
        )


@hookimpl
def register_judges(register: Register) -> None:
    """Each benchmark's official judge (its prompts verbatim, pinned by sha256)."""
    register(
        "longmemeval",
        "memplug.datasets.longmemeval.judge:LONGMEMEVAL",
        description="LongMemEval's official per-type prompts (evaluate_qa.py), abstention prompt for _abs",
    )
    register(
        "beam",
        "memplug.datasets.beam.judge:BEAM",
        description="BEAM's official judge: every rubric item on its own (compute_metrics.py), event "
        "ordering Kendall tau-b x F1 of the events it matches",
    )
    register(
        "infbench-sum",
        "memplug.datasets.mab.judge:INFBENCH_SUM",
        description="MemoryAgentBench's InfBench-Sum F1 (summarization_evaluate.py): fluency x key-point "
        "recall/precision, three calls",
    )
    register(
        "locomo-j",
        "memplug.datasets.locomo.judge:LOCOMO_J",
        description="Mem0's lenient LoCoMo judge (ACCURACY_PROMPT), category 5 skipped",
    )
    register(
        "locomo-plus",
        "memplug.datasets.locomo_plus.judge:LOCOMO_PLUS",
        description="LoCoMo-Plus's official per-category prompts (llm_as_judge.py): correct 1, partial 0.5, wrong 0",
    )


@hookimpl
def register_exports(register: Register) -> None:
    """The files the benchmarks' own evaluation scripts read (``memplug report --export``)."""
    register(
        "longmemeval",
        "memplug.datasets.longmemeval.export:hypotheses",
        suffix=".hypotheses.jsonl",
        description="LongMemEval's hypotheses for evaluate_qa.py: question_id and hypothesis a line",
    )
    register(
        "locomo",
        "memplug.datasets.locomo.export:predictions",
        suffix=".locomo.json",
        description="LoCoMo's prediction file for evaluation.py: memplug_prediction and its context",
    )


@hookimpl
def memplug_report_table(paths: list[Path], fmt: str) -> str | None:
    """MemoryAgentBench's runs of several sources: the paper's table by competency."""
    from memplug.datasets.mab import report as mab

    return mab.render(paths, fmt) if mab.applies(paths) else None  # type: ignore[arg-type]
