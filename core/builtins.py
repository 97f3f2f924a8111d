"""Registers memplug's generic readers, metrics and judge through the `memplug` entry point.

Only targets in core: what belongs to one benchmark (its official score, its judge) is
registered by memplug.datasets.plugin, so core never names a dataset module
(tests/test_import_contracts.py checks it)."""

from __future__ import annotations

from memplug.hookspecs import Register, hookimpl


@hookimpl
def register_readers(register: Register) -> None:
    register(
        "extractive",
        "memplug.readers:ExtractiveReader",
        description="offline, deterministic: best-supported choice or shortest answering span",
    )
    register("llm", "memplug.readers:LLMReader", description="litellm model with the dataset's answer prompt")


@hookimpl
def register_metrics(register: Register) -> None:
    register("accuracy", "memplug.metrics:Accuracy", description="multiple choice: predicted choice is correct")
    register("em", "memplug.metrics:ExactMatch", description="normalised exact match with any gold answer")
    register("subem", "memplug.metrics:SubstringExactMatch", description="a gold answer occurs in the prediction")
    register("f1", "memplug.metrics:TokenF1", description="token-level F1 (characters for Chinese)")
    register("rouge_l", "memplug.metrics:RougeL", description="ROUGE-L F-measure")
    register("bleu", "memplug.metrics:Bleu", description="sentence BLEU-4 with smoothing")
    register("recall@K", "memplug.metrics:RecallAtK", description="share of target messages among recalled ids")
    register(
        "session_hit@K",
        "memplug.metrics:SessionHitAtK",
        description="any target session among the first K distinct sessions recalled (ids 'session:turn')",
    )
    register(
        "judge", "memplug.judge:Judge", needs_judge=True, description="LLM-as-judge correctness (only with --judge)"
    )
    register(
        "judge_coherence",
        "memplug.judge:JudgeCoherence",
        needs_judge=True,
        description="PerLTQA coherence from the same judge call (only with --judge)",
    )


@hookimpl
def register_judges(register: Register) -> None:
    register("memplug", "memplug.judge:MEMPLUG", description="memplug's strict correctness (PerLTQA: its own prompt)")
