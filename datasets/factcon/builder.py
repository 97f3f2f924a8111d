"""`factcon`: MemoryAgentBench's FactConsolidation (seed 002), generated offline or loaded.

Without ``--data`` the builder generates contexts of numbered facts with counterfactual
edits (see :mod:`.generator`); with ``--data PATH`` it reads the MemoryAgentBench release
rows (see :mod:`.release`). Either way a sample is one context whose messages are its
facts, each with its serial number as id and at the start of its text -- the serial is
what tells the newer fact from the older one, so it must survive chunking and recall.
"""

from __future__ import annotations

import random
from typing import Iterable

from memplug.datasets.factcon.check import check
from memplug.datasets.factcon.generator import GeneratorConfig, generate_sample
from memplug.datasets.factcon.release import load_release
from memplug.datasets.checks import CheckReport
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

#: MemoryAgentBench (seed 002) App. B, Figure 5, the Fact Consolidation prompt of its
#: long-context agents; <memory> and <question> become {memory} and {question}, and its
#: "\n" markers line breaks. The released code (utils/templates.py, "factconsolidation")
#: sends the same instruction with a different worked example.
ANSWER_PROMPT = (
    "Here is a knowledge pool with lots of new facts: {memory}.\n"
    "Please memorize it.\n"
    "Pretend you are a knowledge management system. Each fact in the knowledge pool is provided with "
    "a serial number at the beginning, and the newer fact has larger serial number.\n"
    "You need to solve the conflicts of facts in the knowledge pool by finding the newest fact. "
    "You need to answer a question based on this rule. You should give a very concise answer without "
    "saying other words for the question **only** from the knowledge pool you have memorized rather "
    "than the real facts in real world.\n"
    "For example:\n"
    "[Knowledge Pool]\n"
    "Question: Based on the provided Knowledge Pool, what is the name of the current president of Country R?\n"
    "Answer: Person D.\n"
    "Now Answer the Question: Based on the provided Knowledge Pool, {question}\n"
    "Answer:"
)

TOKEN_LENGTHS = (6000, 32000, 64000, 262000)
MAX_TOKENS = 2_000_000


class FactConBuilder:
    """Conflict resolution: answer with the newest of conflicting facts (single- and multi-hop)."""

    info = DatasetInfo(
        name="factcon",
        version="1.0",
        description="FactConsolidation (MemoryAgentBench): numbered facts with later counterfactual edits; "
                    "answer from the newest fact, single-hop (sh) and multi-hop (mh)",
        language="en",
        capabilities=frozenset({"CR"}),
        # MemoryAgentBench §4.1 / App. D.3, Table 15: FactCon-SH and FactCon-MH use 512-token chunks
        default_chunk_size=512,
        metrics=("subem", "em", "f1", "recall@K"),
        answer_prompt=ANSWER_PROMPT,
        answer_prompt_source="MemoryAgentBench (arXiv 2507.05257, seed 002), App. B, Figure 5: Fact Consolidation",
    )

    options = (
        Option("tokens", int, 32000,
               f"generator: target context length in tokens (MemoryAgentBench uses {', '.join(map(str, TOKEN_LENGTHS))})"),
        Option("questions", int, 100, "generator: questions per context (while their facts fit in the tokens)"),
        Option("kind", str, "both", "generator: sh (single-hop), mh (multi-hop) or both, half each",
               choices=("both", "sh", "mh")),
        Option("n", int, 1, "generator: number of contexts (memplug generate --n)"),
    )

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'factcon'")
        if options.data is not None:
            return load_release(options.data)
        return self._generate(values, options.seed)

    def check(self, samples: list[Sample]) -> CheckReport:
        """Re-read every answer from its context's facts (``memplug generate --check``)."""
        return check(samples)

    def _generate(self, values: dict, seed: int) -> Iterable[Sample]:
        tokens, questions, samples = values["tokens"], values["questions"], values["n"]
        if not 500 <= tokens <= MAX_TOKENS:
            raise MemplugError(f"option tokens={tokens}: must be between 500 and {MAX_TOKENS}")
        if questions < 1 or samples < 1:
            raise MemplugError("options questions and n must be at least 1")
        config = GeneratorConfig(tokens=tokens, questions=questions, kind=values["kind"])
        for i in range(samples):
            # a string seed is hashed with SHA-512 by random.Random: stable across runs and platforms
            rng = random.Random(f"factcon:{seed}:{i}")
            yield generate_sample(f"factcon_{tokens}_seed{seed}_{i}", config, rng)
