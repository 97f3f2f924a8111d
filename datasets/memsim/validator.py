"""`memplug generate --check`: every answer recomputed from the trajectory's own hints.

A trajectory fails when its stated answer, correct choice or retrieval targets differ
from what its hints give, when two messages contradict each other (the same fact
about the same referent with different values), when a target is not one of its
messages, or when a message does not carry the value of its hint. The statistics
include the Shannon–Wiener index of the sampled attributes (seed 000, §4.1).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any, Iterable, Sequence

from memplug.datasets.checks import CheckReport
from memplug.models import Sample

from .language import KEY_ATTRS
from .languages import LANGUAGES
from .ops import Unsupported, evaluate
from .questions import CATEGORIES


def shannon_wiener(values: Iterable[Any]) -> float:
    """H = Σ p_i ln(1 / p_i) over the observed values (Morris et al., 2014).

    Written with ln(1 / p), not -Σ p ln p, so that one value gives 0.0, not -0.0 (which
    `memplug generate --check` printed as ``"user.hometown": -0.0``)."""
    counts = Counter(values)
    total = sum(counts.values())
    return sum(c / total * math.log(total / c) for c in counts.values()) if total else 0.0


def swi(samples: Sequence[Sample]) -> tuple[float, dict[str, float]]:
    """SWI-W: the mean over attributes of each attribute's Shannon–Wiener index (seed 000, §4.1).

    Each (trajectory, entity, attribute) counts once, so an attribute stated in two
    messages of a trajectory is not counted twice.
    """
    observed: dict[str, dict[tuple[str, str], Any]] = defaultdict(dict)
    for sample in samples:
        entities = sample.meta.get("entities", {})
        for h in sample.meta.get("hints", ()):
            if h["attribute"] in KEY_ATTRS and h["entity"] in entities:
                key = f"{entities[h['entity']]['group']}.{h['attribute']}"
                observed[key][(sample.id, h["entity"])] = h["value"]
    by_attr = {k: round(shannon_wiener(v.values()), 4) for k, v in sorted(observed.items())}
    return (round(sum(by_attr.values()) / len(by_attr), 4) if by_attr else 0.0), by_attr


def check_sample(sample: Sample) -> list[str]:
    """Problems of one trajectory; empty when it is sound."""
    where = f"sample {sample.id}"
    meta = sample.meta
    lang = LANGUAGES.get(meta.get("lang", ""))
    if lang is None or "hints" not in meta or "entities" not in meta:
        return [f"{where}: not a memsim trajectory (meta lacks lang, hints or entities)"]
    problems: list[str] = []
    by_id = {m.id: m for m in sample.messages}
    if len(by_id) != len(sample.messages):
        problems.append(f"{where}: duplicate message ids")
    entities = meta["entities"]
    table: dict[str, dict[str, tuple[Any, str]]] = defaultdict(dict)
    said: dict[tuple[str, str], tuple[Any, str]] = {}
    owner: dict[str, str] = {}
    for h in meta["hints"]:
        mid, attr, value = h["message"], h["attribute"], h["value"]
        if mid not in by_id:
            problems.append(f"{where}: hint {h['entity']}.{attr} points at missing message {mid}")
            continue
        shown = lang.render(attr, value)
        if shown not in by_id[mid].text:
            problems.append(f"{where}: message {mid} does not state {attr} = {shown!r}")
        previous = table[h["entity"]].get(attr)
        if previous is not None and previous[0] != value:
            problems.append(f"{where}: messages {previous[1]} and {mid} contradict on {h['entity']}.{attr}")
        table[h["entity"]].setdefault(attr, (value, mid))
        for ref in h["refs"]:
            earlier = said.get((ref, attr))
            if earlier is not None and earlier[0] != value:
                problems.append(
                    f"{where}: messages {earlier[1]} and {mid} contradict: {ref} {attr} "
                    f"{lang.render(attr, earlier[0])!r} vs {shown!r}"
                )
            said.setdefault((ref, attr), (value, mid))
            if h["entity"] in entities and owner.setdefault(ref, h["entity"]) != h["entity"]:
                problems.append(f"{where}: {ref} names both {owner[ref]} and {h['entity']}")
    for h in meta["hints"]:  # a referent of the trajectory must not be named by noise about someone else
        if h["entity"] not in entities:
            for ref in h["refs"]:
                if ref in owner and owner[ref] != h["entity"]:
                    problems.append(f"{where}: noise message {h['message']} speaks about {ref}")
    times = [m.time for m in sample.messages if m.time]
    if any(a > b for a, b in zip(times, times[1:])):
        problems.append(f"{where}: message times go backwards")
    for q in sample.questions:
        qwhere = f"{where} question {q.id}"
        if q.category not in CATEGORIES:
            problems.append(f"{qwhere}: unknown category {q.category!r}")
        if q.time and times and q.time < times[-1]:
            problems.append(f"{qwhere}: asked before the last message")
        missing = [t for t in q.targets if t not in by_id]
        if missing:
            problems.append(f"{qwhere}: targets {missing} are not messages of the trajectory")
        try:
            answer, used = evaluate(q.meta["spec"], table, entities, lang)
        except (Unsupported, KeyError, TypeError, ValueError) as exc:
            problems.append(f"{qwhere}: answer cannot be recomputed from the hints: {exc}")
            continue
        if tuple(q.answers[:1]) != (answer,):
            problems.append(f"{qwhere}: answer {q.answers[:1]} but the hints give {answer!r}")
        choices = dict(q.choices or {})
        if len(choices) != 4 or len(set(choices.values())) != 4:
            problems.append(f"{qwhere}: needs four distinct choices, has {list(choices.values())}")
        if choices.get(q.correct_choice or "") != answer:
            problems.append(
                f"{qwhere}: correct choice {q.correct_choice} is {choices.get(q.correct_choice or '')!r}, "
                f"the hints give {answer!r}"
            )
        if sorted(q.targets, key=int) != sorted(set(used), key=int):
            problems.append(f"{qwhere}: targets {list(q.targets)} but the answer rests on {sorted(set(used), key=int)}")
    return problems


def check(samples: Sequence[Sample]) -> CheckReport:
    """Problems of every trajectory, with counts and the diversity (SWI) of the whole set."""
    problems: list[str] = []
    for sample in samples:
        problems.extend(check_sample(sample))
    categories = Counter(q.category for s in samples for q in s.questions)
    n_messages = sum(len(s.messages) for s in samples)
    index, by_attr = swi(samples)
    stats = {
        "trajectories": len(samples),
        "questions": sum(categories.values()),
        "messages": n_messages,
        "messages_per_trajectory": round(n_messages / len(samples), 2) if samples else 0.0,
        "by_category": {c: categories.get(c, 0) for c in CATEGORIES},
        "swi": index,
        "swi_by_attribute": by_attr,
        "problems": len(problems),
    }
    return CheckReport(ok=not problems, problems=problems, stats=stats)
