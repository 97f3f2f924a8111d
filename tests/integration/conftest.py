"""Fixtures for the external memory systems (mem0, cognee, llamaindex, letta)."""

from __future__ import annotations

import pytest

from external_run import system_reply


@pytest.fixture
def llm_stub(tmp_path, monkeypatch):
    """The OpenAI stub answering with `system_reply`; keys and caches confined to the test."""
    from openai_stub import OpenAIStub

    monkeypatch.setenv("MEMPLUG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIStub(reply=system_reply, embed_dim=64) as stub:
        yield stub
