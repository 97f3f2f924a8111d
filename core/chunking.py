"""Packs a sample's messages into chunks of at most ``chunk_size`` tokens."""

from __future__ import annotations

from typing import Iterator, Sequence

import attrs

from memplug.models import Chunk, Message
from memplug.tokens import encoding


def split_message(message: Message, chunk_size: int, tokens: list[int]) -> list[Message]:
    """Cut one oversize message into parts of at most ``chunk_size`` tokens.

    Parts keep the message id (so recall@K still credits it) and carry
    ``meta["part"] = [index, count]``.
    """
    enc = encoding()
    pieces = [tokens[i : i + chunk_size] for i in range(0, len(tokens), chunk_size)]
    return [
        attrs.evolve(message, text=enc.decode(piece), meta={**message.meta, "part": [i, len(pieces)]})
        for i, piece in enumerate(pieces)
    ]


def chunk_messages(messages: Sequence[Message], chunk_size: int) -> Iterator[Chunk]:
    """Yield chunks of whole messages in dataset order, each at most ``chunk_size`` tokens.

    Messages are joined by a newline inside a chunk; the newline is counted, so a
    chunk's text really is within budget. A message longer than a chunk is split.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    enc = encoding()
    current: list[Message] = []
    used = 0
    index = 0
    # Not enc.encode_batch: it starts a thread pool per call, which cost more than the
    # encoding itself for the short messages of a sample (measured: 4 ms per sample).
    for message in messages:
        tokens = enc.encode(message.text, disallowed_special=())
        n = len(tokens)
        parts = [message] if n <= chunk_size else split_message(message, chunk_size, tokens)
        for part in parts:
            cost = n if len(parts) == 1 else len(enc.encode(part.text, disallowed_special=()))
            cost = min(cost, chunk_size)
            separator = 1 if current else 0
            if current and used + separator + cost > chunk_size:
                yield Chunk(index, tuple(current))
                index += 1
                current, used, separator = [], 0, 0
            current.append(part)
            used += separator + cost
    if current:
        yield Chunk(index, tuple(current))
