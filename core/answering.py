"""A benchmark's answer protocol: what its official code does between memory and metric.

Two runs are comparable only when everything that feeds the metrics is the same: the
memory unit the agent is fed, the prompt the reader fills (system and user message,
how memories and choices are written, the current time), how a model's reply is parsed
into an answer, the retrieval depth, and how a reply maps to a choice. A dataset
plugin owns its :class:`AnswerProtocol`: by default the benchmark's official one, copied
from its code (the ``source`` names repository, file and commit), and each deviation
a named option recorded in run.json (``variations``) with the sha256 of every template,
so that a report never puts two protocols in one column without saying so.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Callable, Mapping, Sequence, cast

import attrs

from memplug.models import AgentQuestion, DatasetInfo, Recalled


#: memplug's own reply clean-up: surrounding white space
def _strip(reply: str) -> str:
    return reply.strip()


def _remove_space_and_ent(reply: str) -> str:
    """MemSim's ``remove_space_and_ent`` (benchmark/utils.py @ db9d5d5): every space and
    line break removed, nothing else; the result must then equal the letter exactly."""
    return reply.replace(" ", "").replace("\n", "")


#: reply parsers by name: a protocol names one, and run.json records the name
PARSERS: dict[str, Callable[[str], str]] = {
    "strip": _strip,
    "memsim": _remove_space_and_ent,
}


def register_parser(name: str, parse: Callable[[str], str]) -> None:
    """Add a reply parser that protocols (built-in or a plugin's) can name."""
    if name in PARSERS and PARSERS[name] is not parse:
        raise ValueError(f"reply parser {name!r} is already registered")
    PARSERS[name] = parse


#: parsers that need the question too (a reply "a" of a two-way choice means the text of
#: option a, which the question's ``slots`` hold), by name; a protocol names one per
#: category (``parse_by_category``), applied after ``parse``
QUESTION_PARSERS: dict[str, Callable[[str, AgentQuestion], str]] = {}


def register_question_parser(name: str, parse: Callable[[str, AgentQuestion], str]) -> None:
    """Add a parser of replies to a question that protocols can name per category."""
    if name in QUESTION_PARSERS and QUESTION_PARSERS[name] is not parse:
        raise ValueError(f"question parser {name!r} is already registered")
    QUESTION_PARSERS[name] = parse


def _sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


_SLOT = re.compile(r"\{([a-z][a-z0-9_]*)\}")


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with ``{memory}``, ``{question}``, ``{choices}``, ``{time}`` and the
    question's own slots (:attr:`AgentQuestion.slots`) filled; any other ``{name}`` stays.

    One pass of plain replacement, not str.format: prompts copied from papers and code
    hold JSON examples with braces, and a filled-in memory that itself reads
    "{question}" must stay as it is.
    """
    return _SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), template)


@attrs.frozen
class AnswerProtocol:
    """Everything between an agent's recalled items and the metrics, for one benchmark.

    ``user`` (and ``system``) are templates with the slots ``{memory}``, ``{question}``,
    ``{choices}`` and ``{time}`` (the question's time). ``memory_item`` writes one recalled
    item (``{n}``: its number from ``memory_start``; ``{text}``), joined by
    ``memory_join``; ``choice_item`` writes one choice (``{letter}``, ``{text}``), joined
    by ``choice_join``. ``parse`` names the reply parser (:data:`PARSERS`) applied to every
    prediction before it is scored. ``choices``: ``"exact"`` when a prediction must be
    the correct letter itself (after ``parse``), ``"lenient"`` when "B.", "(B)" or the
    choice's text count too. ``unit``: ``"message"`` when the official code feeds each
    message whole (one chunk per message), else None (chunks of ``chunk_size`` tokens,
    None: the agent's or dataset's default). ``top_k``: the official retrieval depth
    (None: memplug's ``--top-k``). ``user_by_category``: the user template of questions of
    a category, where the official code asks them otherwise (LoCoMo: a date hint on
    category 2, a two-way choice on category 5); ``parse_by_category``: the question
    parser (:data:`QUESTION_PARSERS`) of a category's replies.
    """

    name: str
    version: str
    source: str
    user: str
    system: str | None = None
    memory_item: str = "{n}. {text}"
    memory_start: int = 1
    memory_join: str = "\n"
    #: write each item on one line (its line breaks become spaces); official code keeps them
    one_line_items: bool = False
    choice_item: str = "{letter}. {text}"
    choice_join: str = "\n"
    parse: str = "strip"
    choices: str = "lenient"
    unit: str | None = None
    chunk_size: int | None = None
    top_k: int | None = None
    #: the named deviations from the official protocol in force (empty: the official one)
    variations: tuple[str, ...] = ()
    #: False for a protocol of memplug's own making (a dataset without official evaluation code)
    official: bool = True
    #: score the raw reply as well and keep the better score per metric (MemoryAgentBench's
    #: default_post_process scores both the reply and its parsed line)
    score_raw_too: bool = False
    #: question category -> the user template its questions are asked with (else ``user``)
    user_by_category: Mapping[str, str] = attrs.field(factory=dict)
    #: question category -> the name of a question parser its replies go through after ``parse``
    parse_by_category: Mapping[str, str] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if self.parse not in PARSERS:
            raise ValueError(f"unknown reply parser {self.parse!r}; known: {', '.join(sorted(PARSERS))}")
        if self.choices not in ("exact", "lenient"):
            raise ValueError(f"choices must be 'exact' or 'lenient', not {self.choices!r}")
        if self.unit not in (None, "message"):
            raise ValueError(f"unit must be 'message' or None, not {self.unit!r}")
        for name in self.parse_by_category.values():
            if name not in QUESTION_PARSERS:
                raise ValueError(f"unknown question parser {name!r}; known: {', '.join(sorted(QUESTION_PARSERS))}")

    def memory(self, items: Sequence[Recalled]) -> str:
        texts = [" ".join(item.text.split()) if self.one_line_items else item.text for item in items]
        return self.memory_join.join(
            self.memory_item.replace("{n}", str(i)).replace("{text}", text)
            for i, text in enumerate(texts, start=self.memory_start)
        )

    def choice_text(self, choices: Mapping[str, str] | None) -> str:
        return self.choice_join.join(
            self.choice_item.replace("{letter}", k).replace("{text}", v) for k, v in (choices or {}).items()
        )

    def messages(self, question: AgentQuestion, items: Sequence[Recalled]) -> list[dict[str, str]]:
        """The chat messages the reader sends: the system message (when there is one), then the user's.

        ``question`` is what the reader may see (no answers). Its time is written as the
        release writes it ("2024年04月05日 周五 11:59") when the loader kept that.
        """
        when = question.time_text or question.time or ""
        values = {
            **question.slots,
            "memory": self.memory(items),
            "question": question.text,
            "choices": self.choice_text(question.choices),
            "time": str(when),
        }
        out = [{"role": "system", "content": fill(self.system, values)}] if self.system is not None else []
        user = self.user_by_category.get(question.category, self.user)
        return out + [{"role": "user", "content": fill(user, values)}]

    def parse_reply(self, reply: str, question: AgentQuestion | None = None) -> str:
        """The prediction of a reply: ``parse``, then the question parser of its category."""
        parsed = PARSERS[self.parse](reply)
        name = self.parse_by_category.get(question.category) if question is not None else None
        return parsed if name is None or question is None else QUESTION_PARSERS[name](parsed, question)

    def vary(self, variation: str, **changes: Any) -> "AnswerProtocol":
        """This protocol with ``changes`` and ``variation`` named among its deviations."""
        return attrs.evolve(self, variations=(*self.variations, variation), **changes)

    def describe(self) -> dict[str, Any]:
        """For run.json: what the protocol is, what deviates, and a sha256 per template."""
        return {
            "name": self.name,
            "version": self.version,
            "source": self.source,
            "official": self.official and not self.variations,
            "variations": list(self.variations),
            "parse": self.parse,
            "score_raw_too": self.score_raw_too,
            "choices": self.choices,
            "unit": self.unit,
            "chunk_size": self.chunk_size,
            "top_k": self.top_k,
            "sha256": {
                "system": _sha256(self.system),
                "user": _sha256(self.user),
                "memory_item": _sha256(self.memory_item + self.memory_join),
                "choice_item": _sha256(self.choice_item + self.choice_join),
                # only where a protocol has them: older run.json files stay as they were
                **{f"user[{c}]": _sha256(t) for c, t in sorted(self.user_by_category.items())},
            },
            **({"parse_by_category": dict(self.parse_by_category)} if self.parse_by_category else {}),
        }

    @property
    def key(self) -> str:
        """What two runs must share to be compared: name, version, variations and templates."""
        d = self.describe()
        return (
            _sha256(
                repr(
                    (
                        d["name"],
                        d["version"],
                        d["variations"],
                        d["parse"],
                        d["choices"],
                        d["unit"],
                        d["chunk_size"],
                        d["top_k"],
                        sorted(d["sha256"].items()),
                        *([sorted(d["parse_by_category"].items())] if "parse_by_category" in d else []),
                    )
                )
            )
            or ""
        )


def protocol_of(info: DatasetInfo) -> AnswerProtocol:
    """The dataset's protocol, or one made of its answer prompt (for datasets that declare none)."""
    if info.protocol is not None:
        return cast(AnswerProtocol, info.protocol)
    return AnswerProtocol(
        name=f"{info.name}-memplug",
        version="1",
        source=info.answer_prompt_source,
        user=info.answer_prompt,
        one_line_items=True,
        official=False,
    )
