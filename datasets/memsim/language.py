"""What a language contributes to generation: value rendering, templates, question wording.

Rendering is shared by the generator and the validator, so that both turn a hint's
canonical value (an int for ages, "MM-DD" for birthdays, days for durations) into
exactly the text that the messages and answers carry.
"""

from __future__ import annotations

import datetime as dt
from typing import Callable, Mapping

import attrs

#: attributes asked about per entity kind, and those that may serve as a condition
PERSON_ATTRS = (
    "name",
    "age",
    "height",
    "birthday",
    "hometown",
    "workplace",
    "education",
    "occupation",
    "position",
    "company",
    "hobby",
    "personality",
    "phone",
    "email",
)
USER_ATTRS = PERSON_ATTRS[1:] + ("id_number", "passport", "bank_card", "license")
EVENT_ATTRS = ("type", "content", "location", "time", "scale", "duration")
OBJECT_ATTRS = ("name", "comment")
#: attributes whose values a SWI (diversity) is computed over
KEY_ATTRS = (
    "gender",
    "age",
    "height",
    "hometown",
    "workplace",
    "education",
    "occupation",
    "hobby",
    "personality",
    "relationship",
    "type",
    "location",
    "scale",
    "duration",
)


@attrs.frozen
class Language:
    """Templates and renderers of one language; ``{ref}``/``{poss}``/``{v}``/``{a_v}`` are filled in."""

    code: str
    render: Callable[[str, object], str]
    labels: Mapping[str, str]
    #: kind ("user", "person", "event", "place", "item") -> attribute -> message templates
    messages: Mapping[str, Mapping[str, tuple[str, ...]]]
    simple_q: Mapping[str, tuple[str, ...]]
    cond_phrase: Mapping[str, str]
    cond_q: tuple[str, ...]
    compare_q: Mapping[tuple[str, str], str]
    same: str
    neither: str
    count_q: Mapping[str, str]
    count_pred: Mapping[str, str]
    count_answer: Callable[[int, str], str]
    post_q: Mapping[str, str]
    seasons: tuple[str, str, str, str]
    days: Callable[[int], str]
    small_talk: tuple[str, ...]
    connectors: tuple[str, ...]
    #: "{text} (place: {place}, time: {time})" as MemSim's benchmark shows messages
    stamp: str
    #: strftime-free formatting of a datetime for the stamp
    when: Callable[[dt.datetime], str]
    #: reference forms: kind -> callables of the entity's attributes
    label_ref: Callable[[str, Mapping[str, object]], str]
    full_ref: Callable[[str, Mapping[str, object]], str]
    name_ref: Callable[[str, Mapping[str, object]], str]
    #: rewrite prompt for the optional LLM pass
    rewrite_prompt: str

    def fill(self, template: str, ref: str, value: str) -> str:
        return template.format(
            ref=ref,
            Ref=_cap(ref),
            poss=self.possessive(ref),
            Poss=_cap(self.possessive(ref)),
            v=value,
            a_v=self.article(value),
        )

    def possessive(self, ref: str) -> str:
        if self.code == "zh":
            return f"{ref}的"
        if ref == "I":
            return "my"
        return f"{ref}'s"

    def article(self, value: str) -> str:
        if self.code == "zh":
            return value
        return f"{'an' if value[:1].lower() in 'aeiou' else 'a'} {value}"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].isascii() else text
