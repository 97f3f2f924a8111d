"""`locomo`: LoCoMo (Maharana et al., ACL 2024), very long-term conversational memory.

Loads the release (``data/locomo10.json`` of snap-research/LoCoMo, see :mod:`.release`):
one sample per conversation, one message per turn, the evidence turns as targets.
Scored as the official ``task_eval/evaluation.py`` scores (:mod:`.scoring`), with turn
recall@K and session hit@K for retrieval. docs/datasets/locomo.md has the details.
"""

from __future__ import annotations

from typing import Iterable

from memplug.answering import AnswerProtocol
from memplug.datasets.locomo.release import CATEGORIES, load_release
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

#: snap-research/LoCoMo@3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376, task_eval/gpt_utils.py
QA_PROMPT = (
    "\nBased on the above context, write an answer in the form of a short phrase for the following question. "
    "Answer with exact words from the context whenever possible.\n\nQuestion: {question} Short answer:\n"
)
#: the official script appends this to category-2 questions (get_gpt_answers)
DATE_HINT = " Use DATE of CONVERSATION to answer with an approximate date."
#: what memplug's one prompt adds for category 5, which the official script asks as a
#: two-way choice "(a) Not mentioned in the conversation (b) <adversarial answer>"
DECLINE = " If the context does not say, answer: Not mentioned in the conversation."
SOURCE = ("snap-research/LoCoMo@3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376 task_eval/gpt_utils.py: "
          "get_rag_context (rag_mode dialog, top_k 5) and QA_PROMPT, with get_gpt_answers' category-2 hint")


def answer_protocol() -> AnswerProtocol:
    """The official RAG protocol (evaluate_qa.py --use-rag --rag-mode dialog --top-k 5, batch
    size 1): the prompt is the retrieved turns, one per line as "<date_time>: <speaker> said,
    "<text>"" (memplug's message texts are exactly these lines), a blank line, then
    QA_PROMPT. The official script asks category 2 with DATE_HINT after the question and
    category 5 as a two-way choice; a protocol has one prompt for every question, so
    memplug's puts the hint and DECLINE after every question: the variation
    "one-prompt-all-categories", recorded in run.json."""
    user = "{memory}\n\n" + QA_PROMPT.replace("{question}", "{question}" + DATE_HINT + DECLINE)
    return AnswerProtocol(
        name="locomo-rag", version="1", source=SOURCE, user=user, memory_item="{text}", memory_join="\n",
        unit="message", top_k=5, variations=("one-prompt-all-categories",),
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
        Option("dates", bool, True, "start each turn's text with its session's date_time, as the official RAG "
                                    "context does (the reader needs it for temporal questions)"),
    )

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'locomo'")
        categories = _categories(values["categories"])
        if options.data is None:
            raise MemplugError("dataset 'locomo' loads the release: pass --data locomo10.json "
                               "(github.com/snap-research/LoCoMo, data/locomo10.json)")
        if options.data.is_dir():
            raise MemplugError(f"--data {options.data}: expected the release file locomo10.json, not a directory")
        return load_release(options.data, dates_in_text=values["dates"], categories=categories)
