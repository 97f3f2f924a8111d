"""Fixtures for the external memory systems (mem0, cognee, llamaindex, letta)."""

from __future__ import annotations

import pytest

from external_run import system_reply


@pytest.fixture
def llm_stub(monkeypatch):
    """The OpenAI stub answering with `system_reply`, with a key of the test's own (the
    caches are confined to the test by ``private_cache_dir``)."""
    from openai_stub import OpenAIStub

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIStub(reply=system_reply, embed_dim=64) as stub:
        yield stub
