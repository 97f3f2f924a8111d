"""The data model every plugin speaks: messages in, questions asked, items recalled.

All classes are frozen attrs classes so that a sample can be shared between the
runner, the agent and the reader without anyone changing it under the others.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import attrs

#: Capabilities a dataset can probe (MemoryAgentBench, seed 002): accurate retrieval,
#: test-time learning, long-range understanding, conflict resolution.
CAPABILITIES = frozenset({"AR", "TTL", "LRU", "CR"})

#: K, the items recalled per question, where neither ``--top-k`` nor the dataset's protocol
#: sets it (and in a stored run that recorded none)
DEFAULT_TOP_K = 5


def _frozen_dict(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


# Converters with the element type spelled out: `converter=tuple` would leave the element
# type of the attribute's __init__ argument open for type checkers.
def _strings(values: Iterable[str]) -> tuple[str, ...]:
    if isinstance(values, str):  # answers="Paris" is one answer, not five letters
        return (values,)
    return tuple(values)


def _ids(values: Iterable[Any]) -> tuple[str, ...]:
    return tuple(str(x) for x in values)


def _messages(values: Iterable[Message]) -> tuple[Message, ...]:
    return tuple(values)


def _questions(values: Iterable[Question]) -> tuple[Question, ...]:
    return tuple(values)


def _items(values: Iterable[Recalled]) -> tuple[Recalled, ...]:
    return tuple(values)


def _capabilities(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


#: the metadata of a :class:`Message` that its text may already show (``Message.shows``)
SHOWABLE = ("time", "speaker")


def _shows(values: Iterable[str]) -> tuple[str, ...]:
    """Known names only, once each, in :data:`SHOWABLE`'s order (a stable JSON form)."""
    given = {values} if isinstance(values, str) else set(values)
    unknown = given - set(SHOWABLE)
    if unknown:
        raise ValueError(f"Message.shows: unknown {sorted(unknown)}; known: {list(SHOWABLE)}")
    return tuple(k for k in SHOWABLE if k in given)


@attrs.frozen
class Message:
    """One piece of user history, in the order the dataset gives it.

    ``text`` is the message as the benchmark's own code renders it for a memory: LoCoMo's
    RAG line ``'<date_time>: Speaker said, "..."'``, LongMemEval's "Session Date: ..." and
    the turn as JSON, MemSim's "(place, time)" stamp. Native agents store exactly that.
    ``time`` (ISO 8601 where the release allows) and ``speaker`` are metadata for agents
    and metrics that read them (recency, decay, session hits), whatever the text holds.

    ``shows`` names which of ``time`` and ``speaker`` the text already shows, in its own
    format. It is declared by the dataset, never guessed from the text: adapters that
    write a message into an external system put ``[time] speaker:`` before the text
    (:func:`memplug.adapters.external.message_text`) for what it does not show, so no
    system stores "[2024-03-02T10:00:00] Ana: [2024-03-02T10:00] Ana: We land ...".
    """

    id: str = attrs.field(converter=str)
    text: str
    time: str | None = None
    speaker: str | None = None
    meta: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_dict)
    shows: tuple[str, ...] = attrs.field(default=(), converter=_shows)


@attrs.frozen
class Question:
    """A question about the history, with everything needed to score the answer.

    Agents never see a Question's answers, targets or anchors: the runner hands them
    an :class:`AgentQuestion` view instead.
    """

    id: str = attrs.field(converter=str)
    text: str
    answers: tuple[str, ...] = attrs.field(converter=_strings)
    category: str = "default"
    choices: Mapping[str, str] | None = None
    correct_choice: str | None = None
    #: ids of the messages that hold the answer
    targets: tuple[str, ...] = attrs.field(default=(), converter=_ids)
    #: key spans of the answer (PerLTQA memory anchors)
    anchors: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    time: str | None = None
    meta: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_dict)


def is_abstention(question: Question) -> bool:
    """Whether the history cannot answer ``question``: ``meta["abstention"]`` (a
    conversations file's flag, LongMemEval's loader), or ``_abs`` in its LongMemEval
    question id, the release's own mark (evaluate_qa.py: ``'_abs' in
    entry['question_id']``), which MemoryAgentBench's LongMemEval questions keep. Core's
    ``--limit`` strata and the LongMemEval judge's abstention prompt both follow it."""
    return bool(question.meta.get("abstention")) or "_abs" in str(question.meta.get("question_id", question.id))


@attrs.frozen
class AgentQuestion:
    """What a memory agent is allowed to see of a question: no answers, targets or anchors."""

    id: str
    text: str
    category: str
    choices: Mapping[str, str] | None = None
    time: str | None = None
    #: the question's time as the release writes it ("2024年04月05日 周五 11:59"), for prompts
    time_text: str | None = None
    #: values of the dataset's own prompt slots for this question (its ``meta["slots"]``), e.g.
    #: the options of LoCoMo's category-5 two-way choice: what the official prompt shows the
    #: model, never a gold answer by itself
    slots: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_dict)

    @classmethod
    def of(cls, question: Question) -> "AgentQuestion":
        when = question.meta.get("time_text")
        slots = question.meta.get("slots") or {}
        return cls(
            question.id,
            question.text,
            question.category,
            question.choices,
            question.time,
            None if when is None else str(when),
            {str(k): str(v) for k, v in slots.items()},
        )


@attrs.frozen
class Sample:
    """One context: a MemSim trajectory, a FactConsolidation context, a PerLTQA character."""

    id: str = attrs.field(converter=str)
    messages: tuple[Message, ...] = attrs.field(converter=_messages)
    questions: tuple[Question, ...] = attrs.field(converter=_questions)
    meta: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_dict)


@attrs.frozen
class Chunk:
    """What an agent receives per ingestion step: whole messages, in dataset order.

    A message longer than a chunk is split; its parts keep the original message id
    and carry ``meta["part"]`` = (index, count).
    """

    index: int
    messages: tuple[Message, ...] = attrs.field(converter=_messages)

    @property
    def text(self) -> str:
        return "\n".join(m.text for m in self.messages)

    @property
    def message_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.id for m in self.messages))


def _str_tuple(values: Iterable[Any]) -> tuple[str, ...]:
    """A tuple of strings; one that already is, is kept as it is (agents create many items)."""
    if type(values) is tuple:
        for v in values:  # a loop, not all(<generator>): items are made by the thousand
            if type(v) is not str:
                break
        else:
            return values
    return tuple(str(v) for v in values)


@attrs.frozen
class Recalled:
    """One item an agent brings back for a question."""

    text: str
    score: float | None = None
    message_ids: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)

    def as_dict(self) -> dict[str, Any]:
        """The item as a record stores it (``attrs.asdict``, without its generic walk:
        the runner converts every recalled item of every question)."""
        return {"text": self.text, "score": self.score, "message_ids": list(self.message_ids)}


@attrs.frozen
class StoredItem:
    """One thing a memory system holds for a sample, as the system stores it: a Mem0
    memory, a Graphiti fact, a Letta passage, a Cognee node, a native agent's message.

    Listed by an agent's optional ``stored()`` (see :class:`memplug.protocols.ListsStored`)
    and written to the run's stored.jsonl, so that a reader of a low score can see what
    the system kept, not only what it recalled.
    """

    text: str
    #: the system's own id for the item, when it has one
    id: str | None = None
    #: the dataset messages the item came from, when the system keeps that link
    message_ids: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    #: anything else worth seeing: a type, a strength, a creation time
    meta: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_dict)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "id": self.id, "message_ids": list(self.message_ids)}
        if self.meta:
            out["meta"] = dict(self.meta)
        return out


@attrs.frozen
class Recall:
    """An agent's reply to a question. ``answer=None`` lets the run's reader answer."""

    items: tuple[Recalled, ...] = attrs.field(default=(), converter=_items)
    answer: str | None = None
    #: free-form notes for the record, e.g. that ids are unavailable for this system
    meta: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_dict)


@attrs.frozen
class DatasetInfo:
    """What a dataset builder declares about the data it builds."""

    name: str
    version: str
    description: str
    language: str = "en"
    capabilities: frozenset[str] = attrs.field(default=frozenset(), converter=_capabilities)
    default_chunk_size: int = 512
    #: metric names, the first one is the headline metric
    metrics: tuple[str, ...] = ("em", "subem", "f1")
    #: the prompt the llm reader uses; ``{memory}``, ``{question}`` and ``{choices}`` are filled in
    answer_prompt: str = (
        "Answer the question using only the memory below. Reply with the answer only.\n\n"
        "Memory:\n{memory}\n\nQuestion: {question}\nAnswer:"
    )
    #: where the prompt comes from (paper, section)
    answer_prompt_source: str = "memplug default"
    #: the benchmark's answer protocol (memplug.answering.AnswerProtocol): prompt, parsing,
    #: memory unit, depth; None: one made of ``answer_prompt`` (see memplug.answering.protocol_of)
    protocol: Any = None
    #: what a reader must be able to do for a question category, e.g. {"aggregative": "counting"}:
    #: a reader that cannot (ExtractiveReader.cannot) leaves those questions unanswered, and says so
    needs: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_dict)

    @capabilities.validator
    def _known(self, _attr: attrs.Attribute[frozenset[str]], value: frozenset[str]) -> None:
        unknown = value - CAPABILITIES
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {sorted(CAPABILITIES)}")


@attrs.define
class CheckReport:
    """What a dataset builder's validator returns (``check``, ``check_data``: :mod:`memplug.protocols`)
    to ``memplug generate --check``: ``ok`` is False when there is any problem; ``stats`` are
    printed as they are."""

    ok: bool
    problems: list[str]
    stats: dict[str, Any]
