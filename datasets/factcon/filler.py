"""Fictional people whose facts pad a factcon context to its target length.

The built-in knowledge base holds a few hundred facts (about 9k tokens); MemoryAgentBench's
contexts reach 262k tokens. Padding with facts about invented people keeps the padding
from contradicting any fact a question depends on (their subjects occur nowhere else),
while their objects -- real cities, countries, universities, companies -- make them look
like the rest of the knowledge pool.
"""

from __future__ import annotations

import random
import string
from typing import Iterator

from memplug.datasets.factcon.knowledge import Fact, KnowledgeBase

FIRST_NAMES = (
    "Aldric",
    "Brenna",
    "Caspar",
    "Delphine",
    "Emeric",
    "Fenna",
    "Gideon",
    "Halvard",
    "Isolde",
    "Jorund",
    "Katalin",
    "Leopold",
    "Marisol",
    "Niamh",
    "Oswin",
    "Perpetua",
    "Quillon",
    "Rosalind",
    "Sigrun",
    "Tobiah",
    "Ulrika",
    "Valerian",
    "Wilhelmina",
    "Xanthe",
    "Yestin",
    "Zelimir",
    "Anselm",
    "Berenike",
    "Corvin",
    "Dagny",
    "Evander",
    "Florentyna",
    "Gunnhild",
    "Hesper",
    "Ignatius",
    "Juniper",
    "Kasimir",
    "Lisandra",
    "Mordecai",
    "Noemi",
    "Octavian",
    "Philippa",
    "Radomir",
    "Solveig",
    "Thaddeus",
    "Undine",
    "Wendeline",
    "Ysolde",
)

SURNAMES = (
    "Abernathy",
    "Brightwater",
    "Castellane",
    "Drummorne",
    "Eskelund",
    "Fairweather",
    "Galloway-Reyes",
    "Holmqvist",
    "Ingleby",
    "Jaskolski",
    "Kettleborough",
    "Lindqvist",
    "Marchetti-Volpe",
    "Northcote",
    "Oyelaran",
    "Pemberton-Hale",
    "Quarshie",
    "Rasmussen-Dahl",
    "Strathmore",
    "Thistlewood",
    "Underhill",
    "Vasquez-Moreau",
    "Whitcombe",
    "Yarborough",
    "Zaleski",
    "Ashdown",
    "Blackwood",
    "Crowther",
    "Dunmore",
    "Elsworth",
    "Fenwick",
    "Greaves",
    "Hartigan",
    "Ivanova-Kerr",
    "Kilbride",
    "Lockhart",
    "Merriweather",
    "Nakashima-Lowe",
    "Ormsby",
    "Pryce-Jones",
    "Ravenscroft",
    "Sandoval-Ruiz",
    "Tremaine",
    "Vantongeren",
    "Winterbourne",
    "Youngblood",
)

#: (relation, object type) of the facts a fictional person gets, in a random subset
_RELATIONS = (
    ("P19", "city"),
    ("P27", "country"),
    ("P69", "university"),
    ("P108", "company"),
    ("P106", "field"),
    ("P1412", "language"),
    ("P937", "city"),
)


def fictional_people(kb: KnowledgeBase, rng: random.Random) -> Iterator[list[Fact]]:
    """Yield the facts of one new invented person at a time (three to five facts each)."""
    objects = {kind: kb.of_type(kind) for _, kind in _RELATIONS}
    used = set(kb.types)
    while True:
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(string.ascii_uppercase)}. {rng.choice(SURNAMES)}"
        if name in used:
            continue
        used.add(name)
        chosen = rng.sample(_RELATIONS, rng.randint(3, 5))
        yield [Fact(name, relation, rng.choice(objects[kind])) for relation, kind in chosen]
