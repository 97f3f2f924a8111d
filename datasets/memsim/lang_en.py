"""English templates: several first-person phrasings per attribute, and question wording."""

from __future__ import annotations

import datetime as dt
from typing import Mapping

from .language import Language

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def duration(days: int) -> str:
    n, unit = (days // 30, "month") if days % 30 == 0 else (days // 7, "week") if days % 7 == 0 else (days, "day")
    return f"{n} {unit}{'' if n == 1 else 's'}"


def render(attr: str, value: object) -> str:
    if attr == "age":
        return f"{value} years old"
    if attr == "height":
        return f"{value} cm"
    if attr == "birthday":
        month, day = str(value).split("-")
        return f"{_MONTHS[int(month) - 1]} {int(day)}"
    if attr == "scale":
        return f"about {value} people"
    if attr == "duration":
        return duration(int(str(value)))
    return str(value)


PERSON = {
    "name": ("{Poss} name is {v}.", "{Ref} is called {v}."),
    "gender": ("{Ref} is {v}.",),
    "age": ("{Ref} is {v}.", "{Ref} is {v} this year.", "{Ref} just turned {v}."),
    "height": ("{Ref} is {v} tall.", "{Poss} height is {v}."),
    "birthday": ("{Poss} birthday is on {v}.", "{Ref} was born on {v}."),
    "hometown": ("{Ref} comes from {v}.", "{Poss} hometown is {v}.", "{Ref} grew up in {v}."),
    "workplace": ("{Ref} works in {v}.", "{Ref} has a job in {v} now.", "{Poss} work city is {v}."),
    "education": ("{Poss} education level is {v}.", "{Poss} highest level of education is {v}."),
    "occupation": ("{Ref} works as {a_v}.", "{Ref} is {a_v} by profession.", "{Poss} occupation is {v}."),
    "position": ("{Poss} position is {v}.", "{Poss} job title is {v}."),
    "company": ("{Ref} works at {v}.", "{Poss} employer is {v}."),
    "hobby": ("{Ref} really enjoys {v}.", "{Poss} favorite hobby is {v}.", "In free time, {ref} loves {v}."),
    "personality": ("{Ref} is quite {v}.", "{Poss} personality is {v}."),
    "phone": ("{Poss} phone number is {v}.", "You can reach {ref} at {v}."),
    "email": ("{Poss} email address is {v}.", "{Ref} uses the email {v}."),
}
USER = {
    "age": ("I am {v}.", "I am {v} this year."),
    "height": ("I am {v} tall.", "My height is {v}."),
    "birthday": ("My birthday is on {v}.", "I was born on {v}."),
    "hometown": ("I come from {v}.", "My hometown is {v}."),
    "workplace": ("I work in {v}.", "My work city is {v}."),
    "education": ("My education level is {v}.", "My highest level of education is {v}."),
    "occupation": ("I work as {a_v}.", "I am {a_v} by profession."),
    "position": ("My position is {v}.", "My job title is {v}."),
    "company": ("I work at {v}.", "My employer is {v}."),
    "hobby": ("I really enjoy {v}.", "My favorite hobby is {v}."),
    "personality": ("People say I am {v}.", "My personality is {v}."),
    "phone": ("My phone number is {v}.", "My number is {v}, by the way."),
    "email": ("My email address is {v}.", "I use the email {v}."),
    "id_number": ("My ID number is {v}.", "Note down my ID number: {v}."),
    "passport": ("My passport number is {v}.", "Remember my passport number, it is {v}."),
    "bank_card": ("My bank card number is {v}.", "The number of my bank card is {v}."),
    "license": ("My driver's license number is {v}.", "Please keep my driver's license number: {v}."),
}
EVENT = {
    "type": ("{Ref} is {a_v}.", "I am going to {ref}, which is {a_v}."),
    "content": ("{Ref} is {v}.", "About {ref}: it is {v}."),
    "location": ("{Ref} takes place in {v}.", "{Ref} will be held in {v}."),
    "time": ("{Ref} is {v}.", "{Ref} starts {v}."),
    "scale": ("{Ref} expects {v}.", "{Ref} will have {v}."),
    "duration": ("{Ref} lasts {v}.", "{Ref} runs for {v}."),
}
PLACE = {
    "name": ("{Ref} is called {v}.", "The name of {ref} is {v}."),
    "comment": ("My review of {ref}: {v}.", "What I think about {ref}: {v}."),
}
ITEM = {
    "name": ("{Ref} is {a_v}.", "As for {ref}, it is {a_v}."),
    "comment": ("My review of {ref}: {v}.", "Here is what I think of {ref}: {v}."),
}

LABELS = {
    "name": "name",
    "gender": "gender",
    "age": "age",
    "height": "height",
    "birthday": "birthday",
    "hometown": "hometown",
    "workplace": "work city",
    "education": "education level",
    "occupation": "occupation",
    "position": "position",
    "company": "employer",
    "hobby": "hobby",
    "personality": "personality",
    "phone": "phone number",
    "email": "email address",
    "id_number": "ID number",
    "passport": "passport number",
    "bank_card": "bank card number",
    "license": "driver's license number",
    "type": "type",
    "content": "main content",
    "location": "location",
    "time": "time",
    "scale": "scale",
    "duration": "duration",
    "comment": "review",
}

SMALL_TALK = (
    "The weather has been so unpredictable lately; yesterday I wore a T-shirt and today I needed a coat.",
    "I tried a new coffee shop this morning and the latte was surprisingly good.",
    "My neighbor's dog kept barking all night, so I am a bit tired today.",
    "I keep meaning to clean out my closet but never find the time.",
    "Traffic on the way home was terrible again.",
    "I watched a documentary about octopuses last night, they are so clever.",
    "My plants are finally growing after I moved them next to the window.",
    "I think I should start going to bed earlier.",
    "The supermarket near my place has started selling fresh bread, which is great.",
    "Autumn is my favorite season, it is never too hot or too cold.",
    "I found an old photo album yesterday and spent an hour looking through it.",
    "My phone battery drains so fast these days.",
)


def _label(kind: str, a: Mapping[str, object]) -> str:
    if kind == "user":
        return "I"
    if kind in ("relative", "colleague"):
        return f"my {a['relationship']}"
    if kind in ("work_event", "fun_event"):
        return f"the {a['title']}"
    return f"the {a['type']} I {a['relationship']}"


def _full(kind: str, a: Mapping[str, object]) -> str:
    return f"my {a['relationship']} {a['name']}" if kind in ("relative", "colleague") else _label(kind, a)


def _name(kind: str, a: Mapping[str, object]) -> str:
    return str(a["name"]) if kind in ("relative", "colleague") else _label(kind, a)


def _when(moment: dt.datetime) -> str:
    return f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year}, {_WEEKDAYS[moment.weekday()]}, {moment:%H:%M}"


LANGUAGE = Language(
    code="en",
    render=render,
    labels=LABELS,
    messages={"person": PERSON, "user": USER, "event": EVENT, "place": PLACE, "item": ITEM},
    simple_q={
        "person": ("What is {poss} {label}?", "Do you remember {poss} {label}?"),
        "user": ("What is my {label}?", "Can you remind me of my {label}?"),
        "other": ("What is the {label} of {ref}?", "Do you remember the {label} of {ref}?"),
    },
    cond_phrase={"person": "the person whose {label} is {v}", "event": "the event whose {label} is {v}"},
    cond_q=("What is the {label} of {cond}?", "Could you tell me the {label} of {cond}?"),
    compare_q={
        ("age", "max"): "Who is older, {a} or {b}?",
        ("age", "min"): "Who is younger, {a} or {b}?",
        ("height", "max"): "Who is taller, {a} or {b}?",
        ("height", "min"): "Who is shorter, {a} or {b}?",
        ("birthday", "min"): "Whose birthday comes earlier in the year, {a} or {b}?",
        ("birthday", "max"): "Whose birthday comes later in the year, {a} or {b}?",
        ("scale", "max"): "Which event is larger, the {a} or the {b}?",
        ("scale", "min"): "Which event is smaller, the {a} or the {b}?",
        ("duration", "max"): "Which event lasts longer, the {a} or the {b}?",
        ("duration", "min"): "Which event is shorter, the {a} or the {b}?",
    },
    same="Both are the same",
    neither="Neither of them",
    count_q={
        "person": "Among the people whose {label} I mentioned, how many {pred}?",
        "event": "Among the events whose {label} I mentioned, how many {pred}?",
    },
    count_pred={
        "age": "are under {x} years old",
        "height": "are at least {x} cm tall",
        "education": "have at least {x}",
        "hometown": "come from {x}",
        "workplace": "work in {x}",
        "gender": "are {x}",
        "hobby": "enjoy {x}",
        "scale": "expect at least {x} people",
        "duration": "last at least {x} days",
        "location": "take place in {x}",
    },
    count_answer=lambda k, kind: (
        f"{k} {'person' if k == 1 else 'people'}" if kind == "person" else f"{k} event{'' if k == 1 else 's'}"
    ),
    post_q={
        "digit_sum": "What is the sum of the last five digits of the phone number of {cond}?",
        "season": "In which season was {cond} born?",
        "city_workplace": "Which description fits the city where {cond} works?",
        "city_hometown": "Which description fits the hometown of {cond}?",
        "city_location": "Which description fits the city where {cond} takes place?",
        "days": "How many days in total does {cond} last?",
    },
    seasons=("spring", "summer", "autumn", "winter"),
    days=lambda n: f"{n} day{'' if n == 1 else 's'}",
    small_talk=SMALL_TALK,
    connectors=(
        "Anyway, what I actually wanted to ask is this: ",
        "Oh right, back to my question. ",
        "Sorry, I got distracted. My real question: ",
    ),
    stamp="{text} (place: {place}, time: {time})",
    when=_when,
    label_ref=_label,
    full_ref=_full,
    name_ref=_name,
    rewrite_prompt=(
        "Rewrite the following sentence so that it sounds like something a person would naturally "
        "say to their personal assistant. Keep every fact, name, number and date exactly as written, "
        "add no new information, and reply with the rewritten sentence only.\n\nSentence: {text}"
    ),
)
