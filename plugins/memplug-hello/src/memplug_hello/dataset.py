"""A tiny dataset: a few facts per sample, one question per fact."""

from __future__ import annotations

from typing import Iterable

from memplug import BuildOptions, DatasetInfo, Message, Option, Question, Sample

FACTS = {
    "alice": [
        ("My cat is called Biscuit.", "What is my cat called?", "Biscuit"),
        ("I work as a nurse in Leeds.", "Where do I work?", "Leeds"),
    ],
    "bob": [
        ("I was born in 1990.", "When was I born?", "1990"),
        ("My favourite fruit is mango.", "What is my favourite fruit?", "mango"),
        ("My sister lives in Porto.", "Where does my sister live?", "Porto"),
    ],
    "carol": [
        ("I drive a blue bicycle to work.", "What colour is my bicycle?", "blue"),
    ],
}


class HelloDataset:
    info = DatasetInfo(
        name="hello",
        version="1",
        description="three tiny conversations with one question per fact",
        metrics=("subem", "em", "f1", "recall@K"),
        default_chunk_size=64,
    )
    options = (Option("people", int, 3, "how many of the three people to include"),)

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        for name in sorted(FACTS)[: options.values["people"]]:
            facts = FACTS[name]
            messages = [Message(f"{name}-{i}", text, speaker=name) for i, (text, _, _) in enumerate(facts)]
            questions = [
                Question(f"{name}-q{i}", q, (a,), category="fact", targets=(f"{name}-{i}",))
                for i, (_, q, a) in enumerate(facts)
            ]
            yield Sample(name, messages, questions)
