"""The extractive reader answers from what a message says, not from the frame around it.

LoCoMo's RAG line is ``'<date_time>: Speaker said, "..."'`` and the ``conversations``
dataset (like memplug's adapters) writes ``[time] Speaker: ...``. The frame is evidence
(the speaker's name matches the question), but "said" is never an answer, the time only
to a when-question and the speaker only to a who-question.
"""

from __future__ import annotations

import pytest

from memplug.models import Recalled
from memplug.readers import _roles, _sentences, extract_answer
from memplug.text import token_spans

LOCOMO = (
    '1:56 pm on 8 May, 2023: Caroline said, "I went to a LGBTQ support group yesterday and it was so powerful."',
    '8:56 pm on 20 July, 2023: Melanie said, "I researched adoption agencies last week. Pottery keeps me calm."',
)
TRIP = (
    "[2024-03-02T10:00] Ana: We land in Lisbon on Friday the 8th.",
    "[2024-03-09T21:30] Ana: The tram tour was cancelled, so we took a boat on the Tagus instead.",
    "[2024-03-02T10:05] Ben: Great, I'll book the tram tour.",
)


def items(*texts: str) -> tuple[Recalled, ...]:
    return tuple(Recalled(t, message_ids=(str(i),)) for i, t in enumerate(texts))


@pytest.mark.parametrize(
    ("question", "texts", "expected"),
    [
        # the frame's time answers a when-question: LoCoMo's temporal gold is the session's date
        ("When did Caroline go to the LGBTQ support group?", LOCOMO, "1:56 pm on 8 May, 2023"),
        ("What date did Melanie research adoption agencies?", LOCOMO, "8:56 pm on 20 July, 2023"),
        # ... and the speaker a who-question
        ("Who went to a LGBTQ support group?", LOCOMO, "Caroline"),
        ("Who researched adoption agencies?", LOCOMO, "Melanie"),
        # what the message says answers the rest ("said" and the time did before)
        ("What did Melanie research?", LOCOMO, "adoption agencies last week"),
        ("What keeps Melanie calm?", LOCOMO, "Pottery"),
    ],
)
def test_frame_answers_only_the_question_it_can(question: str, texts: tuple[str, ...], expected: str) -> None:
    assert extract_answer(question, items(*texts)) == expected


def test_said_and_the_time_are_never_the_answer_to_other_questions() -> None:
    for question in (
        "What did Caroline say about the support group?",
        "What did Melanie do?",
        "What does Caroline think of the group?",
        "How did Melanie feel?",
    ):
        answer = extract_answer(question, items(*LOCOMO))
        assert "said" not in answer.split() and "2023" not in answer and answer, (question, answer)


def test_bracketed_time_and_speaker_colon_are_a_frame_too() -> None:
    trip = items(*TRIP)
    # the time was the answer to both before
    assert extract_answer("Which city do Ana and Ben fly to?", trip) != "2024-03-02T10:00"
    assert "Lisbon" in extract_answer("Which city do Ana and Ben fly to?", trip)
    assert extract_answer("What did they do instead of the tram tour?", trip) != "Ana"
    assert extract_answer("When did Ben book the tram tour?", trip) == "2024-03-02T10:05"


def test_a_reporting_verb_is_never_a_whole_answer_outside_a_frame_either() -> None:
    # "said" is trimmed off a phrase's edges like "named" and "called" (readers._EDGE)
    text = 'At the party Caroline said, "hello" and left.'
    assert extract_answer("What did Caroline do at the party?", items(text)) == "hello"


def test_every_sentence_of_a_line_keeps_its_frame_and_a_new_line_its_own() -> None:
    chunk = items(LOCOMO[1] + "\n" + "Nothing framed here. Second sentence." + "\n" + TRIP[0])
    sentences = _sentences(chunk)
    framed = [" ".join(s.text for s, role in zip(sent.spans, sent.roles) if role == "speaker") for sent in sentences]
    assert framed == ["Melanie", "Melanie", "", "", "Ana"]
    # the second sentence of Melanie's turn still answers a when-question with its date
    assert extract_answer("When did pottery keep Melanie calm?", chunk) == "8:56 pm on 20 July, 2023"


@pytest.mark.parametrize(
    ("text", "time", "speaker"),
    [
        ('1:56 pm on 8 May, 2023: Caroline said, "Hi."', "1 : 56 pm on 8 May , 2023 :", "Caroline"),
        ("[2024-03-15] user: hello", "[ 2024 - 03 - 15 ]", "user"),
        ("Ana: hello", "", "Ana"),
        # not a stamp: a text's own words before a colon stay the message's
        ("Breakfast at 9: eggs and toast", "", ""),
        ("Dear diary, today: nothing", "", ""),
        ("Plain text without any frame.", "", ""),
    ],
)
def test_roles(text: str, time: str, speaker: str) -> None:
    spans = token_spans(text)
    roles = _roles(text, spans)
    assert " ".join(s.text for s, r in zip(spans, roles) if r == "time") == time
    assert " ".join(s.text for s, r in zip(spans, roles) if r == "speaker") == speaker
