"""`beam`: BEAM (Tavakoli et al., 2025, "Beyond a Million Tokens"), ten memory abilities.

Loads the release's ``chats/<size>/<n>/`` folders (:mod:`.release`): one sample per
conversation (128K to 10M tokens), its 20 probing questions in ten abilities, each the
question's category, so that the per-category table of ``memplug report`` is the
official table by ability. The official score is the ``beam`` judge (``--judge MODEL``;
:mod:`.judge`): rubric items judged one by one, event ordering by Kendall tau-b x F1 of
the matched events. Offline, no rubric question is scored: what remains is retrieval of
the questions' source messages (``recall@K``) and event ordering with a lexical match
(``beam_order_lexical``, a named variation). docs/datasets/beam.md has the details.
"""

from __future__ import annotations

import logging
from typing import Iterable

from memplug.answering import AnswerProtocol
from memplug.datasets.beam.release import ABILITIES, load_release
from memplug.datasets.beam.scoring import COMMIT
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

log = logging.getLogger(__name__)

#: logged while the data loads, so that every run shows it (the builder cannot know whether
#: the run has a judge): what a run without one leaves unscored
OFFLINE_NOTE = (
    "BEAM's rubric questions (every ability but event ordering) are scored by the beam judge only: without "
    "--judge MODEL they stay unscored, and the run's scores are recall@K (retrieval of their source "
    "messages) and beam_order_lexical (event ordering, a lexical variation)"
)
#: src/prompts.py ``answer_generation_for_rag``, verbatim, its <context> and <question> as memplug's slots
RAG_PROMPT = """
You are an assistant that MUST answer questions using ONLY the information provided in the context below. 

STRICT INSTRUCTIONS:
1. Answer ONLY based on the provided context
2. Do NOT use your internal knowledge

CONTEXT:
{memory}

QUESTION:
{question}

ANSWER REQUIREMENTS:
- Be direct and concise
- Only output the answer to the question without any explanation 

RESPONSE:
"""
SOURCE = (
    f"github mohammadtavakoli78/BEAM@{COMMIT} src/prompts.py answer_generation_for_rag, "
    "src/answer_probing_questions/long_term_memory_methods.py (evaluation_type rag) and "
    "answer_generation.py retrieval_config_default (k 5)"
)
#: answer_generation.py ``retrieval_config_default["k"]``
TOP_K = 5


def answer_protocol() -> AnswerProtocol:
    """The official RAG reading (``evaluation_type="rag"``): the retrieved chunks' texts
    concatenated into <context>, the question into <question>. The official chunk is a
    user message with its reply ("USER: ...\\n\\nASSISTANT: ...", ``pair_chunk``); memplug's
    item is one message, its content: the variation "message-not-pair", recorded."""
    return AnswerProtocol(
        name="beam-rag",
        version="1",
        source=SOURCE,
        user=RAG_PROMPT,
        memory_item="{text}",
        memory_join="\n\n",
        unit="message",
        top_k=TOP_K,
        variations=("message-not-pair",),
    )


def _abilities(text: str) -> tuple[str, ...]:
    if text.strip().lower() in ("", "all"):
        return ABILITIES
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [a for a in chosen if a not in ABILITIES]
    if unknown or not chosen:
        raise MemplugError(
            f"option abilities={text!r}: expected 'all' or names from {', '.join(ABILITIES)} joined by commas"
        )
    return tuple(a for a in ABILITIES if a in chosen)


class BeamBuilder:
    """100 conversations of 128K, 500K, 1M and 10M tokens, 20 probing questions each."""

    info = DatasetInfo(
        name="beam",
        version="1.0",
        description="BEAM (mohammadtavakoli78): conversations of 128K-10M tokens, 20 probing questions each in "
        "ten abilities (the categories); official rubric judge per item, event ordering Kendall "
        "tau-b x F1 (--judge); offline only retrieval and a lexical event-ordering variation",
        language="en",
        capabilities=frozenset({"AR", "TTL", "LRU", "CR"}),
        default_chunk_size=512,
        metrics=("beam_order_lexical", "beam_tau", "recall@K"),
        answer_prompt=answer_protocol().user,
        answer_prompt_source=SOURCE,
        protocol=answer_protocol(),
    )

    options = (
        Option(
            "abilities",
            str,
            "all",
            "abilities to ask: 'all' or names joined by commas, e.g. event_ordering,temporal_reasoning",
        ),
        Option(
            "judge",
            str,
            "beam",
            "judge for --judge: 'beam' (official, one call per rubric item) or another registered judge (a variation)",
        ),
    )

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'beam'")
        abilities = _abilities(values["abilities"])
        if options.data is None:
            raise MemplugError(
                "dataset 'beam' loads the release: pass --data chats/100K/1 (a conversation), "
                "chats/100K (a size) or chats (github.com/mohammadtavakoli78/BEAM)"
            )
        from memplug.judge import judge_set

        judge_set(values["judge"])  # an unknown judge fails here, before any question
        samples = list(load_release(options.data, abilities=abilities, judge=values["judge"]))
        log.warning("%s", OFFLINE_NOTE)
        return samples
