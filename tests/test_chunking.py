"""The chunker packs whole messages up to the token budget and splits oversize ones."""

from __future__ import annotations

from memplug.chunking import chunk_messages
from memplug.models import Message
from memplug.tokens import count_tokens


def test_packs_whole_messages_in_order_within_budget():
    messages = [Message(str(i), f"message number {i} says hello") for i in range(20)]
    chunks = list(chunk_messages(messages, 30))
    assert [m.id for c in chunks for m in c.messages] == [str(i) for i in range(20)]
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert count_tokens(c.text) <= 30
    assert len(chunks) > 1 and all(len(c.messages) > 1 for c in chunks[:-1])


def test_each_chunk_keeps_its_message_ids():
    messages = [Message("a", "one"), Message("b", "two"), Message("c", "three")]
    (chunk,) = chunk_messages(messages, 100)
    assert chunk.message_ids == ("a", "b", "c")
    assert chunk.text == "one\ntwo\nthree"


def test_oversize_message_is_split_and_keeps_its_id():
    long = Message("big", " ".join(f"word{i}" for i in range(300)))
    chunks = list(chunk_messages([Message("x", "short"), long, Message("y", "tail")], 50))
    parts = [m for c in chunks for m in c.messages if m.id == "big"]
    assert len(parts) > 1
    assert [m.meta["part"] for m in parts] == [[i, len(parts)] for i in range(len(parts))]
    assert "".join(m.text for m in parts) == long.text
    assert all(count_tokens(c.text) <= 50 for c in chunks)
    assert chunks[0].messages[0].id == "x" and chunks[-1].messages[-1].id == "y"


def test_chinese_text_is_counted_in_tokens():
    messages = [Message(str(i), "我的朋友住在北京。" * 3) for i in range(10)]
    chunks = list(chunk_messages(messages, 64))
    assert all(count_tokens(c.text) <= 64 for c in chunks)
    assert sum(len(c.messages) for c in chunks) == 10


def test_no_messages_no_chunks():
    assert list(chunk_messages([], 10)) == []
