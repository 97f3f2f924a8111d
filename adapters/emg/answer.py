"""Answering a factual question by walking the graph from the entity it names.

Stands in for the seed's trained traversal policy (no reinforcement learning here): the
question's entity is the longest known subject it mentions; at each hop the current
facts about the entity are scored against the question's remaining relation words,
nearest word first (in "the spouse of the author of X", "author" decides the first hop
and "spouse" the second), and the best fact's value becomes the next entity. The walk stops
when no fact matches a remaining word. The last value is the answer: a short span,
not the whole memory.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, cast

import numpy as np

from memplug.adapters.emg.extract import Triple, normalise
from memplug.adapters.emg.graph import Memory, MemoryGraph

_QUESTION_WORDS = frozenset(
    "what which who whom whose where when how is are was were does did do the a an of in to by for "
    "with at on as from that this serves serve known".split()
)
#: at most this many hops; FactConsolidation's multi-hop questions need up to four
MAX_HOPS = 4
#: least match (lexical 1.0, or a cosine) for a fact to be followed
MIN_MATCH = 0.45
#: an entity with this many relations (a hub: "I" of a long first-person history has tens
#: of thousands) is matched against a word in numpy first (:meth:`GraphAnswerer._hub_hop`)
HUB_RELATIONS = 64
#: more than the difference between a cosine from a matrix product and from a single dot
_MARGIN = 1e-4


def _stem(word: str) -> str:
    return word[:5]


class GraphAnswerer:
    """Walks the graph from the question's entity; ``embed`` (texts to unit rows) matches
    question words with relations that share no stem with them."""

    def __init__(self, graph: MemoryGraph, embed: Callable[[list[str]], np.ndarray]) -> None:
        self.graph = graph
        self._embed = embed
        self._vector = lru_cache(maxsize=100_000)(self._embed_one)
        #: (word, relation) -> similarity: a hub entity's facts repeat a few relations
        #: thousands of times, and every question tries each of them
        self._similarities: dict[tuple[str, str], float] = {}
        #: entity -> (graph size when made, {relation: its facts' indices, latest first})
        self._groups: dict[str, tuple[int, dict[str, list[int]]]] = {}
        #: hub entity -> (its groups, relation names, their vectors, stem -> relation rows)
        self._hubs: dict[str, tuple[dict[str, list[int]], list[str], np.ndarray, dict[str, list[int]]]] = {}
        self._relation_vectors: dict[str, np.ndarray] = {}

    def _relations(self, entity: str) -> dict[str, list[int]]:
        """The entity's facts grouped by normalised relation, latest first; made again when
        the graph has grown (an edit may also have changed which facts are current)."""
        size = len(self.graph.memories)
        cached = self._groups.get(entity)
        if cached is None or cached[0] != size:
            groups: dict[str, list[int]] = {}
            for index in self.graph.by_subject.get(entity, []):
                triple = self.graph.memories[index].triple
                if triple is not None:
                    groups.setdefault(normalise(triple.relation), []).append(index)
            for indices in groups.values():
                indices.sort(reverse=True)
            if len(self._groups) >= 10_000:
                self._groups.clear()
            cached = self._groups[entity] = (size, groups)
        return cached[1]

    def _embed_one(self, text: str) -> np.ndarray:
        return cast(np.ndarray, self._embed([text])[0])

    def _similarity(self, word: str, relation: str) -> float:
        key = (word, relation)
        sim = self._similarities.get(key)
        if sim is None:
            if len(self._similarities) >= 1_000_000:
                self._similarities.clear()
            sim = self._similarities[key] = self._compute_similarity(word, relation)
        return sim

    def _compute_similarity(self, word: str, relation: str) -> float:
        if any(_stem(word) == _stem(t) for t in relation.split()):
            return 1.0
        return float(self._vector(word) @ self._vector(relation))

    def find_subject(self, words: list[str]) -> tuple[str, int, int] | None:
        """Longest run of question words that is a known subject: (key, start, end)."""
        best = None
        for start in range(len(words)):
            for end in range(min(len(words), start + 12), start, -1):
                key = " ".join(words[start:end])
                if key in self.graph.by_subject and (best is None or end - start > best[2] - best[1]):
                    best = (key, start, end)
                    break
        return best

    def answer(self, question: str, when: float | None = None) -> tuple[str, list[Memory]] | None:
        """(answer span, the facts walked), or None when the question names no known entity."""
        words = normalise(question).split()
        found = self.find_subject(words)
        if found is None:
            return None
        entity, start, end = found
        # remaining relation words with their distance from the entity mention
        remaining = {i: w for i, w in enumerate(words) if (i < start or i >= end) and w not in _QUESTION_WORDS}
        path: list[Memory] = []
        value = ""  # the last hop's value
        seen: set[int] = set()
        for _ in range(MAX_HOPS):
            groups = self._relations(entity)
            if len(groups) >= HUB_RELATIONS:
                hop = self._hub_hop(entity, groups, remaining, start, end, when, seen) if remaining else None
            else:
                hop = self._hop(groups, remaining, start, end, when, seen)
            if hop is None:
                break
            _, memory, triple, word = hop
            path.append(memory)
            seen.add(memory.index)
            relation = normalise(triple.relation)
            # the hop uses up its word and every other word its relation spells out
            for i in [i for i, w in remaining.items() if i == word or self._similarity(w, relation) >= 1.0]:
                remaining.pop(i)
            entity = normalise(triple.value)
            value = triple.value
        if not path:
            return None
        return value, path

    def _hop(
        self,
        groups: dict[str, list[int]],
        remaining: dict[int, str],
        start: int,
        end: int,
        when: float | None,
        seen: set[int],
    ) -> tuple[float, Memory, Triple, int] | None:
        """The next fact to follow: (match, fact, its triple, the word it matched), or None."""
        # facts with one relation match a word equally, so the best of them is the latest
        # valid one: each relation is compared once (a hub such as "I" has thousands of
        # facts and far fewer relations)
        latest: dict[str, tuple[Memory, Triple]] = {}
        for relation, indices in groups.items():
            fact = self._latest(indices, when, seen)
            if fact is not None:
                latest[relation] = fact
        if not latest or not remaining:
            return None
        # the nearest remaining word that some fact matches decides the hop
        best: tuple[float, Memory, Triple, int] | None = None
        for i in sorted(remaining, key=lambda i: _distance(i, start, end)):
            for relation, (memory, triple) in latest.items():
                sim = self._similarity(remaining[i], relation)
                if sim >= MIN_MATCH and (best is None or (sim, memory.index) > (best[0], best[1].index)):
                    best = (sim, memory, triple, i)
            if best is not None:
                break
        return best

    def _latest(self, indices: list[int], when: float | None, seen: set[int]) -> tuple[Memory, Triple] | None:
        """The first fact of ``indices`` (a relation's facts, latest first) valid at ``when``
        and not yet on the path, with its triple; None when there is none."""
        for index in indices:
            m = self.graph.memories[index]
            if m.triple is not None and m.valid_at(when) and index not in seen:
                return m, m.triple
        return None

    def _hub_hop(
        self,
        entity: str,
        groups: dict[str, list[int]],
        remaining: dict[int, str],
        start: int,
        end: int,
        when: float | None,
        seen: set[int],
    ) -> tuple[float, Memory, Triple, int] | None:
        """:meth:`_hop` for an entity with many relations, the same fact: each word is compared
        with all the relations at once (one matrix product, stems looked up), and only the
        relations that can be the best (within ``_MARGIN`` of it) are looked at one by one,
        best first, with the exact match of :meth:`_similarity` (a relation's latest valid
        fact is looked up only for those)."""
        names, matrix, stems = self._hub(entity, groups)
        for i in sorted(remaining, key=lambda i: _distance(i, start, end)):
            word = remaining[i]
            approx = matrix @ self._vector(word)
            lexical = stems.get(_stem(word))
            if lexical:
                approx[lexical] = 1.0
            rows = np.flatnonzero(approx >= MIN_MATCH - _MARGIN)
            best: tuple[float, Memory, Triple, int] | None = None
            for r in rows[np.argsort(-approx[rows], kind="stable")].tolist():
                if best is not None and approx[r] < best[0] - _MARGIN:
                    break  # no relation from here on matches as well as the best
                relation = names[r]
                fact = self._latest(groups[relation], when, seen)
                if fact is not None:
                    m, triple = fact
                    sim = self._similarity(word, relation)
                    if sim >= MIN_MATCH and (best is None or (sim, m.index) > (best[0], best[1].index)):
                        best = (sim, m, triple, i)
            if best is not None:
                return best
        return None

    def _hub(self, entity: str, groups: dict[str, list[int]]) -> tuple[list[str], np.ndarray, dict[str, list[int]]]:
        """A hub's relation names, their unit vectors (one row each) and the rows of the
        relations holding each word stem; made again with its groups."""
        cached = self._hubs.get(entity)
        if cached is None or cached[0] is not groups:
            names = list(groups)
            missing = [r for r in names if r not in self._relation_vectors]
            if missing:
                if len(self._relation_vectors) + len(missing) > 1_000_000:
                    self._relation_vectors.clear()
                    missing = names
                for r, vector in zip(missing, self._embed(missing)):
                    self._relation_vectors[r] = vector
            matrix = np.stack([self._relation_vectors[r] for r in names]).astype(np.float32)
            stems: dict[str, list[int]] = {}
            for row, relation in enumerate(names):
                for token in relation.split():
                    rows = stems.setdefault(_stem(token), [])
                    if not rows or rows[-1] != row:
                        rows.append(row)
            if len(self._hubs) >= 100:
                self._hubs.clear()
            cached = self._hubs[entity] = (groups, names, matrix, stems)
        return cached[1], cached[2], cached[3]


def _distance(i: int, start: int, end: int) -> int:
    return start - i if i < start else i - end + 1
