"""Offline NIAH-MQ rows in the release's layout, so `memplug eval --dataset mab` runs with no download.

MemoryAgentBench's ``ruler_niah_mq_448K`` is RULER's ``niah_multiquery`` (Hsieh et al.,
2024, github NVIDIA/RULER ``scripts/data/synthetic/niah.py``): needles "One of the special
magic numbers for {key} is: {value}." hidden at random depths of a haystack, and a
question asking for the values of four keys at once. The data is synthetic by design, so
generating it offline is the benchmark itself at another seed, not an imitation. RULER's
``noise`` haystack is used (its repeated sentences), which needs no essays to download.

A row is what the release holds: ``context``, ``questions``, ``answers`` (a list of value
lists) and ``metadata`` with ``source`` and ``qa_pair_ids``.
"""

from __future__ import annotations

import random
from typing import Any

#: RULER niah.py's noise haystack sentence group
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
#: o200k tokens of one NOISE group, its joining space included (counted: 24)
NOISE_TOKENS = 24
NEEDLE = "One of the special magic numbers for {key} is: {value}."
#: RULER niah_multiquery: four keys asked at once, one value each
KEYS_PER_QUESTION = 4
SOURCE = "ruler_niah_mq_synthetic"

_ADJECTIVES = (
    "amber",
    "brisk",
    "calm",
    "dusty",
    "eager",
    "faint",
    "gentle",
    "hollow",
    "icy",
    "jolly",
    "keen",
    "lofty",
    "mellow",
    "noble",
    "odd",
    "plain",
    "quiet",
    "rapid",
    "silent",
    "tidy",
    "upbeat",
    "vivid",
    "wary",
    "young",
    "zesty",
    "bold",
    "crisp",
    "dim",
    "fierce",
    "grand",
)
_NOUNS = (
    "anchor",
    "badger",
    "candle",
    "dagger",
    "engine",
    "falcon",
    "garden",
    "harbor",
    "island",
    "jacket",
    "kettle",
    "ladder",
    "marble",
    "needle",
    "orchard",
    "pebble",
    "quarry",
    "ribbon",
    "saddle",
    "tunnel",
    "umbrella",
    "valley",
    "wagon",
    "yarrow",
    "zephyr",
    "beacon",
    "cradle",
    "dune",
    "ember",
    "fjord",
)


def keys(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct hyphenated adjective-noun keys (RULER draws random words)."""
    pool = [f"{a}-{b}" for a in _ADJECTIVES for b in _NOUNS]
    if n > len(pool):
        raise ValueError(f"at most {len(pool)} needles, asked for {n}")
    return rng.sample(pool, n)


def niah_mq_row(tokens: int, questions: int, rng: random.Random, qa_prefix: str) -> dict[str, Any]:
    """One release row: a haystack of about ``tokens`` o200k tokens with ``4 * questions``
    needles at random depths, and ``questions`` questions of four keys each."""
    n_needles = KEYS_PER_QUESTION * questions
    chosen = keys(rng, n_needles)
    values = [str(rng.randrange(1_000_000, 10_000_000)) for _ in chosen]
    groups = max(1, tokens // NOISE_TOKENS)
    depths = sorted(rng.randrange(groups + 1) for _ in chosen)
    order = list(range(n_needles))
    rng.shuffle(order)  # which needle lands at which depth
    parts: list[str] = []
    at = 0
    for depth, i in zip(depths, order):
        parts.append(" ".join([NOISE] * (depth - at)))
        parts.append(NEEDLE.format(key=chosen[i], value=values[i]))
        at = depth
    parts.append(" ".join([NOISE] * (groups - at)))
    context = " ".join(p for p in parts if p)
    asked = list(range(n_needles))
    rng.shuffle(asked)
    qs, answers = [], []
    for q in range(questions):
        ids = asked[q * KEYS_PER_QUESTION : (q + 1) * KEYS_PER_QUESTION]
        names = [chosen[i] for i in ids]
        qs.append(f"numbers for {', '.join(names[:-1])} and {names[-1]}")
        answers.append([values[i] for i in ids])
    return {
        "context": context,
        "questions": qs,
        "answers": answers,
        "metadata": {"source": SOURCE, "qa_pair_ids": [f"{qa_prefix}_q{q}" for q in range(questions)]},
    }
