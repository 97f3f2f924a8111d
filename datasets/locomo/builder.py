"""`locomo`: LoCoMo (Maharana et al., ACL 2024), very long-term conversational memory.

Loads the release (``data/locomo10.json`` of snap-research/LoCoMo, see :mod:`.release`):
one sample per conversation, one message per turn, the evidence turns as targets.
Scored as the official ``task_eval/evaluation.py`` scores (:mod:`.scoring`), with turn
recall@K and session hit@K for retrieval. docs/datasets/locomo.md has the details.
"""

from __future__ import annotations

from typing import Iterable

from memplug.datasets.locomo.release import CATEGORIES, load_release
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

#: snap-research/LoCoMo@3eb6f2c task_eval/gpt_utils.py: CONV_START_PROMPT, then the
#: context, then QA_PROMPT. The official script asks category 5 as a two-way choice
#: ("(a) Not mentioned in the conversation (b) <adversarial answer>"); memplug asks every
#: question the same open way, so the last sentence of the instruction says how to
#: decline, in the words the official category-5 rule accepts.
ANSWER_PROMPT = (
    "Below is a conversation between two people. The conversation takes place over multiple days and the "
    "date of each turn is written at its beginning.\n\n{memory}\n\n"
    "Based on the above context, write an answer in the form of a short phrase for the following question. "
    "Answer with exact words from the context whenever possible. If the question is about a date, use the "
    "dates of the conversation to answer with an approximate date. If the conversation does not say, "
    "answer \"Not mentioned in the conversation\".\n\n"
    "Question: {question} Short answer:"
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
        answer_prompt=ANSWER_PROMPT,
        answer_prompt_source="LoCoMo task_eval/gpt_utils.py (snap-research/LoCoMo@3eb6f2c): CONV_START_PROMPT "
                             "and QA_PROMPT, with the category-2 date hint and a way to decline (category 5)",
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
