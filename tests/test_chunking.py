"""The chunker packs whole messages up to the token budget and splits oversize ones."""

from __future__ import annotations

import attrs
import pytest

from memplug import chunking
from memplug.cache import ResponseCache
from memplug.chunking import TokenCounts, chunk_messages
from memplug.models import Message, Sample
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


def test_known_counts_chunk_exactly_as_counting_does():
    messages = [Message(str(i), f"message {i} " + "word " * (i % 7)) for i in range(30)]
    counts = [count_tokens(m.text) for m in messages]
    for size in (5, 12, 40):
        assert list(chunk_messages(messages, size, counts)) == list(chunk_messages(messages, size))


def sample(n: int) -> Sample:
    return Sample(f"s{n}", tuple(Message(str(i), f"sample {n} message {i} " + "é" * i) for i in range(4)), ())


def test_token_counts_are_remembered_across_runs(tmp_path, monkeypatch):
    samples = [sample(n) for n in range(3)]
    first = TokenCounts(ResponseCache(tmp_path / "tokens.sqlite3"))
    expected = [first.of(s) for s in samples]
    assert expected[0] == [count_tokens(m.text) for m in samples[0].messages]
    first.save()

    def no_counting(text: str) -> int:
        raise AssertionError("counted again")

    monkeypatch.setattr(chunking, "count_tokens", no_counting)
    second = TokenCounts(ResponseCache(tmp_path / "tokens.sqlite3"))
    second.prefetch(samples)
    assert [second.of(s) for s in samples] == expected
    changed = attrs.evolve(samples[0], messages=(Message("0", "other text"),))
    with pytest.raises(AssertionError, match="counted again"):
        second.of(changed)  # other texts, other key: never a stale count


def test_without_a_cache_every_count_is_computed(tmp_path):
    counts = TokenCounts(None)
    counts.prefetch([sample(0)])
    assert counts.of(sample(0)) == [count_tokens(m.text) for m in sample(0).messages]
    counts.save()
    assert not list(tmp_path.iterdir())
