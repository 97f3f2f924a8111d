"""A tiny dataset with known answers and targets: data for tests, not a benchmark."""

from __future__ import annotations

from typing import Iterable

from memplug.models import DatasetInfo, Message, Question, Sample
from memplug.options import Option
from memplug.protocols import BuildOptions

#: Per person: (what they said, the question about it, the answer). Each person's facts
#: share few words with the others', so a word-overlap retriever ranks the target first.
FACTS: dict[str, list[tuple[str, str, str]]] = {
    "alice": [
        ("My cat is called Biscuit.", "What is my cat called?", "Biscuit"),
        ("I work as a nurse in Leeds.", "Where do I work as a nurse?", "Leeds"),
        ("I planted tulips in the garden last spring.", "What did I plant in the garden?", "tulips"),
    ],
    "bob": [
        ("I was born in 1990 in Cork.", "When was I born?", "1990"),
        ("My favourite fruit is mango.", "What is my favourite fruit?", "mango"),
        ("My sister lives in Porto.", "Where does my sister live?", "Porto"),
    ],
    "carol": [
        ("I ride a blue bicycle to the office.", "What colour is my bicycle?", "blue"),
        ("My piano teacher is named Ingrid.", "What is my piano teacher named?", "Ingrid"),
    ],
}


def tiny_samples(people: int = 3, filler: int = 0) -> list[Sample]:
    """The samples :class:`TinyDataset` builds: one per person, one question per fact.

    ``filler`` adds that many unrelated messages before each person's facts, so that an
    agent which only returns its latest messages is told apart from one that searches.
    """
    samples = []
    for name in sorted(FACTS)[:people]:
        facts = FACTS[name]
        messages = [
            Message(f"{name}-filler-{i}", f"Note {i}: the weather was mild and nothing happened.", speaker=name)
            for i in range(filler)
        ]
        messages += [
            Message(f"{name}-{i}", text, speaker=name, time=f"2024-05-0{i + 1}") for i, (text, _, _) in enumerate(facts)
        ]
        questions = [
            Question(f"{name}-q{i}", q, (a,), category="fact", targets=(f"{name}-{i}",))
            for i, (_, q, a) in enumerate(facts)
        ]
        samples.append(Sample(name, messages, questions))
    return samples


class TinyDataset:
    """A dataset builder over :data:`FACTS` (register it as any other: ``register("tiny",
    "memplug.testing:TinyDataset")``)."""

    info = DatasetInfo(
        name="tiny",
        version="1",
        description="three tiny conversations with one question per fact",
        metrics=("subem", "em", "f1", "recall@K"),
        default_chunk_size=64,
    )
    options = (
        Option("people", int, 3, "how many of the three people to include", low=1, high=len(FACTS)),
        Option("filler", int, 0, "unrelated messages before each person's facts", low=0, high=10_000),
    )

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        return tiny_samples(options.values["people"], options.values["filler"])
