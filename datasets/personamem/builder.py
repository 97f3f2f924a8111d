"""`personamem`: PersonaMem (bowen-upenn/PersonaMem), the 32k, 128k and 1M releases.

Each question is a user message with four candidate replies, asked at a point of a
long persona-oriented chat history shared by many questions (see :mod:`.release` for how
samples keep the official cut). Scored by the official answer extraction
(:mod:`.scoring`), reported per question type as the paper's tables are. The official
evaluation is a long-context one: the whole prefix goes to the model as chat history;
``--agent full`` is that setting, any other agent answers from what it recalls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from memplug.answering import AnswerProtocol
from memplug.errors import DataError
from memplug.models import DatasetInfo, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

from .release import SIZES, load_release, release_files
from .scoring import COMMIT

#: Evaluation.query_llm's default instructions, inference_standalone_openai.py @ 041d82ac
INSTRUCTIONS = (
    "Find the most appropriate model response and give your final answer (a), (b), (c), or (d) "
    "after the special token <final_answer>."
)
SOURCE = (
    f"github bowen-upenn/PersonaMem@{COMMIT} inference_standalone_openai.py: Evaluation.query_llm "
    "(question + '\\n\\n' + instructions + '\\n\\n' + all_options after the context cut at "
    "end_index_in_shared_context), Evaluation.extract_answer"
)

#: The official user message, character for character: the release's all_options cell is
#: a list literal, rebuilt as "[" + the choices (each kept as its repr) joined by ", " + "]".
#: The context, which the official code sends as the chat turns before it, is one system
#: message here holding the recalled turns (a recorded variation, always in force: a
#: memory system returns items, not a transcript).
PROTOCOL = AnswerProtocol(
    name="personamem",
    version="1",
    source=SOURCE,
    system="{memory}",
    user="{question}\n\n" + INSTRUCTIONS + "\n\n[{choices}]",
    memory_item="{text}",
    memory_join="\n\n",
    choice_item="{text}",
    choice_join=", ",
    parse="strip",
    choices="exact",
    unit="message",
    variations=("context-as-one-message",),
)


class PersonaMemBuilder:
    """PersonaMem's questions_<size>.csv and shared_contexts_<size>.jsonl."""

    info = DatasetInfo(
        name="personamem",
        version="1.0",
        description="PersonaMem (bowen-upenn): four-option replies at points of long persona chats (32k/128k/1M); "
        "official answer extraction, by question type",
        language="en",
        capabilities=frozenset({"AR", "CR"}),
        metrics=("personamem_accuracy",),
        answer_prompt=PROTOCOL.user,
        answer_prompt_source=SOURCE,
        protocol=PROTOCOL,
    )
    options = (
        Option(
            "size",
            str,
            None,
            "which release to read when --data is a folder: 32k, 128k or 1M "
            "(questions_<size>.csv and shared_contexts_<size>.jsonl)",
            choices=SIZES,
        ),
    )

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'personamem'")
        if options.data is None:
            raise DataError(
                "personamem",
                "needs the release: --data questions_32k.csv (with "
                "shared_contexts_32k.jsonl beside it) or their folder",
            )
        questions, contexts = release_files(Path(options.data), values["size"])
        return load_release(questions, contexts)
