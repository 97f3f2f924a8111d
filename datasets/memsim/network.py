"""MemDaily's BRNet: 11 entities of 7 kinds and their attributes (seed 000, Table 23).

Entities: the user, two relatives, two colleagues, two work events, two
entertainment events, one place and one item. Edges carry the scenario's prior
knowledge, e.g. a relative's age depends on the user's age and the kind of relation,
relatives tend to share the user's hometown, colleagues share the user's workplace,
company and occupation, an event's title depends on the user's occupation or hobby.
Attributes whose name starts with ``_`` are latent (never told to the agent).
"""

from __future__ import annotations

import random
from typing import Any, Callable, Mapping

from .brnet import BRNet, Node
from .values import ValueSpace

#: entity key -> kind; the order is the order entities are listed in a profile
ENTITIES = {
    "user": "user",
    "relative_1": "relative",
    "relative_2": "relative",
    "colleague_1": "colleague",
    "colleague_2": "colleague",
    "work_event_1": "work_event",
    "work_event_2": "work_event",
    "fun_event_1": "fun_event",
    "fun_event_2": "fun_event",
    "place_1": "place",
    "item_1": "item",
}
PERSONS = ("relative_1", "relative_2", "colleague_1", "colleague_2")
EVENTS = ("work_event_1", "work_event_2", "fun_event_1", "fun_event_2")
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _digits(rng: random.Random, n: int) -> str:
    return f"{rng.randrange(10**n):0{n}d}"


def event_time(rng: random.Random, s: ValueSpace) -> str:
    """When an event is: "next Friday at 2 PM" / "下周五下午两点"."""
    if s.lang == "en":
        return f"{rng.choice(s.weeks)} {rng.choice(s.weekdays)} at {rng.choice(s.hours)}"
    return f"{rng.choice(s.weeks)}{rng.choice(s.weekdays)}{rng.choice(s.hours)}"


def event_duration(rng: random.Random, s: ValueSpace) -> int:
    """How long an event lasts, in days: 1-8 days, weeks or months."""
    return rng.randint(1, 8) * rng.choice(s.duration_units)


def _city_short(city: str) -> str:
    """ "广东深圳" -> "深圳": Chinese company names use the city without its province."""
    return city[-2:] if len(city) > 2 and not city.isascii() else city


class _Builder:
    def __init__(self, space: ValueSpace) -> None:
        self.s = space
        self.nodes: list[Node] = []

    def add(
        self, name: str, parents: tuple[str, ...], sampler: Callable[[random.Random, Mapping[str, Any]], Any]
    ) -> None:
        self.nodes.append(Node(name, parents, sampler))

    # --- conditional samplers shared by several entities ---------------------------
    def name_sampler(
        self, gender: str, rel: str | None, taken: tuple[str, ...]
    ) -> Callable[[random.Random, Mapping[str, Any]], str]:
        s = self.s

        def sample(rng: random.Random, p: Mapping[str, Any]) -> str:
            used = {p[t] for t in taken}
            for _ in range(50):
                if s.full_names:
                    name = rng.choice(s.full_names)
                else:
                    sex = p[gender] if p[gender] in s.first_names else rng.choice(tuple(s.first_names))
                    shares = rel is not None and s.relatives.get(p[rel], (None, 0, 0, False))[3]
                    surname = p["user._surname"] if shares and p.get("user._surname") else rng.choice(s.surnames)
                    given = rng.choice(s.first_names[sex])
                    name = f"{given} {surname}" if s.lang == "en" else f"{surname}{given}"
                if name not in used:
                    return name
            return f"{name}{len(used)}"  # only reachable with a tiny name list

        return sample

    def height(self, rng: random.Random, p: Mapping[str, Any]) -> int:
        female = next(iter(p.values())) == self.s.genders[1]
        return rng.randint(150, 175) if female else rng.randint(160, 190)

    @staticmethod
    def birthday(rng: random.Random, _p: Mapping[str, Any]) -> str:
        month = rng.randint(1, 12)
        return f"{month:02d}-{rng.randint(1, _DAYS_IN_MONTH[month - 1]):02d}"

    def education(self, rng: random.Random, p: Mapping[str, Any]) -> str:
        (occupation,) = p.values()
        low = min(self.s.occupations[occupation][0], len(self.s.education) - 1)
        return rng.choice(self.s.education[low:])

    def company(self, rng: random.Random, p: Mapping[str, Any], occ: str, city: str) -> str:
        word = rng.choice(self.s.company_words)
        kind = rng.choice(self.s.occupations[p[occ]][3])
        if self.s.lang == "en":
            return f"{p[city]} {word} {kind}" if rng.random() < 0.5 else f"{word} {kind}"
        return f"{_city_short(p[city])}{word}{kind}"

    def phone(self, rng: random.Random, _p: Mapping[str, Any]) -> str:
        return rng.choice(self.s.phone_prefixes) + _digits(rng, 8 if self.s.lang == "zh" else 7)

    def email(self, rng: random.Random, p: Mapping[str, Any], name: str, birthday: str, company: str) -> str:
        s = self.s
        mmdd = p[birthday].replace("-", "")
        if s.lang == "en":
            local = p[name].lower().replace(" ", ".").replace("'", "")
            domain = "".join(ch for ch in p[company].lower() if ch.isalpha()) + ".com"
            return f"{local}{mmdd}@{domain}"
        text, rom = p[name], s.romanized
        local = rom.get(text[:1], "") + rom.get(text[1:], "") if text[:1] in rom and text[1:] in rom else ""
        words = [w for w in s.company_words if w in p[company] and w in rom]
        if not local:
            return f"{rng.randint(10_000_000, 999_999_999)}@qq.com"
        return f"{local}{mmdd}@{rom[words[0]] if words else 'mail'}.com"

    def person(
        self,
        key: str,
        kind: str,
        rel_choices: Mapping[str, tuple[Any, ...]],
        prev: tuple[str, ...],
        names_taken: tuple[str, ...],
    ) -> None:
        s, add = self.s, self.add
        add(
            f"{key}.relationship",
            tuple(f"{k}.relationship" for k in prev),
            lambda rng, p: rng.choice([r for r in rel_choices if r not in set(p.values())] or list(rel_choices)),
        )
        if kind == "relative":
            add(
                f"{key}.gender",
                (f"{key}.relationship",),
                lambda rng, p: s.relatives[p[f"{key}.relationship"]][0] or rng.choice(s.genders),
            )

            def age(rng: random.Random, p: Mapping[str, Any]) -> int:
                _, lo, hi, _ = s.relatives[p[f"{key}.relationship"]]
                years: int = max(6, p["user.age"] + rng.randint(lo, hi))
                return years

            add(
                f"{key}.name",
                (f"{key}.gender", f"{key}.relationship", "user._surname", *names_taken),
                self.name_sampler(f"{key}.gender", f"{key}.relationship", names_taken),
            )
            add(
                f"{key}.hometown",
                ("user.hometown",),
                lambda rng, p: p["user.hometown"] if rng.random() < 0.8 else rng.choice(s.hometowns),
            )
            add(f"{key}.workplace", (), lambda rng, p: rng.choice(s.work_cities))
            add(f"{key}.occupation", (), lambda rng, p: rng.choice(tuple(s.occupations)))
            add(
                f"{key}.position",
                (f"{key}.occupation", f"{key}.age"),
                lambda rng, p: rng.choice(s.occupations[p[f"{key}.occupation"]][2 if p[f"{key}.age"] >= 40 else 1]),
            )
            add(
                f"{key}.company",
                (f"{key}.occupation", f"{key}.workplace"),
                lambda rng, p: self.company(rng, p, f"{key}.occupation", f"{key}.workplace"),
            )
        else:
            add(f"{key}.gender", (), lambda rng, p: rng.choice(s.genders))

            def age(rng: random.Random, p: Mapping[str, Any]) -> int:
                lo, hi, _ = s.colleagues[p[f"{key}.relationship"]]
                years: int = max(20, p["user.age"] + rng.randint(lo, hi))
                return years

            add(f"{key}.name", (f"{key}.gender", *names_taken), self.name_sampler(f"{key}.gender", None, names_taken))
            add(f"{key}.hometown", (), lambda rng, p: rng.choice(s.hometowns))
            add(f"{key}.workplace", ("user.workplace",), lambda rng, p: p["user.workplace"])
            add(f"{key}.occupation", ("user.occupation",), lambda rng, p: p["user.occupation"])
            add(
                f"{key}.position",
                (f"{key}.occupation", f"{key}.relationship"),
                lambda rng, p: rng.choice(
                    s.occupations[p[f"{key}.occupation"]][2 if s.colleagues[p[f"{key}.relationship"]][2] else 1]
                ),
            )
            add(f"{key}.company", ("user.company",), lambda rng, p: p["user.company"])
        add(f"{key}.age", ("user.age", f"{key}.relationship"), age)
        add(f"{key}.height", (f"{key}.gender",), self.height)
        add(f"{key}.birthday", (), self.birthday)
        add(f"{key}.education", (f"{key}.occupation",), self.education)
        add(f"{key}.hobby", (), lambda rng, p: rng.choice(s.hobbies))
        add(f"{key}.personality", (), lambda rng, p: rng.choice(s.personalities))
        add(f"{key}.phone", (), self.phone)
        add(
            f"{key}.email",
            (f"{key}.name", f"{key}.birthday", f"{key}.company"),
            lambda rng, p: self.email(rng, p, f"{key}.name", f"{key}.birthday", f"{key}.company"),
        )

    def event(self, key: str, types: Mapping[str, str], prev: str | None, topic: str) -> None:
        s, add = self.s, self.add
        add(
            f"{key}.type",
            (f"{prev}.type",) if prev else (),
            lambda rng, p: rng.choice([t for t in types if t not in set(p.values())] or list(types)),
        )
        add(
            f"{key}.location",
            ("user.workplace",),
            lambda rng, p: p["user.workplace"] if rng.random() < 0.7 else rng.choice(s.work_cities),
        )

        def title(rng: random.Random, p: Mapping[str, Any]) -> str:
            t, about = p[f"{key}.type"], p[topic]
            if s.lang == "en":
                return f"{about} {t}".title()
            return f"{about}{t}" if topic == "user.occupation" else f"{about}爱好者{t}"

        add(f"{key}.title", (f"{key}.type", topic), title)

        def content(rng: random.Random, p: Mapping[str, Any]) -> str:
            t, where, about = p[f"{key}.type"], p[f"{key}.location"], p[topic]
            if s.lang == "en":
                whom = f"for {about}s" if topic == "user.occupation" else f"about {about}"
                article = "an" if t[:1].lower() in "aeiou" else "a"
                return f"{article} {t} in {where} {whom}, where participants {types[t]}"
            return f"在{where}举办的{about}主题{t}，参与者将{types[t]}"

        add(f"{key}.content", (f"{key}.type", f"{key}.location", topic), content)
        add(f"{key}.time", (), lambda rng, p: event_time(rng, s))
        add(f"{key}.scale", (), lambda rng, p: rng.choice(s.scales))
        add(f"{key}.duration", (), lambda rng, p: event_duration(rng, s))

    def build(self) -> BRNet:
        s, add = self.s, self.add
        add("user.gender", (), lambda rng, p: rng.choice(s.genders))
        add("user._surname", (), lambda rng, p: None if s.full_names else rng.choice(s.surnames))
        add("user.name", ("user.gender", "user._surname"), self._user_name)
        add("user.age", (), lambda rng, p: rng.randint(24, 55))
        add("user.height", ("user.gender",), self.height)
        add("user.birthday", (), self.birthday)
        add("user.hometown", (), lambda rng, p: rng.choice(s.hometowns))
        add(
            "user.workplace",
            ("user.hometown",),
            lambda rng, p: (
                p["user.hometown"]
                if p["user.hometown"] in s.work_cities and rng.random() < 0.4
                else rng.choice(s.work_cities)
            ),
        )
        add("user.occupation", (), lambda rng, p: rng.choice(tuple(s.occupations)))
        add("user.education", ("user.occupation",), self.education)
        add(
            "user.position",
            ("user.occupation", "user.age"),
            lambda rng, p: rng.choice(s.occupations[p["user.occupation"]][2 if p["user.age"] >= 38 else 1]),
        )
        add(
            "user.company",
            ("user.occupation", "user.workplace"),
            lambda rng, p: self.company(rng, p, "user.occupation", "user.workplace"),
        )
        add("user.hobby", (), lambda rng, p: rng.choice(s.hobbies))
        add("user.personality", (), lambda rng, p: rng.choice(s.personalities))
        add("user.phone", (), self.phone)
        add(
            "user.email",
            ("user.name", "user.birthday", "user.company"),
            lambda rng, p: self.email(rng, p, "user.name", "user.birthday", "user.company"),
        )
        add("user.id_number", ("user.hometown", "user.age", "user.birthday"), self._id_number)
        add("user.passport", (), lambda rng, p: rng.choice("EGPN") + _digits(rng, 8))
        add("user.bank_card", (), lambda rng, p: rng.choice(s.bank_prefixes) + _digits(rng, 10))
        add("user.license", ("user.id_number",), lambda rng, p: p["user.id_number"][:14] + _digits(rng, 4))
        names: tuple[str, ...] = ("user.name",)
        for i, key in enumerate(("relative_1", "relative_2")):
            self.person(key, "relative", s.relatives, ("relative_1",) if i else (), names)
            names += (f"{key}.name",)
        for i, key in enumerate(("colleague_1", "colleague_2")):
            self.person(key, "colleague", s.colleagues, ("colleague_1",) if i else (), names)
            names += (f"{key}.name",)
        self.event("work_event_1", s.work_event_types, None, "user.occupation")
        self.event("work_event_2", s.work_event_types, "work_event_1", "user.occupation")
        self.event("fun_event_1", s.fun_event_types, None, "user.hobby")
        self.event("fun_event_2", s.fun_event_types, "fun_event_1", "user.hobby")
        add("place_1.type", (), lambda rng, p: rng.choice(tuple(s.places)))
        add("place_1.relationship", ("place_1.type",), lambda rng, p: rng.choice(s.place_relations[p["place_1.type"]]))
        add("place_1.name", ("place_1.type",), lambda rng, p: rng.choice(s.places[p["place_1.type"]]))
        add(
            "place_1.comment",
            ("place_1.name",),
            lambda rng, p: self._comment(rng, p["place_1.name"], s.place_pros, s.place_cons),
        )
        add("item_1.type", (), lambda rng, p: rng.choice(tuple(s.items)))
        add("item_1.relationship", (), lambda rng, p: rng.choice(s.item_relations))
        add("item_1.name", ("item_1.type",), lambda rng, p: rng.choice(s.items[p["item_1.type"]]))
        add(
            "item_1.comment",
            ("item_1.name",),
            lambda rng, p: self._comment(rng, p["item_1.name"], s.item_pros, s.item_cons),
        )
        return BRNet(self.nodes)

    def _user_name(self, rng: random.Random, p: Mapping[str, Any]) -> str:
        return self.name_sampler("user.gender", None, ())(rng, p)

    def _id_number(self, rng: random.Random, p: Mapping[str, Any]) -> str:
        # region code from the hometown, then the birth date, as in a Chinese ID number
        region = (
            110000 + (self.s.hometowns.index(p["user.hometown"]) * 7919) % 540000
            if p["user.hometown"] in self.s.hometowns
            else 110000
        )
        month_day = p["user.birthday"].replace("-", "")
        year = 2024 - p["user.age"] - (1 if month_day > "0401" else 0)
        return f"{region}{year}{month_day}{_digits(rng, 4)}"

    def _comment(self, rng: random.Random, name: str, pros: tuple[str, ...], cons: tuple[str, ...]) -> str:
        if self.s.lang == "en":
            return f"{name} is great because {rng.choice(pros)}, but {rng.choice(cons)}"
        return f"{name}挺不错的，{rng.choice(pros)}，就是{rng.choice(cons)}"


def build_network(space: ValueSpace) -> BRNet:
    """MemDaily's BRNet over the given value space."""
    return _Builder(space).build()
