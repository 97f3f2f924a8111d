"""Offline PerLTQA-style characters, written in the release schema (see :mod:`.schema`).

Follows PerLTQA's six-step recipe (seed 001 §3.1) with templates instead of ChatGPT:
a profile of 14 fields, social relationships with descriptions, events tied to those
relationships (date, participants, topic, summary, content), and dialogues between the
character and an AI assistant about those events. QA items (§3.2) carry a question, an
answer, the reference memory and memory anchors -- key spans that occur verbatim in both
the answer and the referenced memory. One seed gives the same characters in English
and Chinese: choices are made on indices, then worded in the requested language.
"""

from __future__ import annotations

import random
from typing import Any

from memplug.datasets.perltqa import content as C

AI = {"en": "AI Assistant", "zh": "AI助手"}
#: relationships that fix the other character's gender, and their age offset from the character
_GENDER_OF = {
    "elder sister": "female",
    "younger brother": "male",
    "father": "male",
    "mother": "female",
    "cousin": "female",
}
_AGE_OFFSET = {"father": 28, "mother": 26, "elder sister": 3, "younger brother": -3, "cousin": -2, "mentor": 15}


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _qa(question: str, answer: str, reference: str, anchors: list[str], memory_text: str) -> dict[str, Any]:
    """A QA item as the release writes it; anchor spans are character offsets in the memory (-1 if absent)."""
    spans = []
    for anchor in anchors:
        start = memory_text.find(anchor)
        spans.append({anchor: [start, start + len(anchor)] if start >= 0 else [-1, -1]})
    return {"Question": question, "Answer": answer, "Reference Memory": reference, "Memory Anchors": spans}


class CharacterWriter:
    """Writes one character's memory and QA in one language from index choices."""

    def __init__(self, rng: random.Random, lang: str, index: int, taken: set[str]) -> None:
        self.rng, self.lang, self.index, self.taken = rng, lang, index, taken
        self.k = 0 if lang == "en" else 1
        self.family: tuple[str, str] = C.SURNAMES[0]  # surname of the last name drawn

    def t(self, pair: tuple[str, str]) -> str:
        return pair[self.k]

    def name(self, gender: str, surname: tuple[str, str] | None = None) -> str:
        while True:
            family = surname or self.rng.choice(C.SURNAMES)
            given = self.rng.choice(C.GIVEN[gender])
            full = f"{family[0]} {given[0]}" if self.lang == "en" else f"{family[1]}{given[1]}"
            key = f"{family[0]} {given[0]}"  # the same people in both languages
            if key not in self.taken:
                self.taken.add(key)
                self.family = family
                return full

    def date(self) -> tuple[str, str]:
        """(how the memory writes the date, ISO date for dialogue timestamps)."""
        year, month, day = self.rng.randint(2018, 2023), self.rng.randint(1, 12), self.rng.randint(1, 26)
        text = f"{C.MONTHS[month - 1]} {day}, {year}" if self.lang == "en" else f"{year}年{month}月{day}日"
        return text, f"{year:04d}-{month:02d}-{day + 2:02d}"

    # -- profile ---------------------------------------------------------------------------
    def profile(self) -> tuple[str, dict[str, Any], dict[str, Any]]:
        rng, t = self.rng, self.t
        gender = rng.choice(("male", "female"))
        name = self.name(gender)
        surname = self.family
        occupation, title, employer, education, achievement, award = rng.choice(C.CAREERS)
        hobbies = rng.sample(C.HOBBIES, 2)
        role_model = rng.choice(C.ROLE_MODELS)
        age = rng.randint(24, 55)
        en = self.lang == "en"
        profile = {
            "Protagonist": name,
            "Gender": t(C.GENDER[gender]),
            "Nickname": t(rng.choice(C.NICKNAMES)),
            "Title": t(title),
            "Age": age,
            "Occupation": t(occupation),
            "Nationality": t(rng.choice(C.NATIONALITIES)),
            "Physical Characteristics": t(rng.choice(C.LOOKS)),
            "Hobbies": (", " if en else "、").join(t(h) for h in hobbies),
            "Achievements": t(achievement),
            "Ethnic Background": t(rng.choice(C.ETHNICITIES)),
            "Education Background": t(education),
            "Employer": t(employer),
            "Awards and Role Models": (
                f"Won {t(award)}; role model: {t(role_model)}" if en else f"获得{t(award)}；榜样是{t(role_model)}"
            ),
        }
        return name, profile, {"surname": surname, "award": t(award)}

    def describe(self, p: dict[str, Any]) -> str:
        if self.lang == "en":
            return (
                f'{p["Protagonist"]}, known as "{p["Nickname"]}", is a {p["Age"]}-year-old {p["Occupation"]} '
                f"from {p['Nationality']} who works for {p['Employer']}. With {p['Education Background']}, "
                f"{p['Protagonist']} {p['Achievements']}. Outside work, {p['Protagonist']} enjoys {p['Hobbies']}."
            )
        return (
            f"{p['Protagonist']}，昵称“{p['Nickname']}”，{p['Age']}岁，来自{p['Nationality']}，是一名{p['Occupation']}，"
            f"就职于{p['Employer']}。{p['Protagonist']}拥有{p['Education Background']}，{p['Achievements']}。"
            f"工作之余，{p['Protagonist']}喜欢{p['Hobbies']}。"
        )

    def profile_questions(self, p: dict[str, Any], award: str) -> list[dict[str, Any]]:
        n = p["Protagonist"]
        v = {k: str(x) for k, x in p.items()}
        if self.lang == "en":
            rows = (
                ("Gender", f"What is the gender of {n}?", f"{n} is {v['Gender']}.", v["Gender"]),
                ("Nickname", f"What nickname is {n} known by?", f"{n} is known as {v['Nickname']}.", v["Nickname"]),
                ("Title", f"What is {n}'s professional title?", f"{n}'s title is {v['Title']}.", v["Title"]),
                ("Age", f"How old is {n}?", f"{n} is {v['Age']} years old.", v["Age"]),
                (
                    "Occupation",
                    f"What is {n}'s occupation?",
                    f"{n} works as {_article(v['Occupation'])} {v['Occupation']}.",
                    v["Occupation"],
                ),
                ("Nationality", f"What is {n}'s nationality?", f"{n} is from {v['Nationality']}.", v["Nationality"]),
                (
                    "Physical Characteristics",
                    f"What does {n} look like?",
                    f"{n} has {v['Physical Characteristics']}.",
                    v["Physical Characteristics"],
                ),
                ("Hobbies", f"What are {n}'s hobbies?", f"{n}'s hobbies are {v['Hobbies']}.", v["Hobbies"]),
                ("Achievements", f"What is one of {n}'s achievements?", f"{n} {v['Achievements']}.", v["Achievements"]),
                (
                    "Ethnic Background",
                    f"What is {n}'s ethnic background?",
                    f"{n} is of {v['Ethnic Background']} ethnicity.",
                    v["Ethnic Background"],
                ),
                (
                    "Education Background",
                    f"What is {n}'s educational background?",
                    f"{n} has {v['Education Background']}.",
                    v["Education Background"],
                ),
                ("Employer", f"Who is {n}'s employer?", f"{n} works for {v['Employer']}.", v["Employer"]),
                ("Awards and Role Models", f"What award has {n} won?", f"{n} has won {award}.", award),
            )
        else:
            rows = (
                ("Gender", f"{n}的性别是什么？", f"{n}是{v['Gender']}性。", v["Gender"]),
                ("Nickname", f"{n}的昵称是什么？", f"{n}的昵称是{v['Nickname']}。", v["Nickname"]),
                ("Title", f"{n}的头衔是什么？", f"{n}的头衔是{v['Title']}。", v["Title"]),
                ("Age", f"{n}今年多大？", f"{n}今年{v['Age']}岁。", v["Age"]),
                ("Occupation", f"{n}的职业是什么？", f"{n}是一名{v['Occupation']}。", v["Occupation"]),
                ("Nationality", f"{n}的国籍是什么？", f"{n}来自{v['Nationality']}。", v["Nationality"]),
                (
                    "Physical Characteristics",
                    f"{n}长什么样？",
                    f"{n}的外貌特征是{v['Physical Characteristics']}。",
                    v["Physical Characteristics"],
                ),
                ("Hobbies", f"{n}有哪些爱好？", f"{n}的爱好是{v['Hobbies']}。", v["Hobbies"]),
                ("Achievements", f"{n}取得过什么成就？", f"{n}{v['Achievements']}。", v["Achievements"]),
                ("Ethnic Background", f"{n}是什么民族？", f"{n}是{v['Ethnic Background']}。", v["Ethnic Background"]),
                (
                    "Education Background",
                    f"{n}的教育背景是什么？",
                    f"{n}拥有{v['Education Background']}。",
                    v["Education Background"],
                ),
                ("Employer", f"{n}在哪里工作？", f"{n}在{v['Employer']}工作。", v["Employer"]),
                ("Awards and Role Models", f"{n}获得过什么奖项？", f"{n}获得过{award}。", award),
            )
        return [_qa(q, a, field, [anchor], v[field]) for field, q, a, anchor in rows]

    # -- relationships, events, dialogues ------------------------------------------------------
    def relations(self, name: str, surname: tuple[str, str], age: int, count: int) -> list[dict[str, Any]]:
        out = []
        chosen = self.rng.sample(C.RELATIONSHIPS, min(count, len(C.RELATIONSHIPS)))
        for r, (rel, group) in enumerate(chosen):
            gender = _GENDER_OF.get(rel[0]) or self.rng.choice(("male", "female"))
            same_family = rel[0] in ("father", "elder sister", "younger brother")
            other = self.name(gender, surname if same_family else None)
            other_age = max(18, age + _AGE_OFFSET.get(rel[0], self.rng.randint(-6, 6)))
            job = self.t(self.rng.choice(C.OTHER_JOBS))
            if self.lang == "en":
                desc = f"{name}'s {rel[0]}, {other_age} years old, works as {_article(job)} {job}. {C.BONDS[group][0]}"
            else:
                desc = f"{name}的{rel[1]}，今年{other_age}岁，是一名{job}。{C.BONDS[group][1]}"
            out.append({"id": f"{self.index}_{r}", "other": other, "rel": self.t(rel), "job": job, "desc": desc})
        return out


def _character(
    rng: random.Random, lang: str, index: int, taken: set[str], n_relations: int, n_events: int
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    w = CharacterWriter(rng, lang, index, taken)
    en = lang == "en"
    name, profile, extra = w.profile()
    relations = w.relations(name, extra["surname"], profile["Age"], n_relations)
    topics = list(range(len(C.EVENTS)))
    rng.shuffle(topics)
    memory: dict[str, Any] = {
        "profile": profile,
        "profile_description": w.describe(profile),
        "social_relationship": {},
        "events": {},
        "dialogues": {},
    }
    qa: dict[str, Any] = {
        "profile": w.profile_questions(profile, extra["award"]),
        "social_relationship": [],
        "events": [],
        "dialogues": [],
    }
    for rel in relations:
        rid, o, kind = rel["id"], rel["other"], rel["rel"]
        memory["social_relationship"][rid] = {
            "Supporting Characters": o,
            "Description": rel["desc"],
            "Relationship": kind,
        }
        ref = str([rid])
        if en:
            items = [
                _qa(f"Who is {name}'s {kind}?", f"{o} is {name}'s {kind}.", ref, [o], rel["desc"]),
                _qa(f"How is {o} related to {name}?", f"{o} is {name}'s {kind}.", ref, [kind], rel["desc"]),
                _qa(
                    f"What does {o} do for a living?",
                    f"{o} works as {_article(rel['job'])} {rel['job']}.",
                    ref,
                    [rel["job"]],
                    rel["desc"],
                ),
            ]
        else:
            items = [
                _qa(f"{name}的{kind}是谁？", f"{name}的{kind}是{o}。", ref, [o], rel["desc"]),
                _qa(f"{o}和{name}是什么关系？", f"{o}是{name}的{kind}。", ref, [kind], rel["desc"]),
                _qa(f"{o}是做什么工作的？", f"{o}是一名{rel['job']}。", ref, [rel["job"]], rel["desc"]),
            ]
        qa["social_relationship"].append({rid: items})
    dialogue_no = 0
    for e in range(n_events):
        for rel in relations:
            if not topics:
                break
            ev = C.EVENTS[topics.pop()]
            rid, o, kind = rel["id"], rel["other"], rel["rel"]
            eid = f"{rid}_{e}"
            date, iso = w.date()
            place = w.t(ev["place"])
            activity, base = w.t(ev["activity"]).format(p=place), w.t(ev["base"]).format(p=place)
            detail, summary = w.t(ev["detail"]).format(o=o), w.t(ev["summary"])
            if en:
                content = (
                    f"On {date}, {name} and {name}'s {kind} {o} {activity}. {detail} "
                    f"It became one of their favourite memories together."
                )
            else:
                content = f"{date}，{name}和{kind}{o}{activity}。{detail}这成了他们最珍贵的回忆之一。"
            memory["events"][eid] = {
                "content": content,
                "summary": summary,
                "Characters": [rid],
                "Creation Time": date,
                "Last Accessed Time": "",
                "Theme": summary,
            }
            ref = str([eid])
            if en:
                items = [
                    _qa(
                        f"When did {name} and {o} {base}?", f"{name} and {o} did this on {date}.", ref, [date], content
                    ),
                    _qa(
                        f"Who joined {name} for the event '{summary}'?",
                        f"{o}, {name}'s {kind}, joined {name}.",
                        ref,
                        [o],
                        content,
                    ),
                ]
            else:
                items = [
                    _qa(f"{name}和{o}是哪天{base}的？", f"{name}和{o}是在{date}{base}的。", ref, [date], content),
                    _qa(f"谁和{name}一起参加了“{summary}”？", f"{name}的{kind}{o}。", ref, [o], content),
                ]
            items.append(
                _qa(w.t(ev["question"]).format(o=o), w.t(ev["answer"]).format(o=o), ref, [w.t(ev["anchor"])], content)
            )
            qa["events"].append({eid: items})
            did = f"{eid}#{dialogue_no}"
            dialogue_no += 1
            feeling, plan = w.t(rng.choice(C.FEELINGS)), w.t(rng.choice(C.PLANS))
            ai = AI[lang]
            if en:
                lines = [
                    f"{name}: Hi, I want to tell you about {date}. {o} and I {activity}.",
                    f"{ai}: That sounds wonderful! How did you feel about it?",
                    f"{name}: I felt {feeling}. {detail}",
                    f"{ai}: It sounds like a memorable day. Do you have any plans after this?",
                    f"{name}: Yes, I plan to {plan}.",
                    f"{ai}: That's a great idea. I'll remember it.",
                ]
            else:
                lines = [
                    f"{name}：跟你说说{date}的事。我和{o}{activity}。",
                    f"{ai}：听起来很棒！你感觉怎么样？",
                    f"{name}：我觉得{feeling}。{detail}",
                    f"{ai}：真是难忘的一天。之后有什么打算吗？",
                    f"{name}：有，我打算{plan}。",
                    f"{ai}：好主意，我会记住的。",
                ]
            stamp = f"{iso} {rng.randint(9, 21):02d}:00"
            memory["dialogues"][did] = {"events": eid, "contents": {stamp: lines}}
            text = "\n".join(lines)
            ref = str([did])
            if en:
                items = [
                    _qa(
                        f"How did {name} tell the assistant they felt about the event '{summary}'?",
                        f"{name} felt {feeling}.",
                        ref,
                        [feeling],
                        text,
                    ),
                    _qa(
                        f"What did {name} tell the assistant they plan to do after the event '{summary}'?",
                        f"{name} plans to {plan}.",
                        ref,
                        [plan],
                        text,
                    ),
                ]
            else:
                items = [
                    _qa(
                        f"{name}跟AI助手说自己对“{summary}”感觉怎么样？", f"{name}觉得{feeling}。", ref, [feeling], text
                    ),
                    _qa(f"“{summary}”之后，{name}告诉AI助手自己打算做什么？", f"{name}打算{plan}。", ref, [plan], text),
                ]
            qa["dialogues"].append({did: items})
    return name, memory, qa


def generate_release(
    seed: int, lang: str, characters: int, relationships: int, events: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(memory file, QA file) contents for ``characters`` generated characters."""
    # a string seed is hashed with SHA-512 by random.Random: stable across runs, shared by en and zh
    rng = random.Random(f"perltqa:{seed}")
    taken: set[str] = set()
    memory: dict[str, Any] = {}
    qa: list[dict[str, Any]] = []
    for c in range(1, characters + 1):
        name, mem, items = _character(rng, lang, c, taken, relationships, events)
        memory[name] = mem
        qa.append({name: items})
    return memory, qa
