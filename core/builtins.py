"""Registers memplug's own readers and metrics through the `memplug` entry point."""

from __future__ import annotations

from memplug.hookspecs import Register, hookimpl


@hookimpl
def register_readers(register: Register) -> None:
    register("extractive", "memplug.readers:ExtractiveReader",
             description="offline, deterministic: best-supported choice or shortest answering span")
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
    register("session_hit@K", "memplug.metrics:SessionHitAtK",
             description="any target session among the first K distinct sessions recalled (ids 'session:turn')")
    register("locomo_f1", "memplug.datasets.locomo.scoring:LoCoMoF1",
             description="LoCoMo official score (stemmed F1; category 5 by its not-mentioned rule), all categories")
    register("locomo_f1_no_adv", "memplug.datasets.locomo.scoring:LoCoMoF1NoAdversarial",
             description="LoCoMo official score, categories 1-4 (adversarial category 5 left out)")
    register("abstention", "memplug.datasets.longmemeval.scoring:Abstention",
             description="an abstention question's reply declines to answer (memplug's offline rule; "
                         "the official score is the judge's)")
    register("personamem_accuracy", "memplug.datasets.personamem.scoring:PersonaMemAccuracy",
             description="PersonaMem official answer extraction: the reply names exactly the correct option")
    register("beam_tau", "memplug.datasets.beam.judge:BeamTau", needs_judge=True,
             description="BEAM event ordering: normalised Kendall tau-b alone (report_results.py's column; "
                         "only with --judge)")
    register("beam_order_lexical", "memplug.datasets.beam.scoring:BeamOrderLexical",
             description="BEAM event ordering offline: tau_norm x F1 with a lexical event match (a variation "
                         "of the judge's)")
    register("anchor_map", "memplug.metrics:AnchorMAP", description="PerLTQA memory anchors found in the answer (Eq. 5)")
    register("memory_type", "memplug.metrics:MemoryTypeAccuracy",
             description="PerLTQA memory classification: the agent's semantic/episodic call for the question")
    register("eventqa_recall", "memplug.datasets.mab.scoring:EventQARecall",
             description="MemoryAgentBench EventQA: every answer element in the raw reply")
    register("ruler_recall", "memplug.datasets.mab.scoring:RulerRecall",
             description="MemoryAgentBench RULER NIAH: share of the answer values in the raw reply")
    for k in (1, 5, 10):
        register(f"recsys_recall@{k}", f"memplug.datasets.mab.scoring:RecsysRecall{'' if k == 5 else k}",
                 description=f"MemoryAgentBench ReDial: gold movies among the first {k} recommendations "
                             "(titles matched by edit distance)")
    register("judge", "memplug.judge:Judge", needs_judge=True,
             description="LLM-as-judge correctness (only with --judge)")
    register("judge_coherence", "memplug.judge:JudgeCoherence", needs_judge=True,
             description="PerLTQA coherence from the same judge call (only with --judge)")


@hookimpl
def register_judges(register: Register) -> None:
    register("memplug", "memplug.judge:MEMPLUG", description="memplug's strict correctness (PerLTQA: its own prompt)")
    register("longmemeval", "memplug.judges:LONGMEMEVAL",
             description="LongMemEval's official per-type prompts (evaluate_qa.py), abstention prompt for _abs")
    register("beam", "memplug.datasets.beam.judge:BEAM",
             description="BEAM's official judge: every rubric item on its own (compute_metrics.py), event "
                         "ordering Kendall tau-b x F1 of the events it matches")
    register("infbench-sum", "memplug.datasets.mab.judge:INFBENCH_SUM",
             description="MemoryAgentBench's InfBench-Sum F1 (summarization_evaluate.py): fluency x key-point "
                         "recall/precision, three calls")
    register("locomo-j", "memplug.judges:LOCOMO_J",
             description="Mem0's lenient LoCoMo judge (ACCURACY_PROMPT), category 5 skipped")
    register("locomo-plus", "memplug.datasets.locomo_plus.judge:LOCOMO_PLUS",
             description="LoCoMo-Plus's official per-category prompts (llm_as_judge.py): correct 1, partial 0.5, wrong 0")
