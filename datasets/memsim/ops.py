"""Answer functions f(·) of the causal generation mechanism (seed 000, §3.3).

The generator states each answer while it builds a trajectory; the validator
recomputes it here from nothing but the trajectory's own hints, so a mismatch means
the messages do not support the answer. The reasoning factors ψ of post-processing
questions (digit sum, season, city description, days) are defined here once.
"""

from __future__ import annotations

from typing import Any, Mapping, cast

from .language import Language
from . import values_en, values_zh

#: post-processing reasoning factors: name -> attribute they read
DERIVATIONS = {
    "digit_sum": "phone",
    "season": "birthday",
    "city_workplace": "workplace",
    "city_hometown": "hometown",
    "city_location": "location",
    "days": "duration",
}
CITY_DESCRIPTIONS = {"en": values_en.CITIES, "zh": values_zh.CITIES}


class Unsupported(Exception):
    """The hints do not determine the answer the question asks for."""


def digit_sum(phone: str) -> int:
    """ "the sum of the last five digits of the phone number" (the seed's example of ψ)."""
    return sum(int(ch) for ch in str(phone)[-5:])


def season_index(birthday: str) -> int:
    """Meteorological seasons of the northern hemisphere: 0 spring (Mar-May) ... 3 winter."""
    month = int(str(birthday)[:2])
    return (month - 3) % 12 // 3


def derive(fn: str, value: Any, lang: Language) -> str:
    if fn == "digit_sum":
        return str(digit_sum(value))
    if fn == "season":
        return lang.seasons[season_index(value)]
    if fn.startswith("city_"):
        table = CITY_DESCRIPTIONS[lang.code]
        if value not in table:
            raise Unsupported(f"no description for city {value!r}")
        return table[value]
    if fn == "days":
        return lang.days(int(value))
    raise Unsupported(f"unknown derivation {fn!r}")


def holds(pred: list[Any], value: Any) -> bool:
    """Aggregative predicates: ["lt", n], ["ge", n], ["eq", x], ["rank_ge", x, levels]."""
    op = pred[0]
    if op == "lt":
        return int(value) < int(pred[1])
    if op == "ge":
        return int(value) >= int(pred[1])
    if op == "eq":
        return cast(bool, value == pred[1])
    if op == "rank_ge":
        levels = list(pred[2])
        return value in levels and levels.index(value) >= levels.index(pred[1])
    raise Unsupported(f"unknown predicate {op!r}")


def compare_winner(values: Mapping[str, Any], direction: str) -> str | None:
    """The entity with the larger ("max") or smaller ("min") value; None on a tie."""
    (e1, v1), (e2, v2) = values.items()
    if v1 == v2:
        return None
    bigger = e1 if v1 > v2 else e2
    return bigger if direction == "max" else (e2 if bigger == e1 else e1)


Table = Mapping[str, Mapping[str, tuple[Any, str]]]


def evaluate(
    spec: Mapping[str, Any], table: Table, entities: Mapping[str, Mapping[str, Any]], lang: Language
) -> tuple[str, list[str]]:
    """Answer text and the ids of the messages it rests on, from ``{entity: {attr: (value, id)}}``."""
    op = spec["op"]

    def fact(entity: str, attr: str) -> tuple[Any, str]:
        try:
            return table[entity][attr]
        except KeyError:
            raise Unsupported(f"no message tells the {attr} of {entity}") from None

    def bridge() -> str:
        attr, value = spec["cond"]
        # every message counts here, noise included: the condition must single out one entity
        found = [e for e, facts in table.items() if attr in facts and facts[attr][0] == value]
        if len(found) != 1:
            raise Unsupported(f"condition {attr}={value!r} matches {len(found)} entities, not one")
        if entities.get(found[0], {}).get("group") != spec["group"]:
            raise Unsupported(f"condition {attr}={value!r} matches {found[0]}, not a {spec['group']}")
        return found[0]

    if op == "lookup":
        value, mid = fact(spec["entity"], spec["attribute"])
        return lang.render(spec["attribute"], value), [mid]
    if op in ("lookup_by", "derive"):
        entity = bridge()
        cond_mid = table[entity][spec["cond"][0]][1]
        value, mid = fact(entity, spec["attribute"])
        text = lang.render(spec["attribute"], value) if op == "lookup_by" else derive(spec["fn"], value, lang)
        return text, [cond_mid, mid]
    if op == "compare":
        attr = spec["attribute"]
        facts = {e: fact(e, attr) for e in spec["entities"]}
        winner = compare_winner({e: v for e, (v, _) in facts.items()}, spec["direction"])
        text = lang.same if winner is None else str(entities[winner]["display"])
        return text, [mid for _, mid in facts.values()]
    if op == "count":
        attr = spec["attribute"]
        # entities outside the trajectory (noise from other users) count too: they must not say it
        members = [
            e
            for e, facts in table.items()
            if attr in facts and entities.get(e, {}).get("group", spec["group"]) == spec["group"]
        ]
        if not members:
            raise Unsupported(f"no message tells the {attr} of any {spec['group']}")
        count = sum(holds(spec["pred"], table[e][attr][0]) for e in members)
        return lang.count_answer(count, spec["group"]), [table[e][attr][1] for e in members]
    raise Unsupported(f"unknown question op {op!r}")
