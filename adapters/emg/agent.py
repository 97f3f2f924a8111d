"""`emg`: the Editable Memory Graph agent (seed 004), without the reinforcement learning.

Ingestion edits the graph (insertion, replacement, deletion; see :mod:`.graph`).
Recall activates the top-K memories for the question (K = ``activate``, 3 in the seed)
and expands depth-first through the graph from their entity nodes, following
neighbours that share words with the question, to gather what a multi-hop question
needs; current facts outrank replaced ones. For factual questions about an entity the
graph knows, the agent writes the answer itself (``answer=auto``): the value reached
by walking the graph (:mod:`.answer`), a short span.
"""

from __future__ import annotations

import re
from itertools import chain
from pathlib import Path
from typing import Callable

import numpy as np

from memplug.adapters.emg.answer import GraphAnswerer
from memplug.adapters.emg.extract import LLMExtractor, Triple, extract_triple
from memplug.adapters.emg.graph import MemoryGraph
from memplug.adapters.retrieval.bm25_index import top_k
from memplug.adapters.retrieval.embedders import is_remote
from memplug.adapters.retrieval.retriever import Retriever
from memplug.adapters.retrieval.timestamps import parse_time
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, Chunk, Recall, Recalled, StoredItem
from memplug.options import Option, resolve
from memplug.preflight import requires_llm
from memplug.protocols import AgentConfig


#: a sentence ends at . ! or ? followed by space and a capital or a digit ("… Evans. 37. Bo …",
#: not "D.C. is"); CJK text is left whole (MemDaily's messages are one sentence and a stamp)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
_LIST_NUMBER = re.compile(r"^\d+\.$")
#: neighbour lists longer than this (together) are filtered in numpy during expansion
_EXPAND_IN_NUMPY = 512


def sentences(text: str) -> list[str]:
    """The sentences of ``text``; a bare list number ("37.") joins the sentence after it."""
    if _SENTENCE_END.search(text) is None and not _LIST_NUMBER.match(text.strip()):
        return [text]  # one sentence, most messages: what the loop below returns for it
    out: list[str] = []
    pending = ""
    for part in _SENTENCE_END.split(text):
        if _LIST_NUMBER.match(part.strip()):
            pending = f"{pending}{part.strip()} "
            continue
        out.append(pending + part)
        pending = ""
    if pending:
        out.append(pending.strip())
    return [s for s in out if s.strip()] or [text]


class EMGAgent:
    """Editable memory graph (seed 004): edits on ingestion; graph expansion and a graph walk on recall."""

    options = (
        Option("activate", int, 3, "memories activated by the question before graph expansion (K in the seed)"),
        Option("depth", int, 3, "depth of the depth-first expansion from activated memories"),
        Option(
            "extractor",
            str,
            "rules",
            "how facts are extracted: rules (offline) or llm (the run's --llm)",
            choices=("rules", "llm"),
        ),
        Option(
            "answer",
            str,
            "auto",
            "auto: answer factual questions from the graph; never: leave it to the reader",
            choices=("auto", "never"),
        ),
        Option("dense", float, 0.0, "weight of the embedder's cosine in activation (0: BM25 only)"),
        Option("max_items", int, 100, "most memories recalled (at least top-k; 0: all that the expansion reaches)"),
    )

    blocking = False  # see RetrievalAgent.blocking
    preflight = requires_llm("emg", "-o extractor=llm", when=lambda values: values["extractor"] == "llm")

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.opts = resolve(self.options, config.options, "emg")
        self.blocking = self.opts["extractor"] == "llm" or is_remote(config.embedder)
        extractor: Callable[[str], Triple | None]
        if self.opts["extractor"] == "llm":
            if config.llm is None:
                raise MemplugError("emg: -o extractor=llm needs an LLM (--llm)")
            extractor = LLMExtractor(config.llm)
        else:
            extractor = extract_triple
        self.top_k = config.top_k
        self.graph = MemoryGraph(extractor)
        self.retriever = Retriever(1.0, self.opts["dense"], 0.0, embedder=config.embedder, llm=config.llm)
        # the walk compares words with relations using the retriever's embedder, loaded on first use
        self._arrays: dict[tuple[str, str], np.ndarray] = {}
        self._arrays_size = 0
        self.answerer = GraphAnswerer(self.graph, lambda texts: self.retriever.embedder.embed(texts))

    def ingest(self, chunk: Chunk) -> None:
        # one memory per sentence: a message may hold many facts (FactConsolidation's official
        # memory unit is a 512-token chunk of ~40 numbered facts), and the graph keeps one
        # fact per memory; each sentence keeps its message's id for recall@K
        units = [(text, m) for m in chunk.messages for text in sentences(m.text)]
        for text, m in units:
            self.graph.add(text, m.id, m.time, m.meta)
        self.retriever.add([text for text, _ in units])

    def _expand(
        self, start: int, question_scores: np.ndarray, depth: int, out: dict[int, float], done: set[tuple[str, str]]
    ) -> None:
        """Depth-first from one memory through its entity nodes, keeping relevant neighbours.

        ``done`` names the neighbour lists (an entity's memories) already gone through in
        this recall: every memory in them is kept or irrelevant by then, so they are
        skipped; the memories kept, and their order, are the same as walking them again.
        Without it a walk through a hub entity ("I", with every first-person fact) read
        the hub's whole list once per member: quadratic in the size of the history.
        """
        if depth == 0:
            return
        memory = self.graph.memories[start]
        lists = [(name, ids) for name, ids in self.graph.neighbour_lists(memory) if name not in done]
        # the neighbours in order, without repeats, that the question touches (score > 0)
        if sum(len(ids) for _, ids in lists) > _EXPAND_IN_NUMPY:
            flat = np.concatenate([self._array(name, ids) for name, ids in lists])
            _, first = np.unique(flat, return_index=True)  # first occurrences
            flat = flat[np.sort(first)]
            touched = flat[question_scores[flat] > 0].tolist()
        else:
            touched = [i for i in dict.fromkeys(chain.from_iterable(ids for _, ids in lists)) if question_scores[i] > 0]
        for i in touched:
            if i != start and i not in out:
                out[i] = float(question_scores[i])
                self._expand(i, question_scores, depth - 1, out, done)
        done.update(name for name, _ in lists)

    def _array(self, name: tuple[str, str], ids: list[int]) -> np.ndarray:
        """A neighbour list as a numpy array, kept until the graph grows."""
        if self._arrays_size != len(self.graph):
            self._arrays, self._arrays_size = {}, len(self.graph)
        array = self._arrays.get(name)
        if array is None or len(array) != len(ids):
            array = self._arrays[name] = np.asarray(ids, dtype=np.int64)
        return array

    def _current_first(self, chosen: dict[int, float], when: float | None, cap: int | None) -> list[int]:
        """``sorted(chosen, key=not valid)[:cap]``: current facts first, each part in order,
        without testing more memories than the cap needs."""
        valid: list[int] = []
        stale: list[int] = []
        for i in chosen:
            if self.graph.memories[i].valid_at(when):
                valid.append(i)
                if cap is not None and len(valid) >= cap:
                    break
            elif cap is None or len(stale) < cap:
                stale.append(i)
        order = valid + stale
        return order[:cap] if cap is not None else order

    def recall(self, question: AgentQuestion) -> Recall:
        if not len(self.graph):
            return Recall(())
        when = parse_time(question.time)
        scores = self.retriever.scores(question.text)
        chosen: dict[int, float] = {}
        done: set[tuple[str, str]] = set()
        for i, s in top_k(scores, self.opts["activate"]):
            chosen.setdefault(i, s)
            self._expand(i, scores, self.opts["depth"], chosen, done)
        answer = None
        if self.opts["answer"] == "auto":
            walked = self.answerer.answer(question.text, when)
            if walked is not None:
                answer, path = walked
                lead = {m.index: float(scores[m.index]) for m in path}
                chosen = {**lead, **{i: s for i, s in chosen.items() if i not in lead}}
        # expansion through a hub entity ("I" in a long first-person history) reaches every
        # fact about it: tens of thousands of items for a reader's prompt at a million messages
        limit = self.opts["max_items"]
        cap = max(limit, self.top_k) if limit > 0 else None
        # current facts outrank replaced ones; then the walk, activation and expansion order
        order = self._current_first(chosen, when, cap)
        for i, s in top_k(scores, self.top_k, keep_zero=True):
            if len(order) >= self.top_k:
                break
            if i not in chosen:
                order.append(i)
                chosen[i] = s
        items = tuple(self._item(i, chosen[i]) for i in order)
        return Recall(items, answer=answer, meta={"emg_answered": answer is not None})

    def _item(self, index: int, score: float) -> Recalled:
        memory = self.graph.memories[index]
        return Recalled(memory.text, score, (memory.message_id,))

    def stored(self) -> list[StoredItem]:
        """Every memory of the graph, one sentence each, with its edit state: replaced facts
        stay in the graph (``current`` false) and are listed too."""
        return [
            StoredItem(
                m.text,
                str(m.index),
                (m.message_id,),
                {
                    "current": m.current,
                    "operation": m.operation,
                    **({"triple": [m.triple.subject, m.triple.relation, m.triple.value]} if m.triple else {}),
                    **({"replaced_by": m.replaced_by} if m.replaced_by is not None else {}),
                },
            )
            for m in self.graph.memories
        ]

    def close(self) -> None:
        """Everything lives in memory; nothing to release."""
