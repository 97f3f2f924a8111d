"""`factcon`: MemoryAgentBench's FactConsolidation (seed 002), generated offline or loaded.

Without ``--data`` the builder generates contexts of numbered facts with counterfactual
edits (see :mod:`.generator`); with ``--data PATH`` it reads the MemoryAgentBench release
rows (see :mod:`.release`). Either way a sample is one context. By default (``-o
unit=chunk``) its messages are MemoryAgentBench's memories: the context cut into
sentence-aligned chunks of ``-o chunk`` tokens, each inside the memorize template (see
:mod:`.chunks` and :mod:`.protocol`, which also holds the official prompt, parsing and
depth). With ``-o unit=fact`` its messages are its facts, each with its serial number as
id and at the start of its text -- the serial is what tells the newer fact from the older
one, so it must survive chunking and recall.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Iterable, Mapping

import attrs

from memplug.datasets.factcon.chunks import chunked
from memplug.datasets.factcon.protocol import OPTIONS as PROTOCOL_OPTIONS
from memplug.datasets.factcon.protocol import PAPER_PROMPT, PROTOCOL, SOURCE, protocol
from memplug.datasets.factcon.generator import GeneratorConfig, generate_sample
from memplug.datasets.factcon.release import load_release
from memplug.datasets.checks import CheckReport
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

#: the Figure 5 prompt memplug used before it followed MemoryAgentBench's code (``-o prompt=paper``)
ANSWER_PROMPT = PAPER_PROMPT

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
        answer_prompt=PROTOCOL.user,
        answer_prompt_source=SOURCE,
        # MemoryAgentBench's RAG protocol (datasets/factcon/protocol.py); -o options name the deviations
        protocol=PROTOCOL,
    )

    options = (
        Option(
            "tokens",
            int,
            32000,
            f"generator: target context length in tokens (MemoryAgentBench uses {', '.join(map(str, TOKEN_LENGTHS))})",
            low=100,
            high=10_000_000,
        ),
        Option(
            "questions",
            int,
            100,
            "generator: questions per context (while their facts fit in the tokens)",
            low=1,
            high=100_000,
        ),
        Option(
            "kind",
            str,
            "both",
            "generator: sh (single-hop), mh (multi-hop) or both, half each",
            choices=("both", "sh", "mh"),
        ),
        Option("n", int, 1, "generator: number of contexts (memplug generate --n)", low=1, high=10_000),
        *PROTOCOL_OPTIONS,
    )

    def info_for(self, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo:
        """The info with MemoryAgentBench's protocol and the deviations ``values`` ask for."""
        chosen = protocol(values)
        return attrs.evolve(self.info, protocol=chosen, answer_prompt=chosen.user, answer_prompt_source=chosen.source)

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'factcon'")
        samples = load_release(options.data) if options.data is not None else self._generate(values, options.seed)
        if values["unit"] == "fact":
            return samples
        return (chunked(s, values["chunk"], values["wrap"]) for s in samples)

    def check(self, samples: list[Sample]) -> CheckReport:
        """Re-read every answer from its context's facts (``memplug generate --check``); chunked
        samples are checked on the facts they were cut from."""
        from memplug.datasets.factcon.check import check  # its MQuAKE tables: not at `memplug list`

        return check(samples)

    def _generate(self, values: dict[str, Any], seed: int) -> Iterable[Sample]:
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
