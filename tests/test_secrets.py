"""Secrets are masked where they stand, not wherever their text happens to appear (issue 26)."""

from __future__ import annotations

import pytest

from memplug.secrets import scrub


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model openai/x failed", "model openai/x failed"),  # was "openai/***"
        ("box of x", "box of x"),
        ("Authorization: Bearer x", "Authorization: Bearer ***"),
        ("request with api_key=x sent", "request with api_key=*** sent"),
        ('{"api_key": "x"}', '{"api_key": "***"}'),
        ("Incorrect API key provided: x. See", "Incorrect API key provided: ***. See"),
        ("http://user:x@host/v1", "http://user:***@host/v1"),
    ],
)
def test_a_short_key_is_masked_where_a_secret_stands(monkeypatch, text, expected):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    assert scrub(text) == expected


def test_a_long_key_is_masked_wherever_it_appears(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdef123456")
    assert scrub("echo sk-abcdef123456 and openai/sk-abcdef123456") == "echo *** and openai/***"
