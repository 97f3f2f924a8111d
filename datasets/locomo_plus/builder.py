"""`locomo-plus`: LoCoMo-Plus (Li et al., 2026), LoCoMo with a sixth, "cognitive" category.

Loads the release's ``locomo_plus.json`` with a LoCoMo file (``locomo10.json``) as the
official ``data/unified_input.py`` merges them (:mod:`.release`): LoCoMo's conversations
with their five categories of questions, and one stitched conversation per LoCoMo-Plus
item whose trigger is asked after its cue. The official score of every question is the
LLM judge (``--judge MODEL``; :mod:`.judge`: correct 1, partial 0.5, wrong 0); LoCoMo's
five categories also get LoCoMo's own score (``locomo_f1``). Offline, the cognitive
answers are unscored: only whether the cue was recalled (``recall@K``) is measured.
docs/datasets/locomo-plus.md has the details.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from memplug.answering import AnswerProtocol
from memplug.datasets.locomo_plus.release import COMMIT, RELATION_TYPES, cognitive_category, load
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

#: evaluation_framework/task_eval/utils.py: CONV_START_PROMPT with the names _build_model_input
#: defaults to (evaluate_qa.py never passes the speakers' names), INSTRUCTION_QA, INSTRUCTION_COGNITIVE
CONV_START = (
    "Below is a conversation between two people: A and B. The conversation takes place over multiple "
    "days, and the date of each conversation is written at the beginning of the conversation.\n\n"
)
INSTRUCTION_QA = "Answer the following question based on the conversation above.\n\n"
INSTRUCTION_COGNITIVE = (
    "Your task: This is a memory-aware dialogue setting. "
    "You are continuing or reflecting on a prior conversation. "
    "Show that you are aware of the relevant memory or context from the evidence when you respond; "
    "your answer should naturally connect to or acknowledge that context.\n\n"
)
SOURCE = (
    f"github xjtuleeyf/Locomo-Plus@{COMMIT} evaluation_framework/task_eval/utils.py _build_model_input "
    "(CONV_START_PROMPT, INSTRUCTION_QA, INSTRUCTION_COGNITIVE) and data/unified_input.py (input_prompt)"
)
#: what the ``categories`` option accepts besides "all"
PARTS = ("1", "2", "3", "4", "5", "cognitive")


#: the user templates: ``_build_model_input(input_prompt, category)`` with the recalled turns as the dialogue
USER_QA = CONV_START + INSTRUCTION_QA + "{memory}\n\nQuestion: {question}"
USER_COGNITIVE = CONV_START + INSTRUCTION_COGNITIVE + "{memory}\n{question}"


def answer_protocol() -> AnswerProtocol:
    """The official model input, ``CONV_START + instruction + input_prompt``, with the recalled
    turns in place of the whole conversation (one per line, as written in the messages): for
    LoCoMo's categories the QA instruction and "Question: <question>" at the end
    (``_process_locomo``), for the cognitive ones the cognitive instruction and the trigger's
    own line at the end, as the stitched dialogue ends with it (``_stitch_dialogue_for_plus``)."""
    return AnswerProtocol(
        name="locomo-plus",
        version="1",
        source=SOURCE,
        user=USER_QA,
        memory_item="{text}",
        memory_join="\n",
        unit="message",
        user_by_category={cognitive_category(r): USER_COGNITIVE for r in RELATION_TYPES},
    )


def parts(text: str) -> tuple[frozenset[int], bool]:
    """(LoCoMo categories, whether the cognitive one) of the ``categories`` option."""
    chosen = {p.strip().lower() for p in text.split(",") if p.strip()}
    if chosen in (set(), {"all"}):
        chosen = set(PARTS)
    if not chosen <= set(PARTS):
        raise MemplugError(f"option categories={text!r}: expected 'all' or some of {', '.join(PARTS)} joined by commas")
    return frozenset(int(p) for p in chosen if p.isdigit()), "cognitive" in chosen


def release_paths(data: Path | None, locomo: Path | None) -> tuple[Path, Path]:
    """(locomo_plus.json, LoCoMo file) from ``--data`` and ``-o locomo=``: a directory is the
    repository's data/ folder, holding both; a file is the LoCoMo-Plus file, with the LoCoMo
    file named by the option or lying beside it as locomo10.json."""
    if data is None:
        raise MemplugError(
            "dataset 'locomo-plus' loads the release: pass --data locomo_plus.json -o locomo=locomo10.json "
            "(github.com/xjtuleeyf/Locomo-Plus, data/), or --data the folder holding both"
        )
    if not data.exists():
        raise MemplugError(f"--data {data}: no such file or folder")
    plus = data / "locomo_plus.json" if data.is_dir() else data
    if not plus.is_file():
        raise MemplugError(f"--data {data}: no locomo_plus.json in that folder")
    if locomo is None:
        locomo = plus.parent / "locomo10.json"
        if not locomo.is_file():
            raise MemplugError(
                f"dataset 'locomo-plus' needs a LoCoMo file: pass -o locomo=locomo10.json (none beside {plus})"
            )
    elif not locomo.is_file():
        raise MemplugError(f"option locomo={locomo}: no such file (expected LoCoMo's locomo10.json)")
    return plus, locomo


class LoCoMoPlusBuilder:
    """LoCoMo's conversations and questions, plus cue dialogues stitched into them and triggers asked later."""

    info = DatasetInfo(
        name="locomo-plus",
        version="1.0",
        description="LoCoMo-Plus (xjtuleeyf): LoCoMo's 5 categories plus cognitive cue/trigger pairs by relation type "
        "(causal, state, goal, value); official LLM judge (--judge; cognitive answers unscored "
        "without it), LoCoMo's F1 for the 5",
        language="en",
        capabilities=frozenset({"AR", "LRU"}),
        default_chunk_size=512,
        # the judge (only with --judge) first: the headline when there is one, the official score
        metrics=("judge", "locomo_f1", "locomo_f1_no_adv", "recall@K", "session_hit@K"),
        answer_prompt=answer_protocol().user,
        answer_prompt_source=SOURCE,
        protocol=answer_protocol(),
    )

    options = (
        Option(
            "locomo",
            Path,
            None,
            "the LoCoMo file the items are stitched into (locomo10.json; default: locomo10.json beside --data)",
        ),
        Option(
            "categories",
            str,
            "all",
            "questions to ask: 'all', or some of 1-5 (LoCoMo's) and 'cognitive', e.g. cognitive or 1,2,3,4",
        ),
    )

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'locomo-plus'")
        locomo_categories, cognitive = parts(values["categories"])
        plus, locomo = release_paths(options.data, values["locomo"])
        return load(plus, locomo, locomo_categories=locomo_categories, cognitive=cognitive)
