"""A context of numbered facts cut into MemoryAgentBench's chunks, one message per chunk.

memplug's own chunker (:mod:`memplug.chunking`) packs whole messages joined by newlines
and counts cl100k tokens, and memplug's retrieval agents keep each message of a chunk as
its own memory: fed that way, a retrieval agent would still return single facts.
MemoryAgentBench's RAG agents retrieve whole chunks, cut by ``chunk_text_into_sentences``
(see :mod:`.protocol`): punkt sentences, o200k tokens, joined by a space, so a fact's
serial number can end one chunk and its sentence begin the next. To feed agents exactly
those memories, the sample's messages become the chunks themselves (``chunk0``,
``chunk1``, ...), each fed whole (the protocol's unit is "message").

The facts stay in ``sample.meta["facts"]`` (``[serial, sentence]``) and each question's
fact targets in ``meta["fact_targets"]``, so that ``memplug generate --check`` re-reads
the answers from the facts; a question's ``targets`` are the chunks that hold its facts
(a fact belongs to the chunk where its sentence ends).
"""

from __future__ import annotations

import bisect
import re

import attrs

from memplug.datasets.factcon.protocol import chunk_text_into_sentences, memorize, pack_sentences, sentence_spans
from memplug.models import Message, Sample

_SERIAL = re.compile(r"^(\d+)\. ")


def context_of(sample: Sample) -> str:
    """The release's context text of a fact-level sample: its header line, then one
    ``N. fact`` line per fact, each ending in a newline (the release rows read back exactly)."""
    header = str(sample.meta.get("header") or "")
    return (f"{header}\n" if header else "") + "".join(f"{m.text}\n" for m in sample.messages)


def chunked(sample: Sample, chunk_size: int, wrap: bool = True) -> Sample:
    """``sample`` (one message per fact) with MemoryAgentBench's chunks as its messages."""
    context = context_of(sample)
    spans = sentence_spans(context)
    sentences = [context[a:b] for a, b in spans]
    groups = [g for g in pack_sentences(sentences, chunk_size)]
    texts = [" ".join(sentences[i] for i in g) for g in groups]
    # the character offset where each chunk's last sentence ends, to place each fact
    ends = [spans[g[-1]][1] if g else 0 for g in groups]
    chunk_of: dict[str, int] = {}
    offset = len(f"{sample.meta['header']}\n") if sample.meta.get("header") else 0
    for m in sample.messages:
        offset += len(m.text)
        chunk_of[m.id] = min(bisect.bisect_left(ends, offset), len(groups) - 1)
        offset += 1  # the newline
    serials: dict[int, list[int]] = {}
    for m in sample.messages:
        serials.setdefault(chunk_of[m.id], []).append(int(m.meta.get("serial", m.id)))
    messages = [
        Message(
            f"chunk{i}",
            memorize(text) if wrap else text,
            meta={"chunk": i, "serials": [min(serials[i]), max(serials[i])] if i in serials else None},
        )
        for i, text in enumerate(texts)
    ]
    questions = [
        attrs.evolve(
            q,
            targets=tuple(dict.fromkeys(f"chunk{chunk_of[t]}" for t in q.targets if t in chunk_of)),
            meta={**q.meta, "fact_targets": list(q.targets)},
        )
        for q in sample.questions
    ]
    meta = {
        **sample.meta,
        "unit": "chunk",
        "chunk_size": chunk_size,
        "wrapped": wrap,
        "n_chunks": len(messages),
        "facts": [[int(m.meta.get("serial", m.id)), _SERIAL.sub("", m.text, count=1)] for m in sample.messages],
    }
    if "memory_points" in sample.meta:  # each gold point in the chunk of its fact, as the targets
        meta["memory_points"] = [
            {
                **p,
                "message_ids": list(dict.fromkeys(f"chunk{chunk_of[i]}" for i in p["message_ids"] if i in chunk_of)),
                "fact_ids": list(p["message_ids"]),
            }
            for p in sample.meta["memory_points"]
        ]
    return attrs.evolve(sample, messages=messages, questions=questions, meta=meta)


def unchunked(sample: Sample) -> Sample:
    """The fact-level sample a chunked one was cut from (ids, texts and targets as before)."""
    if sample.meta.get("unit") != "chunk":
        return sample
    messages = [Message(str(n), f"{n}. {text}", meta={"serial": n}) for n, text in sample.meta["facts"]]
    questions = [
        attrs.evolve(
            q,
            targets=tuple(q.meta.get("fact_targets") or ()),
            meta={k: v for k, v in q.meta.items() if k != "fact_targets"},
        )
        for q in sample.questions
    ]
    meta = {k: v for k, v in sample.meta.items() if k not in ("unit", "chunk_size", "wrapped", "n_chunks", "facts")}
    if "memory_points" in meta:
        meta["memory_points"] = [
            {k: v for k, v in {**p, "message_ids": p.get("fact_ids", p["message_ids"])}.items() if k != "fact_ids"}
            for p in meta["memory_points"]
        ]
    return attrs.evolve(sample, messages=messages, questions=questions, meta=meta)


__all__ = ["chunk_text_into_sentences", "chunked", "context_of", "unchunked"]
