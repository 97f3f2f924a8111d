"""MemoryAgentBench's sources: competency, template family, scoring and where each comes from.

A *source* is the ``metadata.source`` of a release row (the official loader keeps the rows
whose source is the requested ``sub_dataset``). Its *family* picks the templates
(``utils/templates.py`` ``DATASET_MAPPING``: the first rule whose patterns all occur in the
name) and its *scoring* the branch of ``utils/eval_other_utils.py`` ``post_process``
(substring rules on the name, in that function's order). Both are decided by the name, as
the official code decides them, so a source of the release that this table does not list
still runs with the rules its name selects; the table adds the competency, the data config
and the metrics the paper reports.
"""

from __future__ import annotations

from typing import Literal

import attrs

from memplug.datasets.mab import generator
from memplug.datasets.mab.templates import FAMILY_RULES
from memplug.errors import MemplugError

COMMIT = "455306dcabc3842526eb83cd4e225e5d486c5c5d"
#: the parent of 42977c6, which removed ruler_niah_mq and infbench_qa_eng from the code
REMOVED_COMMIT = "9a5dd95e58bf45983fc8cf162dd191f7d44da434"
RELEASE = "huggingface.co/datasets/ai-hyz/MemoryAgentBench"
COMPETENCY_OF_SPLIT = {
    "Accurate_Retrieval": "AR",
    "Test_Time_Learning": "TTL",
    "Long_Range_Understanding": "LRU",
    "Conflict_Resolution": "CR",
}
#: the paper's main table, left to right
COMPETENCIES = ("AR", "TTL", "LRU", "CR")

Scoring = Literal["icl", "eventqa", "default", "ruler_niah", "recsys"]


@attrs.frozen
class Source:
    """One source of the release: its name, competency, the data config that runs it and the
    metrics (the first is the paper's)."""

    name: str
    competency: str
    config: str
    metrics: tuple[str, ...]
    #: the commit whose code still has this source (the removed ones: :data:`REMOVED_COMMIT`)
    commit: str = COMMIT
    #: the data config's chunk_size (4096 in every one)
    chunk_size: int = 4096

    @property
    def family(self) -> str:
        return family_of(self.name)

    @property
    def scoring(self) -> Scoring:
        return scoring_of(self.name)

    @property
    def split(self) -> str:
        return next(s for s, c in COMPETENCY_OF_SPLIT.items() if c == self.competency)

    @property
    def file(self) -> str:
        """The release file that holds it."""
        return f"data/{self.split}-00000-of-00001.parquet"


_QA = ("subem", "em", "f1")
_CR = "configs/data_conf/Conflict_Resolution/Factconsolidation_{}.yaml"

SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source("ruler_qa1_197K", "AR", "configs/data_conf/Accurate_Retrieval/Ruler/QA/Ruler_qa1_197k.yaml", _QA),
        Source("ruler_qa2_421K", "AR", "configs/data_conf/Accurate_Retrieval/Ruler/QA/Ruler_qa2_421k.yaml", _QA),
        Source(
            "ruler_niah_mq_448K",
            "AR",
            "configs/data_conf/Accurate_Retrieval/Ruler/NIAH/Ruler_niah_mq_448k.yaml",
            ("ruler_recall",),
            commit=REMOVED_COMMIT,
        ),
        Source(
            "infbench_qa_eng_shots2",
            "AR",
            "configs/data_conf/Accurate_Retrieval/InfBench_QA/Infbench_qa.yaml",
            _QA,
            commit=REMOVED_COMMIT,
        ),
        Source(
            "longmemeval_s*",
            "AR",
            "configs/data_conf/Accurate_Retrieval/LongMemEval/Longmemeval_s_star.yaml",
            ("judge", *_QA),
        ),
        Source(
            "longmemeval_s_-1_500",
            "AR",
            "configs/data_conf/Accurate_Retrieval/LongMemEval/Longmemeval_s.yaml",
            ("judge", *_QA),
        ),
        *(
            Source(
                f"eventqa_{n}",
                "AR",
                f"configs/data_conf/Accurate_Retrieval/EventQA/Eventqa_{c}.yaml",
                ("subem", "eventqa_recall", "em", "f1"),
            )
            for n, c in (("full", "full"), ("65536", "64k"), ("131072", "128k"))
        ),
        *(
            Source(
                f"icl_{n}_balance",
                "TTL",
                f"configs/data_conf/Test_Time_Learning/ICL/ICL_{c}.yaml",
                ("em", "subem", "f1"),
            )
            for n, c in (
                ("banking77_5900shot", "banking77"),
                ("clinic150_7050shot", "clinic150"),
                ("nlu_8296shot", "nlu"),
                ("trec_coarse_6600shot", "trec_coarse"),
                ("trec_fine_6400shot", "trec_fine"),
            )
        ),
        Source(
            "recsys_redial_full",
            "TTL",
            "configs/data_conf/Test_Time_Learning/Recsys/Recsys_redial_full.yaml",
            ("recsys_recall@5", "recsys_recall@1", "recsys_recall@10"),
        ),
        Source(
            "infbench_sum_eng_shots2",
            "LRU",
            "configs/data_conf/Long_Range_Understanding/InfBench_sum.yaml",
            ("judge", "f1"),
        ),
        Source(
            "detective_qa", "LRU", "configs/data_conf/Long_Range_Understanding/Detective_QA.yaml", ("em", "subem", "f1")
        ),
        *(
            Source(f"factconsolidation_{k}_{n}", "CR", _CR.format(f"{k}_{n}"), _QA)
            for k in ("sh", "mh")
            for n in ("6k", "32k", "64k", "262k")
        ),
    )
}


#: the offline NIAH-MQ of :mod:`memplug.datasets.mab.generator` (not a release source)
GENERATED = Source(
    generator.SOURCE,
    "AR",
    "memplug datasets/mab/generator.py: RULER niah_multiquery, noise haystack",
    ("ruler_recall",),
    commit=REMOVED_COMMIT,
)


def family_of(source: str) -> str:
    """The template family of ``source`` (``normalize_dataset_name``); MemplugError if none fits."""
    for patterns, family in FAMILY_RULES:
        if all(p in source for p in patterns):
            return family
    raise MemplugError(f"MemoryAgentBench has no templates for source {source!r}")


def scoring_of(source: str) -> Scoring:
    """The ``post_process`` branch for ``source``, tested in that function's order."""
    if "icl" in source:
        return "icl"
    if "eventqa" in source:
        return "eventqa"
    if "infbench" in source or "longmemeval" in source:
        # _process_infbench_longmemeval_dataset: choice_eng sources only differ, and none is in the release
        return "default"
    if "ruler" in source or "mermory_merging" in source:
        return "ruler_niah" if "ruler_niah" in source else "default"
    if "recsys" in source:
        return "recsys"
    return "default"


def source_info(name: str, split: str | None = None) -> Source:
    """The table's entry, or one made from the name's rules and the split it came from."""
    if name in SOURCES:
        return SOURCES[name]
    if name == GENERATED.name:
        return GENERATED
    competency = COMPETENCY_OF_SPLIT.get(split or "", "AR")
    family_of(name)  # raises for a name no template fits
    metrics = {
        "icl": ("em", "subem", "f1"),
        "eventqa": ("subem", "eventqa_recall", "em", "f1"),
        "ruler_niah": ("ruler_recall",),
        "recsys": ("recsys_recall@5", "recsys_recall@1", "recsys_recall@10"),
        "default": _QA,
    }[scoring_of(name)]
    if "longmemeval" in name:
        metrics = ("judge", *_QA)
    return Source(name, competency, "(not in the official configs)", metrics)
