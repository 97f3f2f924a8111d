"""`locomo`: LoCoMo (Maharana et al., ACL 2024), very long-term conversational memory.

Loads the release (``data/locomo10.json`` of snap-research/LoCoMo, see :mod:`.release`):
one sample per conversation, one message per turn, the evidence turns as targets.
Scored as the official ``task_eval/evaluation.py`` scores (:mod:`.scoring`), with turn
recall@K and session hit@K for retrieval. docs/datasets/locomo.md has the details.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

import attrs

from memplug.answering import AnswerProtocol, register_question_parser
from memplug.datasets.locomo.release import CATEGORIES, category_name, load_release
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

#: snap-research/LoCoMo@3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376, task_eval/gpt_utils.py
QA_PROMPT = (
    "\nBased on the above context, write an answer in the form of a short phrase for the following question. "
    "Answer with exact words from the context whenever possible.\n\nQuestion: {question} Short answer:\n"
)
#: the same file's prompt of category-5 questions (get_gpt_answers, batch size 1)
QA_PROMPT_CAT_5 = "\nBased on the above context, answer the following question.\n\nQuestion: {question} Short answer:\n"
#: the official script appends this to category-2 questions (get_gpt_answers)
DATE_HINT = " Use DATE of CONVERSATION to answer with an approximate date."
#: ... and this to category-5 questions, the options in a random order (the loader's slots)
TWO_WAY = " Select the correct answer: (a) {option_a} (b) {option_b}. "
#: what the variation one-prompt-all-categories adds for every question in place of TWO_WAY
DECLINE = " If the context does not say, answer: Not mentioned in the conversation."
SOURCE = (
    "snap-research/LoCoMo@3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376 task_eval/gpt_utils.py: "
    "get_rag_context (rag_mode dialog, top_k 5), QA_PROMPT and QA_PROMPT_CAT_5 with get_gpt_answers' "
    "category-2 hint and category-5 choice, get_cat_5_answer"
)
#: the prompts: the official script's, or memplug's one prompt of before (protocol version 1)
PROMPTS = ("official", "one-prompt-all-categories")


def two_way_answer(reply: str, question: AgentQuestion) -> str:
    """The official get_cat_5_answer: a reply of one character is option a when it holds
    "a", else b; of three characters, a when it holds "(a)", else b; any other reply
    lower-cased (which changes no LoCoMo score: each metric lower-cases)."""
    a, b = question.slots.get("option_a"), question.slots.get("option_b")
    if a is None or b is None:  # asked without the choice (a samples file written without slots)
        return reply
    low = reply.strip().lower()
    if len(low) == 1:
        return a if "a" in low else b
    if len(low) == 3:
        return a if "(a)" in low else b
    return low


register_question_parser("locomo-two-way", two_way_answer)


def answer_protocol(prompt: str = "official") -> AnswerProtocol:
    """The official RAG protocol (evaluate_qa.py --use-rag --rag-mode dialog --top-k 5, batch
    size 1): the prompt is the retrieved turns, one per line as "<date_time>: <speaker> said,
    "<text>"" (memplug's message texts are exactly these lines), a blank line, then the
    question's prompt: QA_PROMPT; category 2 with DATE_HINT after the question; category 5
    with QA_PROMPT_CAT_5 and the two-way choice TWO_WAY, its reply mapped to the option's
    text (get_cat_5_answer).

    ``prompt="one-prompt-all-categories"``: memplug's protocol of before, one prompt for
    every question with the hint and DECLINE after each (version 1, so that its runs
    compare with the runs made before the official one was the default)."""
    if prompt == "one-prompt-all-categories":
        user = "{memory}\n\n" + QA_PROMPT.replace("{question}", "{question}" + DATE_HINT + DECLINE)
        return AnswerProtocol(
            name="locomo-rag",
            version="1",
            source=SOURCE,
            user=user,
            memory_item="{text}",
            memory_join="\n",
            unit="message",
            top_k=5,
            variations=("one-prompt-all-categories",),
        )
    return AnswerProtocol(
        name="locomo-rag",
        version="2",
        source=SOURCE,
        user="{memory}\n\n" + QA_PROMPT,
        memory_item="{text}",
        memory_join="\n",
        unit="message",
        top_k=5,
        user_by_category={
            category_name(2): "{memory}\n\n" + QA_PROMPT.replace("{question}", "{question}" + DATE_HINT),
            category_name(5): "{memory}\n\n" + QA_PROMPT_CAT_5.replace("{question}", "{question}" + TWO_WAY),
        },
        parse_by_category={category_name(5): "locomo-two-way"},
    )


def _categories(text: str) -> frozenset[int] | None:
    if text.strip().lower() in ("", "all"):
        return None
    try:
        chosen = frozenset(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        chosen = frozenset({0})
    if not chosen or not chosen <= set(CATEGORIES):
        raise MemplugError(f"option categories={text!r}: expected 'all' or numbers from 1-5 joined by commas")
    return chosen


class LoCoMoBuilder:
    """Ten very long conversations (19-32 sessions each) with QA in five categories."""

    info = DatasetInfo(
        name="locomo",
        version="1.0",
        description="LoCoMo (snap-research): very long multi-session conversations; QA in 5 categories "
        "(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial), official stemmed F1",
        language="en",
        capabilities=frozenset({"AR", "LRU"}),
        default_chunk_size=512,
        metrics=("locomo_f1", "locomo_f1_no_adv", "f1", "recall@K", "session_hit@K"),
        answer_prompt=answer_protocol().user,
        answer_prompt_source=SOURCE,
        protocol=answer_protocol(),
    )

    options = (
        Option("categories", str, "all", "question categories to ask: 'all' or e.g. 1,2,3,4 (official numbering)"),
        Option(
            "dates",
            bool,
            True,
            "start each turn's text with its session's date_time, as the official RAG "
            "context does (the reader needs it for temporal questions)",
        ),
        Option(
            "prompt",
            str,
            "official",
            "official: each category's question as the official script asks it "
            "(a date hint on 2, a two-way choice on 5, its option order drawn from --seed); "
            "one-prompt-all-categories: one prompt with both sentences after every question",
            choices=PROMPTS,
        ),
    )

    def info_for(self, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo:
        protocol = answer_protocol(values.get("prompt") or "official")
        return attrs.evolve(self.info, answer_prompt=protocol.user, protocol=protocol)

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'locomo'")
        categories = _categories(values["categories"])
        if options.data is None:
            raise MemplugError(
                "dataset 'locomo' loads the release: pass --data locomo10.json "
                "(github.com/snap-research/LoCoMo, data/locomo10.json)"
            )
        if options.data.is_dir():
            raise MemplugError(f"--data {options.data}: expected the release file locomo10.json, not a directory")
        return load_release(
            options.data, dates_in_text=values["dates"], categories=categories, choice_seed=options.seed
        )
