"""The Editable Memory Graph: tree partitions, entity graph, and the three edits (seed 004, 4.2).

Every memory sits in one (type, subclass) partition. A memory whose fact could be
extracted is an edge subject -> value of the graph layer; entity nodes are the
normalised subject and value strings, so a value of one fact ("Charles Dickens") is the
subject node of others, which is what multi-hop traversal follows.

Editing, as in the seed: the new memory is placed in its partition, the top-1 current
memory of that partition is retrieved, and comparing their relations decides the edit:

- **replacement**: same entity and relation with a new value; the old memory is kept
  as history (``current = False``, ``replaced_by``) and no longer counts as current;
- **deletion**: a memory that expires ("valid until …"); after its expiry, taken from
  the dataset's time, it is no longer current;
- **insertion**: anything else, a new relation.

Top-1 retrieval in a partition is exact on (subject, relation) for extracted facts and
token overlap otherwise (posting lists, skipping tokens too common to discriminate).
"""

from __future__ import annotations

import difflib
import re
from array import array
from collections import defaultdict
from typing import Any, Callable, Mapping

import attrs
import numpy as np

from memplug.adapters.emg.extract import Triple, normalise
from memplug.adapters.emg.taxonomy import partition_of
from memplug.adapters.retrieval.timestamps import parse_time
from memplug.adapters.retrieval.tokenizer import has_cjk, tokenize

#: a token in more memories of a partition than this is skipped in top-1 look-ups
MAX_POSTINGS = 1000
#: from this many postings on, top-1 votes are counted in numpy (the same memory, faster)
_VOTE_IN_NUMPY = 256
_EXPIRY = re.compile(
    r"(?:expires?|expiring|valid (?:until|through|till)|until)\s+(?:on\s+)?(.+?)(?:[.;,]|$)"
    r"|(?:有效期至|有效期到|到期时间[是为]?)\s*(.+?)(?:[。；，]|$)",
    re.IGNORECASE,
)
INSERTION, REPLACEMENT, DELETION = "insertion", "replacement", "deletion"


@attrs.define
class Memory:
    """One memory of the graph: its message, partition, extracted triple and edit state."""

    index: int
    text: str
    message_id: str
    #: the message's time as the dataset wrote it; :attr:`time` is it in seconds
    stamp: str | None
    partition: tuple[str, str]
    triple: Triple | None
    operation: str = INSERTION
    current: bool = True
    replaced_by: int | None = None
    expires: float | None = None
    #: (normalised subject, normalised relation) of the extracted fact
    key: tuple[str, str] | None = attrs.field(init=False)

    @key.default
    def _key(self) -> tuple[str, str] | None:
        return (normalise(self.triple.subject), normalise(self.triple.relation)) if self.triple else None

    @property
    def time(self) -> float | None:
        """The message's time in seconds (parsed when asked: nothing in ingestion reads it)."""
        return parse_time(self.stamp)

    def valid_at(self, when: float | None) -> bool:
        """Current, and not expired at ``when`` (a dataset time; None: no expiry check)."""
        return self.current and (self.expires is None or when is None or when <= self.expires)


#: every match of _EXPIRY in ASCII text holds one of these, lower-cased (for other text,
#: case-insensitive matching is Unicode's, so the expression itself decides)
_EXPIRY_CUES = ("expir", "until", "valid")


def expiry_of(text: str) -> float | None:
    if text.isascii():
        lowered = text.lower()
        if not any(cue in lowered for cue in _EXPIRY_CUES):
            return None  # the expression costs ~8 us a memory; most memories never expire
    match = _EXPIRY.search(text)
    return parse_time((match.group(1) or match.group(2) or "").strip()) if match else None


def _units(text: str) -> list[str]:
    """Characters for Chinese, words otherwise: the units a single-span diff works on."""
    return [c for c in text if not c.isspace()] if has_cjk(text) else text.lower().split()


def differs_in_value_only(new: str, old: str) -> bool:
    """True when two memories differ in one span after a shared opening (entity, relation).

    For memories without an extracted triple: "我的上司名叫赵雅琳" vs "我的上司名叫王芳" is
    one fact with a new value; "我表弟今年36岁" vs "我表妹今年36岁" is not (the shared
    opening is too short to hold the entity and relation).
    """
    a, b = _units(new), _units(old)
    blocks = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(blocks) != 1:
        return False
    prefix = blocks[0][1]
    return prefix >= 4 and prefix * 2 >= min(len(a), len(b))


class MemoryGraph:
    """Memories in their partitions, the entity graph over their triples, and the edits on adding."""

    def __init__(self, extractor: Callable[[str], Triple | None]) -> None:
        self.extractor = extractor
        self.memories: list[Memory] = []
        #: partition -> {(subject, relation) key: the latest memory with it}; nested rather than
        #: keyed by (partition, key), so that adding a memory makes no tuple for the look-up
        self._by_key: dict[tuple[str, str], dict[tuple[str, str], int]] = defaultdict(dict)
        # token postings per partition, as array('i'): 4 bytes a posting, read by numpy without a copy
        self._postings: dict[tuple[str, str], dict[str, array[int]]] = defaultdict(
            lambda: defaultdict(lambda: array("i"))
        )
        #: memory.current of every memory (and spare room), for counting votes in numpy
        self._current = np.ones(0, dtype=bool)
        self.by_subject: dict[str, list[int]] = defaultdict(list)
        self.by_value: dict[str, list[int]] = defaultdict(list)

    def __len__(self) -> int:
        return len(self.memories)

    def add(self, text: str, message_id: str, time: str | None = None, meta: Mapping[str, Any] | None = None) -> Memory:
        triple = self.extractor(text)
        partition = partition_of(f"{triple.subject} {triple.relation}" if triple else text)
        memory = Memory(len(self.memories), text, message_id, time, partition, triple)
        # tokens for top-1 look-ups and postings, made once (a memory with no extracted fact)
        tokens = set(tokenize(text)) if memory.key is None else None
        old = self._top1(memory, tokens)
        if old is not None and self._same_relation(memory, old):
            old.current, old.replaced_by = False, memory.index
            self._current[old.index] = False
            memory.operation = REPLACEMENT
        memory.expires = expiry_of(text)
        if memory.expires is not None:
            memory.operation = DELETION
        self._register(memory, tokens)
        return memory

    def _top1(self, memory: Memory, tokens: set[str] | None = None) -> Memory | None:
        if memory.key is not None:
            found = self._by_key[memory.partition].get(memory.key)
            return self.memories[found] if found is not None else None
        postings = self._postings[memory.partition]
        lists = [
            hits
            for token in (set(tokenize(memory.text)) if tokens is None else tokens)
            if (hits := postings.get(token)) is not None and 0 < len(hits) <= MAX_POSTINGS
        ]
        if sum(map(len, lists)) > _VOTE_IN_NUMPY:
            return self._top1_numpy(lists)
        votes: dict[int, int] = defaultdict(int)
        for hits in lists:
            for i in hits:
                if self.memories[i].current:
                    votes[i] += 1
        if not votes:
            return None
        return self.memories[max(votes, key=lambda i: (votes[i], i))]

    def _top1_numpy(self, lists: list[array[int]]) -> Memory | None:
        """The current memory sharing most tokens (the latest among equals), counted in numpy."""
        ids = np.concatenate([np.frombuffer(hits, dtype=np.int32) for hits in lists])
        ids = ids[self._current[ids]]
        if not len(ids):
            return None
        # np.unique(ids, return_counts=True) without its checks: runs of the sorted ids
        ids.sort()
        ends = np.flatnonzero(ids[1:] != ids[:-1])  # the last index of each run but the last
        ends = np.append(ends, len(ids) - 1)
        votes = np.diff(ends, prepend=-1)
        return self.memories[int(ids[ends[np.flatnonzero(votes == votes.max())[-1]]])]

    @staticmethod
    def _same_relation(new: Memory, old: Memory) -> bool:
        if new.key is not None and old.key is not None:
            return new.key == old.key
        return differs_in_value_only(new.text, old.text)

    def _register(self, memory: Memory, tokens: set[str] | None = None) -> None:
        self.memories.append(memory)
        if len(self._current) < len(self.memories):  # grown by doubling
            self._current = np.concatenate([self._current, np.ones(max(len(self._current), 1024), dtype=bool)])
        if memory.key is not None and memory.triple is not None:  # a key is made of the triple
            self._by_key[memory.partition][memory.key] = memory.index
            self.by_subject[memory.key[0]].append(memory.index)
            self.by_value[normalise(memory.triple.value)].append(memory.index)
        else:
            postings = self._postings[memory.partition]
            for token in set(tokenize(memory.text)) if tokens is None else tokens:
                postings[token].append(memory.index)

    def neighbour_lists(self, memory: Memory) -> list[tuple[tuple[str, str], list[int]]]:
        """What :meth:`neighbours` joins (before dropping repeats and the memory itself): the
        memories whose subject is this memory's value, whose value is its subject, whose
        subject is its subject; each list is named (("subject" or "value", entity)) so that
        a walk can skip a list it has been through already."""
        if memory.triple is None or memory.key is None:
            return []
        value, subject = normalise(memory.triple.value), memory.key[0]
        return [
            (("subject", value), self.by_subject.get(value, [])),
            (("value", subject), self.by_value.get(subject, [])),
            (("subject", subject), self.by_subject.get(subject, [])),
        ]

    def neighbours(self, memory: Memory) -> list[int]:
        """Memories incident to this memory's entity nodes: value node first, then subject."""
        if memory.triple is None or memory.key is None:
            return []
        value, subject = normalise(memory.triple.value), memory.key[0]
        out = self.by_subject.get(value, []) + self.by_value.get(subject, []) + self.by_subject.get(subject, [])
        return [i for i in dict.fromkeys(out) if i != memory.index]
