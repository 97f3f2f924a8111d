"""Sentence and question templates per Wikidata relation, for FactConsolidation facts.

The ``cloze`` and ``question`` templates are MQuAKE's (``cloze_templates.json`` and
``question_templates.json``), copied verbatim -- their typos included ("univeristy",
"origianl") -- because MemoryAgentBench built FactConsolidation from them and its release
shows those exact sentences. They are kept in the package (not read from ../shared) so the
generator runs offline on a fresh install; a test checks they still agree with MQuAKE's files.
The ``noun`` phrases, which let a multi-hop question nest one relation inside another
("the capital of the country of citizenship of [X]"), are written for memplug.

MQuAKE templates: Copyright (c) 2023 Princeton Natural Language Processing, MIT License:

    Permission is hereby granted, free of charge, to any person obtaining a copy
    of this software and associated documentation files (the "Software"), to deal
    in the Software without restriction, including without limitation the rights
    to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
    copies of the Software, and to permit persons to whom the Software is
    furnished to do so, subject to the following conditions:

    The above copyright notice and this permission notice shall be included in all
    copies or substantial portions of the Software.

    THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
    IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
    FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
    AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
    LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
    OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
    SOFTWARE.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Relation:
    """How one relation is said: as a fact, as a question, and as a noun phrase."""

    pid: str
    #: MQuAKE cloze: "[X] is married to __"
    cloze: str
    #: MQuAKE question: "Who is [X] married to?"
    question: str
    #: memplug: "the spouse of [X]", for nesting inside another relation's question
    noun: str

    def fact(self, subject: str, obj: str) -> str:
        """The fact sentence as FactConsolidation writes it: the cloze filled, plus a full stop."""
        return self.cloze.replace("[X]", subject).replace("__", obj) + "."

    def ask(self, subject: str) -> str:
        return self.question.replace("[X]", subject)

    def describe(self, subject: str) -> str:
        return self.noun.replace("[X]", subject)


_TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("P17", "[X] is located in the country of __", "Which country is [X] located in?", "the country of [X]"),
    ("P19", "[X] was born in the city of __", "Which city was [X] born in?", "the city where [X] was born"),
    ("P20", "[X] died in the city of __", "Which city did [X] die in?", "the city where [X] died"),
    ("P26", "[X] is married to __", "Who is [X] married to?", "the spouse of [X]"),
    (
        "P30",
        "[X] is located in the continent of __",
        "Which continent is [X] located in?",
        "the continent where [X] is located",
    ),
    ("P36", "The capital of [X] is __", "What is the capital of [X]?", "the capital of [X]"),
    ("P40", "[X]'s child is __", "Who is [X]'s child?", "the child of [X]"),
    ("P50", "The author of [X] is __", "Who is the author of [X]?", "the author of [X]"),
    (
        "P69",
        "The univeristy where [X] was educated is __",
        "Which university was [X] educated at?",
        "the university where [X] was educated",
    ),
    ("P106", "[X] works in the field of __", "What kind of work does [X] do?", "the field of work of [X]"),
    ("P112", "[X] was founded by __", "Who founded [X]?", "the founder of [X]"),
    ("P127", "[X] is owned by __", "Who owns [X]?", "the owner of [X]"),
    ("P131", "[X] is located in __", "Where is [X] located?", "the location of [X]"),
    (
        "P136",
        "The type of music that [X] plays is __",
        "What type of music does [X] play?",
        "the type of music [X] plays",
    ),
    (
        "P159",
        "The headquarters of [X] is located in the city of __",
        "Which city is the headquarter of [X] located in?",
        "the city where the headquarters of [X] is located",
    ),
    ("P170", "[X] was created by __", "Who was [X] created by?", "the creator of [X]"),
    ("P175", "[X] was performed by __", "Who performed [X]?", "the performer of [X]"),
    (
        "P176",
        "The company that produced [X] is __",
        "Which company is [X] produced by?",
        "the company that produced [X]",
    ),
    ("P264", "[X] is represented by __", "What music label is [X] represented by?", "the music label representing [X]"),
    ("P276", "[X] is located in __", "Where is [X] located?", "the location of [X]"),
    (
        "P407",
        "[X] was written in the language of __",
        "Which language was [X] written in?",
        "the language [X] was written in",
    ),
    ("P413", "[X] plays the position of __", "What position does [X] play?", "the position [X] plays"),
    (
        "P495",
        "[X] was created in the country of __",
        "Which country was [X] created in?",
        "the country where [X] was created",
    ),
    ("P740", "[X] was founded in the city of __", "Where was [X] founded?", "the city where [X] was founded"),
    ("P800", "[X] is famous for __", "What is [X] famous for?", "the work [X] is famous for"),
    (
        "P364",
        "The original language of [X] is __",
        "What is the original language of [X]?",
        "the original language of [X]",
    ),
    ("P1412", "[X] speaks the language of __", "What language does [X] speak?", "the language [X] speaks"),
    (
        "P27",
        "[X] is a citizen of __",
        "What is the country of citizenship of [X]?",
        "the country of citizenship of [X]",
    ),
    ("P937", "[X] worked in the city of __", "Which city did [X] work in?", "the city where [X] worked"),
    (
        "P37",
        "The official language of [X] is __",
        "What is the official language of [X]?",
        "the official language of [X]",
    ),
    (
        "P140",
        "[X] is affiliated with the religion of __",
        "Which religion is [X] affiliated with?",
        "the religion [X] is affiliated with",
    ),
    ("P178", "[X] was developed by __", "Who is the developer of [X]?", "the developer of [X]"),
    ("P108", "[X] is employed by __", "Who is the employer of [X]?", "the employer of [X]"),
    (
        "P641",
        "[X] is associated with the sport of __",
        "Which sport is [X] associated with?",
        "the sport associated with [X]",
    ),
    (
        "P190",
        "The twinned administrative body of [X] is __",
        "What is the twinned administrative body of [X]?",
        "the twinned administrative body of [X]",
    ),
    ("P463", "[X] is a member of __", "Which organization is [X] a member of?", "the organization [X] is a member of"),
    (
        "P449",
        "The origianl broadcaster of [X] is __",
        "Who is the original broadcaster of [X]?",
        "the original broadcaster of [X]",
    ),
    (
        "P35",
        "The name of the current head of state in [X] is __",
        "What is the name of the current head of state in [X]?",
        "the current head of state in [X]",
    ),
    ("P286", "The head coach of [X] is __", "Who is the head coach of [X]?", "the head coach of [X]"),
    ("P1308", "The [X] is __", "Who is the [X]?", "the [X]"),
    ("P488", "The chairperson of [X] is __", "Who is the chairperson of [X]?", "the chairperson of [X]"),
    (
        "P169",
        "The chief executive officer of [X] is __",
        "Who is the chief executive officer of [X]?",
        "the chief executive officer of [X]",
    ),
    ("P1037", "The director of [X] is __", "Who is the director of [X]?", "the director of [X]"),
    (
        "P6",
        "The name of the current head of the [X] government is __",
        "What is the name of the current head of the [X] government?",
        "the current head of the [X] government",
    ),
)

#: every MQuAKE relation, by Wikidata property id
RELATIONS: dict[str, Relation] = {pid: Relation(pid, cloze, question, noun) for pid, cloze, question, noun in _TABLE}
