"""`longmemeval`: LongMemEval (Wu et al., ICLR 2025), long-term memory of chat assistants.

Loads the release (``longmemeval_{s,m,oracle}[_cleaned].json`` of
huggingface.co/datasets/xiaowu0162/longmemeval-cleaned, see :mod:`.release`): one sample
per question with its own haystack, one message per turn, the ``has_answer`` turns as
targets. The QA score is the LLM judge with the official per-type prompts
(``--judge MODEL``; :mod:`.judge`); offline, ``subem``/``f1`` and memplug's
``abstention`` rule stand in. docs/datasets/longmemeval.md has the details.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from memplug.answering import AnswerProtocol
from memplug.datasets.longmemeval.release import load_release
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

COMMIT = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
#: run_generation.py prepare_prompt, retriever_type flat-turn/flat-session, cot=True (run_generation.sh's
#: default reading_method "con", which the README recommends) and cot=False ("direct")
PROMPT_COT = (
    "I will give you several history chats between you and a user. Please answer the question based on the "
    "relevant chat history. Answer the question step by step: first extract all the relevant information, and "
    "then reason over the information to get the answer.\n\n\nHistory Chats:\n\n{}\n\nCurrent Date: {}\n"
    "Question: {}\nAnswer (step by step):"
)
PROMPT_DIRECT = (
    "I will give you several history chats between you and a user. Please answer the question based on the "
    "relevant chat history.\n\n\nHistory Chats:\n\n{}\n\nCurrent Date: {}\nQuestion: {}\nAnswer:"
)
SOURCE = (
    f"github xiaowu0162/LongMemEval@{COMMIT} src/generation/run_generation.py prepare_prompt "
    "(history_format json, answer_prompt_template without key expansion) and run_generation.sh defaults "
    "(topk_context 50, reading_method con = cot)"
)
#: the official depth: run_generation.sh's topk_context default
TOP_K = 50


def _slots(template: str) -> str:
    """The official ``{}`` x3 (history, question date, question) as memplug's named slots."""
    return template.replace("{}", "{memory}", 1).replace("{}", "{time}", 1).replace("{}", "{question}", 1)


def answer_protocol(prompt: str = "cot") -> AnswerProtocol:
    """The official RAG reading: each retrieved item written as run_generation.py writes a
    chunk ("\\n### Session {i}:\\nSession Date: ...\\nSession Content:\\n\\n<json>\\n"; memplug's
    message text holds everything after the "### Session" line), numbered from 1, in the
    chain-of-thought template. Two recorded variations are always in force, since a protocol
    cannot do them: an item is one turn, where the official flat-turn retrieval expands a
    turn into its round (the turn and the next one), and items stay in recall order, where
    the official code sorts the retrieved chunks by session date before numbering them."""
    template = PROMPT_COT if prompt == "cot" else PROMPT_DIRECT
    protocol = AnswerProtocol(
        name="longmemeval-rag",
        version="1",
        source=SOURCE,
        user=_slots(template),
        memory_item="\n### Session {n}:\n{text}\n",
        memory_start=1,
        memory_join="",
        unit="message",
        top_k=TOP_K,
        variations=("turn-not-round", "recall-order"),
    )
    return protocol if prompt == "cot" else protocol.vary("prompt=direct")


class LongMemEvalBuilder:
    """500 questions, each with its own timestamped chat history (s: ~50 sessions, m: ~500, oracle: evidence only)."""

    info = DatasetInfo(
        name="longmemeval",
        version="1.0",
        description="LongMemEval (xiaowu0162): 500 questions, each with its own multi-session chat history; six "
        "question types, abstention questions (_abs) reported apart; official per-type LLM judge",
        language="en",
        capabilities=frozenset({"AR", "TTL", "LRU", "CR"}),
        default_chunk_size=512,
        metrics=("subem", "f1", "abstention", "recall@K", "session_hit@K"),
        answer_prompt=answer_protocol().user,
        answer_prompt_source=SOURCE,
        protocol=answer_protocol(),
    )

    options = (
        Option(
            "prompt",
            str,
            "cot",
            "reader prompt of run_generation.py: 'cot' (official default, step by step) "
            "or 'direct' (a recorded variation)",
        ),
        Option(
            "evidence",
            str,
            "user",
            "turn targets: 'user' (the has_answer user turns, all the official "
            "retrieval indexes) or 'all' (assistant turns too)",
        ),
        Option(
            "text",
            str,
            "official",
            "message text: 'official' (session date and the turn as JSON, as the "
            "official prompt writes it) or 'plain' (the turn's content only)",
        ),
        Option(
            "judge",
            str,
            "longmemeval",
            "judge for --judge: 'longmemeval' (official per-type prompts), 'memplug', 'locomo-j' or a plugin's",
        ),
    )

    def _values(self, values: dict[str, Any]) -> dict[str, Any]:
        for key, allowed in (
            ("prompt", ("cot", "direct")),
            ("evidence", ("user", "all")),
            ("text", ("official", "plain")),
        ):
            if values[key] not in allowed:
                raise MemplugError(f"option {key}={values[key]!r}: expected one of {', '.join(allowed)}")
        return values

    def info_for(self, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo:
        import attrs

        values = self._values(dict(values))
        protocol = answer_protocol(values["prompt"])
        if values["text"] == "plain":
            protocol = protocol.vary("text=plain")
        return attrs.evolve(self.info, protocol=protocol, answer_prompt=protocol.user)

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = self._values(resolve(self.options, options.values, "dataset 'longmemeval'"))
        if options.data is None:
            raise MemplugError(
                "dataset 'longmemeval' loads the release: pass --data longmemeval_s_cleaned.json "
                "(huggingface.co/datasets/xiaowu0162/longmemeval-cleaned)"
            )
        if options.data.is_dir():
            raise MemplugError(
                f"--data {options.data}: expected a release file such as longmemeval_s_cleaned.json, not a directory"
            )
        from memplug.judge import judge_set

        judge_set(values["judge"])  # an unknown judge fails here, before any question
        return load_release(options.data, evidence=values["evidence"], text=values["text"], judge=values["judge"])
