"""`perltqa`: PerLTQA (seed 001), personal long-term memory QA, generated offline or loaded.

A sample is one character: its memory items (profile fields, profile description,
social relationships, events, dialogues) are the messages, each labelled semantic or
episodic in ``meta["memory_type"]``; its QA items are the questions, with the referenced
memory ids as targets and the memory anchors as anchors (scored by ``anchor_map``,
PerLTQA Eq. 5). Each question's category is its memory section (profile,
social_relationship, events, dialogues) and ``meta["memory_type"]`` its memory type, so
that memory classification (§3.4, Eq. 1) can be scored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

import attrs

from memplug.datasets.checks import CheckReport
from memplug.datasets.perltqa.check import check
from memplug.datasets.perltqa.generator import generate_release
from memplug.datasets.perltqa.prompts import ANSWER_PROMPT_EN, ANSWER_PROMPT_ZH, SOURCE, SOURCE_ZH, protocol
from memplug.datasets.perltqa.release import load_release
from memplug.datasets.perltqa.schema import Checker, character_sample
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

# the answer protocol is memplug's own: PerLTQA's repository has no evaluation code (see .prompts)


class PerLTQABuilder:
    """Personal long-term memory QA over semantic (profile, relationships) and episodic memory."""

    info = DatasetInfo(
        name="perltqa",
        version="1.0",
        description="PerLTQA: a character's profile, social relationships, events and dialogues; "
        "questions with reference memories and memory anchors",
        language="en",
        capabilities=frozenset({"AR"}),
        # one memory item per message; events average 313 words (§3.3), about 400 tokens
        default_chunk_size=512,
        metrics=("f1", "rouge_l", "anchor_map", "recall@K", "memory_type", "judge_coherence"),
        answer_prompt=ANSWER_PROMPT_EN,
        answer_prompt_source=SOURCE,
        protocol=protocol("en"),
    )

    options = (
        Option("lang", str, "en", "language of generated characters (and of scoring)", choices=("en", "zh")),
        Option(
            "n", int, 3, "generator: number of characters, one sample each (memplug generate --n)", low=1, high=100_000
        ),
        Option("relationships", int, 6, "generator: social relationships per character (at most 11)", low=0, high=11),
        Option(
            "events", int, 2, "generator: events per relationship (at most 12 events per character)", low=0, high=12
        ),
        Option("qa", Path, None, "loader: the QA file, when --data is the memory file and no *qa*.json lies beside it"),
    )

    def info_for(self, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo:
        if values.get("lang", "en") == "zh":
            return attrs.evolve(
                self.info,
                language="zh",
                answer_prompt=ANSWER_PROMPT_ZH,
                answer_prompt_source=SOURCE_ZH,
                protocol=protocol("zh"),
            )
        return self.info

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'perltqa'")
        if options.data is not None:
            return load_release(options.data, values["qa"], values["lang"])
        return self._generate(values, options.seed)

    def check(self, samples: list[Sample]) -> CheckReport:
        """Hold every gold answer and its anchors against the referenced memories (``memplug generate --check``)."""
        return check(samples)

    def _generate(self, values: dict[str, Any], seed: int) -> Iterable[Sample]:
        if values["n"] < 1 or not 1 <= values["relationships"] <= 11 or values["events"] < 1:
            raise MemplugError("options n and events must be at least 1, relationships between 1 and 11")
        memory, qa = generate_release(seed, values["lang"], values["n"], values["relationships"], values["events"])
        checker = Checker("<generated>")
        for entry in qa:
            for name, sections in entry.items():
                sample = character_sample(name, memory[name], sections, values["lang"], checker, checker, "generated")
                yield attrs.evolve(sample, id=f"perltqa_{values['lang']}_seed{seed}_{name}")
