"""Causal generation (seed 000, §3.3): profile -> hints -> messages, question, answer.

Each builder picks target entities and attributes from a sampled profile, lists the
hints (entity, attribute, value) that the messages will state — the targets plus
entity-side noise (the same attribute of other entities) and attribute-side noise
(other attributes of the same entity) — and derives the question, the textual answer
and three distractors from those hints alone.
"""

from __future__ import annotations

import random
from typing import Any, Mapping

import attrs

from . import ops
from .language import EVENT_ATTRS, OBJECT_ATTRS, PERSON_ATTRS, USER_ATTRS, Language
from .network import ENTITIES, EVENTS, PERSONS, event_duration, event_time
from .values import ValueSpace

CATEGORIES = ("simple", "conditional", "comparative", "aggregative", "post_processing", "noisy")
GROUP = {
    "user": "user",
    "relative": "person",
    "colleague": "person",
    "work_event": "event",
    "fun_event": "event",
    "place": "place",
    "item": "item",
}
#: attributes that make no sense as a condition ("the event whose content is ...")
_NO_COND = {"content", "comment", "gender"}
_COMPARABLE = {"person": ("age", "height", "birthday"), "event": ("scale", "duration")}
_COUNTABLE = {
    "person": ("age", "height", "education", "hometown", "workplace", "gender", "hobby"),
    "event": ("scale", "duration", "location"),
}


@attrs.define
class Hint:
    """One fact a message states; ``ref`` says how the message names the entity."""

    entity: str
    attribute: str
    value: Any
    role: str  # "target", "entity_noise", "attribute_noise" (or "eta_noise" for other users' facts)
    ref: str = "label"  # "label", "full" or "name"


@attrs.define
class Draft:
    """A trajectory before it gets message ids, times and choice letters."""

    category: str
    scenario: str
    hints: list[Hint]
    question: str
    answer: str
    distractors: list[str]
    spec: dict[str, Any]


class Maker:
    """Builds the six kinds of trajectories of MemDaily from one profile."""

    def __init__(self, space: ValueSpace, lang: Language) -> None:
        self.space, self.lang = space, lang
        self.positions = tuple(dict.fromkeys(p for o in space.occupations.values() for p in (*o[1], *o[2])))
        self.cities = tuple(dict.fromkeys((*space.hometowns, *space.work_cities)))

    # ---------------------------------------------------------------- helpers
    def label(self, attr: str) -> str:
        return self.lang.labels[attr]

    def ref_text(self, profile: Mapping[str, dict[str, Any]], entity: str, style: str) -> str:
        kind, attrs_ = ENTITIES[entity], profile[entity]
        if style == "full":
            return self.lang.full_ref(kind, attrs_)
        if style == "name":
            return self.lang.name_ref(kind, attrs_)
        return self.lang.label_ref(kind, attrs_)

    def render(self, attr: str, value: Any) -> str:
        return self.lang.render(attr, value)

    def attrs_of(self, entity: str) -> tuple[str, ...]:
        group = GROUP[ENTITIES[entity]]
        return {"user": USER_ATTRS, "person": PERSON_ATTRS, "event": EVENT_ATTRS}.get(group, OBJECT_ATTRS)

    def cond_text(self, group: str, attr: str, value: Any) -> str:
        return self.lang.cond_phrase[group].format(label=self.label(attr), v=self.render(attr, value))

    @staticmethod
    def fill_noise(
        rng: random.Random,
        hints: list[Hint],
        profile: Mapping[str, dict[str, Any]],
        pool: tuple[str, ...],
        attribute: str | None,
        size: int,
    ) -> None:
        """Entity-side noise: ``attribute`` (or any attribute) of other entities, up to ``size`` hints."""
        taken = {h.entity for h in hints}
        others = [e for e in pool if e not in taken]
        rng.shuffle(others)
        for entity in others:
            if len(hints) >= size:
                break
            attr = attribute if attribute and attribute in profile[entity] else None
            if attr is None:
                return
            style = rng.choice(("label", "full", "name")) if ENTITIES[entity] in ("relative", "colleague") else "label"
            hints.append(
                Hint(entity, attr, profile[entity][attr], "entity_noise", "label" if attr == "name" else style)
            )

    # ---------------------------------------------------------------- distractors
    def distractors(
        self, rng: random.Random, attr: str, value: Any, profile: Mapping[str, dict[str, Any]], group: str, n: int = 3
    ) -> list[str]:
        """Values of the same attribute from other entities of the group first, then perturbed or sampled values."""
        answer = self.render(attr, value)
        out: list[str] = []

        def offer(candidate: Any) -> None:
            text = self.render(attr, candidate)
            if text != answer and text not in out and len(out) < n:
                out.append(text)

        if attr not in (
            "age",
            "height",
            "birthday",
            "phone",
            "id_number",
            "passport",
            "bank_card",
            "license",
            "email",
            "comment",
        ):
            peers = ("person", "user") if group in ("person", "user") else (group,)
            same = [
                a[attr] for e, a in profile.items() if attr in a and a[attr] != value and GROUP[ENTITIES[e]] in peers
            ]
            rng.shuffle(same)
            for candidate in same[:2]:
                offer(candidate)
        for _ in range(60):
            if len(out) >= n:
                break
            offer(self.perturb(rng, attr, value, group))
        if len(out) < n:  # a tiny value space: fall back to marked variants, still distinct
            for k in range(1, 10):
                offer(f"{value}{'·' * k}")
        return out

    def perturb(self, rng: random.Random, attr: str, value: Any, group: str = "person") -> Any:
        s = self.space
        if attr == "name" and group in ("place", "item"):
            names = s.places if group == "place" else s.items
            same_type = next((v for v in names.values() if value in v), None)
            return rng.choice(same_type if same_type and rng.random() < 0.8 else rng.choice(tuple(names.values())))
        if attr == "age":
            return value + rng.choice((-3, -2, -1, 1, 2, 3))
        if attr == "height":
            return value + rng.choice((-5, -4, -3, -2, -1, 1, 2, 3, 4, 5))
        if attr == "birthday":
            month, day = int(value[:2]), int(value[3:])
            if rng.random() < 0.5:
                day = min(28, max(1, day + rng.choice((-3, -2, -1, 1, 2, 3))))
            else:
                month = (month - 1 + rng.choice((-1, 1))) % 12 + 1
                day = min(day, 28)
            return f"{month:02d}-{day:02d}"
        if attr in ("phone", "id_number", "passport", "bank_card", "license", "email"):
            chars = list(str(value))
            digits = [i for i, ch in enumerate(chars) if ch.isdigit()]
            for i in rng.sample(digits, min(2, len(digits))):
                chars[i] = rng.choice([d for d in "0123456789" if d != chars[i]])
            return "".join(chars)
        if attr == "scale":
            return rng.choice(s.scales)
        if attr == "duration":
            return event_duration(rng, s)
        pools = {
            "hometown": self.cities,
            "workplace": self.cities,
            "location": self.cities,
            "education": s.education,
            "occupation": tuple(s.occupations),
            "position": self.positions,
            "hobby": s.hobbies,
            "personality": s.personalities,
            "gender": s.genders,
            "type": (*s.work_event_types, *s.fun_event_types),
        }
        if attr in pools:
            return rng.choice(pools[attr])
        if attr == "name":
            return (
                rng.choice(s.full_names)
                if s.full_names
                else (
                    f"{rng.choice(s.first_names[rng.choice(tuple(s.first_names))])} {rng.choice(s.surnames)}"
                    if s.lang == "en"
                    else f"{rng.choice(s.surnames)}{rng.choice(s.first_names[rng.choice(tuple(s.first_names))])}"
                )
            )
        if attr == "company":
            words = [w for w in s.company_words if w in value]
            return value.replace(words[0], rng.choice(s.company_words)) if words else f"{value} {rng.randint(2, 9)}"
        if attr == "time":
            return event_time(rng, s)
        if attr == "content":
            types = {**s.work_event_types, **s.fun_event_types}
            return value.replace(
                next((a for a in types.values() if a in value), value), rng.choice(tuple(types.values())), 1
            )
        if attr == "comment":
            for pros, cons in ((s.place_pros, s.place_cons), (s.item_pros, s.item_cons)):
                for phrase in (*pros, *cons):
                    if phrase in value:
                        return value.replace(phrase, rng.choice(pros if phrase in pros else cons), 1)
        return value

    # ---------------------------------------------------------------- categories
    def simple(self, rng: random.Random, profile: Mapping[str, dict[str, Any]]) -> Draft:
        r = rng.random()
        entity = (
            rng.choice(PERSONS)
            if r < 0.5
            else rng.choice(EVENTS)
            if r < 0.75
            else "user"
            if r < 0.9
            else rng.choice(("place_1", "item_1"))
        )
        group = GROUP[ENTITIES[entity]]
        attr = rng.choice(self.attrs_of(entity))
        style = "label" if attr == "name" else ("full" if group == "person" and rng.random() < 0.3 else "label")
        hints = [Hint(entity, attr, profile[entity][attr], "target", style)]
        side = [a for a in self.attrs_of(entity) if a != attr]
        for other in rng.sample(side, min(4, len(side))):
            hints.append(
                Hint(
                    entity,
                    other,
                    profile[entity][other],
                    "attribute_noise",
                    "label" if attr == "name" or other == "name" else style,
                )
            )
        pool = {"person": PERSONS, "event": EVENTS, "user": PERSONS}.get(group, ("place_1", "item_1"))
        self.fill_noise(rng, hints, profile, pool, attr, 8)
        if len(hints) < 8:  # objects have no peers of their kind: add facts about other people
            self.fill_noise(rng, hints, profile, PERSONS, rng.choice(("hobby", "workplace", "age")), 8)
        ref = self.ref_text(profile, entity, "label")
        phrasing = rng.choice(self.lang.simple_q[group if group in ("person", "user") else "other"])
        question = phrasing.format(poss=self.lang.possessive(ref), ref=ref, label=self.label(attr))
        scenario = {"person": "roles", "event": "events", "user": "self"}.get(group, f"{group}s")
        return Draft(
            "simple",
            scenario,
            hints,
            question,
            self.render(attr, profile[entity][attr]),
            self.distractors(rng, attr, profile[entity][attr], profile, group),
            {"op": "lookup", "entity": entity, "attribute": attr},
        )

    def _bridge(
        self, rng: random.Random, profile: Mapping[str, dict[str, Any]], asked: tuple[str, ...] | None = None
    ) -> tuple[str, str, str, str, list[Hint]]:
        """A bridge entity, a condition attribute unique to it, an asked attribute, and its hints."""
        group = "person" if rng.random() < 0.7 else "event"
        entity = rng.choice(PERSONS if group == "person" else EVENTS)
        attrs_ = PERSON_ATTRS if group == "person" else EVENT_ATTRS
        choices = [a for a in (asked or attrs_) if a in attrs_]
        attr = rng.choice(choices)
        peers = PERSONS if group == "person" else EVENTS
        conds = [a for a in attrs_ if a != attr and a not in _NO_COND]
        # prefer a condition that singles the bridge out in the whole profile, not only in the trajectory
        unique = [a for a in conds if sum(profile[e][a] == profile[entity][a] for e in peers) == 1]
        cond = rng.choice(unique or conds)
        named = "name" in (attr, cond)
        style = "label" if named or group == "event" or rng.random() < 0.7 else "full"
        hints = [
            Hint(entity, cond, profile[entity][cond], "target", style),
            Hint(entity, attr, profile[entity][attr], "target", style),
        ]
        side = [a for a in attrs_ if a not in (attr, cond) and a != "name"]
        for other in rng.sample(side, 3):
            hints.append(Hint(entity, other, profile[entity][other], "attribute_noise", style))
        self.fill_noise(rng, hints, profile, PERSONS if group == "person" else EVENTS, attr, 8)
        return group, entity, cond, attr, hints

    def conditional(self, rng: random.Random, profile: Mapping[str, dict[str, Any]], noisy: bool = False) -> Draft:
        group, entity, cond, attr, hints = self._bridge(rng, profile)
        value = profile[entity][attr]
        cond_text = self.cond_text(group, cond, profile[entity][cond])
        question = rng.choice(self.lang.cond_q).format(label=self.label(attr), cond=cond_text)
        question = question[:1].upper() + question[1:]
        if noisy:
            sep = " " if self.lang.code == "en" else ""
            chatter = sep.join(rng.sample(self.lang.small_talk, rng.randint(2, 3)))
            question = f"{chatter}{sep}{rng.choice(self.lang.connectors)}{question}"
        return Draft(
            "noisy" if noisy else "conditional",
            "roles" if group == "person" else "events",
            hints,
            question,
            self.render(attr, value),
            self.distractors(rng, attr, value, profile, group),
            {"op": "lookup_by", "group": group, "cond": [cond, profile[entity][cond]], "attribute": attr},
        )

    def noisy(self, rng: random.Random, profile: Mapping[str, dict[str, Any]]) -> Draft:
        return self.conditional(rng, profile, noisy=True)

    def post_processing(self, rng: random.Random, profile: Mapping[str, dict[str, Any]]) -> Draft:
        descriptions = ops.CITY_DESCRIPTIONS[self.lang.code]
        for _ in range(20):
            group, entity, cond, attr, hints = self._bridge(rng, profile, tuple(ops.DERIVATIONS.values()))
            fns = [f for f, a in ops.DERIVATIONS.items() if a == attr]
            fn = rng.choice(fns)
            if not fn.startswith("city_") or profile[entity][attr] in descriptions:
                break
        value = profile[entity][attr]
        answer = ops.derive(fn, value, self.lang)
        if fn == "digit_sum" or fn == "days":
            base = ops.digit_sum(value) if fn == "digit_sum" else int(value)
            offsets = rng.sample((-3, -2, -1, 1, 2, 3, 7, -7), 3)
            wrong = [str(base + o) if fn == "digit_sum" else self.lang.days(base + o) for o in offsets if base + o > 0]
        elif fn == "season":
            wrong = [s for s in self.lang.seasons if s != answer]
        else:
            wrong = [d for c, d in descriptions.items() if d != answer]
            rng.shuffle(wrong)
        distractors = list(dict.fromkeys(wrong))[:3]
        k = 4
        while len(distractors) < 3:  # days/digit sums near zero: push further out
            candidate = str(ops.digit_sum(value) + k) if fn == "digit_sum" else self.lang.days(int(value) + k)
            if candidate not in distractors and candidate != answer:
                distractors.append(candidate)
            k += 1
        cond_text = self.cond_text(group, cond, profile[entity][cond])
        question = self.lang.post_q[fn].format(cond=cond_text)
        return Draft(
            "post_processing",
            "roles" if group == "person" else "events",
            hints,
            question[:1].upper() + question[1:],
            answer,
            distractors,
            {"op": "derive", "group": group, "cond": [cond, profile[entity][cond]], "attribute": attr, "fn": fn},
        )

    def comparative(self, rng: random.Random, profile: Mapping[str, dict[str, Any]]) -> Draft:
        group = "person" if rng.random() < 0.6 else "event"
        pool = PERSONS if group == "person" else EVENTS
        attr = rng.choice(_COMPARABLE[group])
        direction = rng.choice(("max", "min"))
        order = list(pool)
        rng.shuffle(order)
        hints = [
            Hint(e, attr, profile[e][attr], "target" if i < 2 else "entity_noise", "full") for i, e in enumerate(order)
        ]
        a, b = order[0], order[1]
        display = {
            e: self.lang.name_ref(ENTITIES[e], profile[e]) if group == "person" else profile[e]["title"] for e in order
        }
        question = self.lang.compare_q[(attr, direction)].format(a=display[a], b=display[b])
        winner = ops.compare_winner({a: profile[a][attr], b: profile[b][attr]}, direction)
        options = [display[a], display[b], self.lang.same, self.lang.neither]
        answer = self.lang.same if winner is None else display[winner]
        return Draft(
            "comparative",
            "roles" if group == "person" else "events",
            hints,
            question,
            answer,
            [o for o in options if o != answer],
            {"op": "compare", "entities": [a, b], "attribute": attr, "direction": direction},
        )

    def aggregative(self, rng: random.Random, profile: Mapping[str, dict[str, Any]]) -> Draft:
        group = "person" if rng.random() < 0.6 else "event"
        pool = list(PERSONS if group == "person" else EVENTS)
        attr = rng.choice(_COUNTABLE[group])
        values = [profile[e][attr] for e in pool]
        s = self.space
        pred: list[Any]
        if attr == "age":
            pred, shown = ["lt", rng.choice((25, 30, 35, 40, 45, 50))], None
        elif attr == "height":
            pred, shown = ["ge", rng.choice((160, 165, 170, 175, 180))], None
        elif attr == "scale":
            pred, shown = ["ge", rng.choice((100, 500, 1000))], None
        elif attr == "duration":
            pred, shown = ["ge", rng.choice((7, 14, 30))], None
        elif attr == "education":
            level = rng.choice(s.education[1:])
            pred, shown = ["rank_ge", level, list(s.education)], level
        else:
            pick = rng.choice(values)
            pred, shown = ["eq", pick], pick
        x = shown if shown is not None else pred[1]
        pred_text = self.lang.count_pred[attr].format(x=x)
        question = self.lang.count_q[group].format(label=self.label(attr), pred=pred_text)
        count = sum(ops.holds(pred, v) for v in values)
        hints = [Hint(e, attr, profile[e][attr], "target", "full") for e in pool]
        side = rng.choice([a for a in (_COUNTABLE[group] + _COMPARABLE[group]) if a != attr])
        hints += [Hint(e, side, profile[e][side], "attribute_noise", "full") for e in pool]
        wrong = [k for k in range(len(pool) + 1) if k != count]
        rng.shuffle(wrong)
        return Draft(
            "aggregative",
            "roles" if group == "person" else "events",
            hints,
            question,
            self.lang.count_answer(count, group),
            [self.lang.count_answer(k, group) for k in wrong[:3]],
            {"op": "count", "group": group, "attribute": attr, "pred": pred},
        )

    def make(self, category: str, rng: random.Random, profile: Mapping[str, dict[str, Any]]) -> Draft:
        draft: Draft = getattr(self, category)(rng, profile)
        return draft
