"""`membench`: MemBench (import-myself/Membench), accuracy by chosen letter and recall of target steps.

Loads ``MemData/{FirstAgent,ThirdAgent}/<type>.json`` (see :mod:`.release`): one sample per
trajectory, one message per step as the official agent stores it, one four-choice
question at its end. Scored as ``benchmark/env/Membenenv.py`` scores: the chosen letter
must equal ``ground_truth`` (``accuracy``, exact) and ``get_recall`` of the retrieved step
ids against ``target_step_id`` (``recall@K``, K = 10, the ``retri`` depth of the official
RetrievalMemory). Categories are ``<mode>/<type>`` (``ThirdAgent/simple``), the paper's
table cells of interaction mode by question type.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from memplug.answering import AnswerProtocol, register_parser
from memplug.errors import DataError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

from .release import load_release

COMMIT = "04956796150992cc6fbffef51c53f541376bf0f6"
SOURCE = (
    f"github import-myself/Membench@{COMMIT} benchmark/MembenchAgent.py INSTRUCTION_FIRST and response(), "
    "benchmark/env/Membenenv.py step() and get_recall, benchmark/memory/CommonMemory.py FullMemory.recall "
    "and RetrievalMemory.retri"
)

#: MembenchAgent.py INSTRUCTION_FIRST, verbatim (its "your'conversation" included): the
#: prompt response() formats for every question; INSTRUCTION_THIRD is defined but only
#: used in commented-out code. {choices} is "A. ..." to "D. ..." one per line, as the
#: template's four lines are.
INSTRUCTION_FIRST = (
    "Please answer the following question based on past memories of your'conversation with the user.\n"
    "Past memory: {memory}\n"
    "Question: (current time is {time}) {question}\n"
    "Choices:\n"
    "{choices}\n"
    "Please output the correct option for the question, only one corresponding letter, without any other messages.\n"
    "Example: D\n"
)


def parse_choice(reply: str) -> str:
    """The official agent asks for ``{"choice": "A"|...}`` with a JSON schema and reads
    ``json.loads(res)['choice']``; a reader without the schema answers the letter the
    prompt asks for. Both are read: the JSON's choice, else the reply with spaces and line
    breaks removed (``remove_space_and_ent`` of MembenchAgent.py, used in response_cap)."""
    try:
        parsed = json.loads(reply)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("choice"), str):
        choice: str = parsed["choice"]
        return choice
    return reply.replace(" ", "").replace("\n", "")


register_parser("membench", parse_choice)

#: FullMemory.recall joins the stored steps with "\n"; each step's text carries its
#: "{k}[|]" prefix (release.py). The official call forces the JSON schema, which a
#: protocol cannot (a recorded variation, always in force: "no-json-schema").
PROTOCOL = AnswerProtocol(
    name="membench",
    version="1",
    source=SOURCE,
    user=INSTRUCTION_FIRST,
    memory_item="{text}",
    memory_join="\n",
    choice_item="{letter}. {text}",
    choice_join="\n",
    parse="membench",
    choices="exact",
    unit="message",
    top_k=10,
    variations=("no-json-schema",),
)


class MemBenchBuilder:
    """MemBench's MemData: FirstAgent (participation) and ThirdAgent (observation) trajectories."""

    info = DatasetInfo(
        name="membench",
        version="1.0",
        description="MemBench (import-myself): four-choice questions after message trajectories, participation "
        "(FirstAgent) and observation (ThirdAgent); accuracy by letter, recall of target steps",
        language="en",
        capabilities=frozenset({"AR", "CR"}),
        metrics=("accuracy", "recall@K"),
        answer_prompt=PROTOCOL.user,
        answer_prompt_source=SOURCE,
        protocol=PROTOCOL,
        # aggregative questions count over several statements
        needs={"FirstAgent/aggregative": "counting", "ThirdAgent/aggregative": "counting"},
    )
    options = (
        Option(
            "mode",
            str,
            None,
            "keep only FirstAgent (participation) or ThirdAgent (observation)",
            choices=("FirstAgent", "ThirdAgent"),
        ),
    )

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'membench'")
        if options.data is None:
            raise DataError(
                "membench",
                "needs the release: --data MemData (or MemData/ThirdAgent, or one MemData/<mode>/<type>.json)",
            )
        mode = values["mode"]
        return (s for s in load_release(Path(options.data)) if mode in (None, s.meta["mode"]))
