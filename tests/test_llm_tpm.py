"""Tokens per minute per model (--llm-tpm, issue 19.4): a token bucket taken before each
attempt with an estimate and settled after it with the server's count.

The clock and the sleep are injected: a wait is a number the limiter asks to sleep, never
a measured time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from openai_stub import OpenAIStub

from memplug.errors import MemplugError
from memplug.llm import LLM, TokenBucket, TokenLimiter, set_token_limiter
from memplug.tokens import count_tokens


class FakeTime:
    """A clock that moves only when the limiter sleeps; every sleep is noted in ``events``."""

    def __init__(self, events: list[str] | None = None) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []
        self.events = events if events is not None else []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.events.append("sleep")
        self.now += seconds
        await asyncio.sleep(0)


def test_a_bucket_waits_for_what_was_taken_before_and_refills_with_time():
    time = FakeTime()
    bucket = TokenBucket(600, clock=time.clock)  # 10 tokens a second, 600 at most
    assert bucket.take(500) == 0.0  # within the minute's budget: at once
    assert bucket.take(500) == pytest.approx(40.0)  # 100 left: 400 more take 40 s
    assert bucket.take(100) == pytest.approx(50.0)  # in line behind the 400 owed
    time.now += 50.0
    assert bucket.available() == pytest.approx(0.0)
    bucket.give_back(30)  # an estimate above what was used
    assert bucket.take(30) == 0.0
    assert bucket.take(10_000) == pytest.approx(60.0)  # more than a minute's budget waits for a full one, not forever


def test_a_limiter_per_model_and_for_every_other_model():
    limiter = TokenLimiter({"openai/a": 60, "*": 120})
    assert limiter.applies("openai/a") and limiter.applies("anything")
    assert limiter.bucket("openai/a").capacity == 60 and limiter.bucket("x").capacity == 120
    assert limiter.bucket("x") is not limiter.bucket("y")  # "*": a budget for each model
    assert not TokenLimiter({"openai/a": 60}).applies("openai/b")


@pytest.fixture
def tpm() -> Iterator[Callable[[dict[str, int], FakeTime], TokenLimiter]]:
    """Install a limiter for the test, removed after it."""
    made: list[TokenLimiter] = []

    def install(budgets: dict[str, int], time: FakeTime) -> TokenLimiter:
        limiter = TokenLimiter(budgets, clock=time.clock, sleep=time.sleep)
        set_token_limiter(limiter)
        made.append(limiter)
        return limiter

    yield install
    set_token_limiter(None)


def test_calls_wait_when_the_budget_is_spent_and_settle_with_the_servers_count(
    openai_stub: OpenAIStub, tpm: Callable[[dict[str, int], FakeTime], TokenLimiter], tmp_path: Path
) -> None:
    events: list[str] = []

    def served(body: dict[str, Any]) -> str:
        events.append("served")
        return "ok"

    openai_stub.reply = served
    time = FakeTime(events)
    limiter = tpm({"openai/stub": 60}, time)  # one token a second
    llm = LLM("openai/stub", api_base=openai_stub.base_url, api_key="sk-test", cache_path=tmp_path / "c.sqlite3")
    try:
        first = llm.complete([{"role": "user", "content": "one two three"}])
        used1 = first.prompt_tokens + first.completion_tokens  # the stub's count: 3 + 1
        assert used1 == 4 and time.sleeps == []
        long = " ".join(["word"] * 80)
        second = llm.complete([{"role": "user", "content": long}])
        used2 = second.prompt_tokens + second.completion_tokens
    finally:
        llm.close()
    estimate2 = min(count_tokens(long), 60)  # a minute's budget at most
    # the second call was sent only after waiting for what the first used and its own estimate
    assert events == ["served", "sleep", "served"]
    assert time.sleeps == [pytest.approx(estimate2 - (60 - used1))]
    assert limiter.waited["openai/stub"] == pytest.approx(time.sleeps[0])
    # settled with the server's count: the bucket holds the estimate's excess over it
    assert used2 == 81 and limiter.bucket("openai/stub").available() == pytest.approx(estimate2 - used2)


def test_a_model_without_a_budget_never_waits(
    openai_stub: OpenAIStub, tpm: Callable[[dict[str, int], FakeTime], TokenLimiter], tmp_path: Path
) -> None:
    time = FakeTime()
    limiter = tpm({"openai/other": 1}, time)
    llm = LLM("openai/stub", api_base=openai_stub.base_url, api_key="sk-test", use_cache=False)
    try:
        for _ in range(3):
            llm.complete([{"role": "user", "content": "a b c"}])
        llm.embed(["x y z"])
    finally:
        llm.close()
    assert time.sleeps == [] and limiter.buckets == {}


def test_embeddings_take_from_the_budget_too(
    openai_stub: OpenAIStub, tpm: Callable[[dict[str, int], FakeTime], TokenLimiter], tmp_path: Path
) -> None:
    time = FakeTime()
    limiter = tpm({"openai/stub": 60}, time)
    llm = LLM("openai/stub", api_base=openai_stub.base_url, api_key="sk-test", use_cache=False)
    try:
        llm.embed(["a b c d e f g h i j"] * 6)  # 60 words: the stub's count
        llm.embed(["one more"])
    finally:
        llm.close()
    assert len(time.sleeps) == 1 and time.sleeps[0] == pytest.approx(count_tokens("one more"))
    # the estimate was the server's count: nothing to settle, and the wait refilled what was owed
    assert limiter.bucket("openai/stub").available() == pytest.approx(0.0)


def test_parse_llm_tpm():
    from memplug.executors import parse_llm_tpm

    assert parse_llm_tpm("200000") == {"*": 200000}
    assert parse_llm_tpm("openai/gpt-4o-mini=200000,*=30000") == {"openai/gpt-4o-mini": 200000, "*": 30000}
    assert parse_llm_tpm({"a": 100}) == {"a": 100} and parse_llm_tpm(None) == {}
    for bad in ("x=0", "lots", "openai/a=1.5"):
        with pytest.raises(MemplugError, match="--llm-tpm"):
            parse_llm_tpm(bad)


def test_eval_records_the_budget_and_refuses_a_bad_one_in_one_line(
    openai_stub: OpenAIStub, testkit: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from memplug.cli import cli
    from memplug.llm.limits import token_limiter
    from memplug.results import RunDir

    monkeypatch.setenv("MEMPLUG_CACHE_DIR", str(tmp_path / "cache"))
    base = [
        "eval",
        "--agent",
        "lookup",
        "--dataset",
        "counting",
        "-o",
        "answer=false",
        "--reader",
        "llm",
        "--llm",
        "openai/stub",
        "--api-base",
        openai_stub.base_url,
        "--quiet",
        "--output",
        str(tmp_path / "runs"),
    ]
    bad = CliRunner().invoke(cli, [*base, "--llm-tpm", "openai/stub=lots"])
    assert (
        bad.exit_code == 2
        and bad.output.strip()
        == "memplug: error: --llm-tpm: 'lots' is not a number of tokens a minute (e.g. 200000 or openai/gpt-4o=30000)"
    )
    assert not openai_stub.chat_requests  # refused before the first question
    ok = CliRunner().invoke(cli, [*base, "--llm-tpm", "openai/stub=100000"])
    assert ok.exit_code == 0, ok.output
    run = RunDir(Path(ok.output.strip().splitlines()[-1]))
    assert run.info().resolved["executor"] == {"name": "local", "workers": 1, "llm_tpm": {"openai/stub": 100000}}
    assert openai_stub.chat_requests and token_limiter("openai/stub") is None  # the budget ended with the run


@pytest.mark.parametrize(
    "given, error",
    [
        ("=5", "--llm-tpm: '=5' has no model before '='"),
        ("a=", "--llm-tpm: 'a=' has no number after '='"),
        ("a=1=2", "--llm-tpm: 'a=1=2' has more than one '='"),
        (" ", "--llm-tpm: empty"),
        ("", "--llm-tpm: empty"),
        ("a=1,", "--llm-tpm: an empty entry"),
        ("openai/x=5,openai/x=6", "--llm-tpm: openai/x is given twice"),
        ("16,*=32", "--llm-tpm: every model (N or *=N) is given twice"),
        ("a=-1", "--llm-tpm: '-1' is not a number"),
        ("a=1.5", "--llm-tpm: '1.5' is not a number"),
        ("a=0", "--llm-tpm: a=0: at least 1 token a minute"),
        (True, "--llm-tpm: true is not a number"),
        (2.0, "--llm-tpm: 2.0 is not a number"),
        ({"a": True}, "--llm-tpm: true is not a number"),
        ({"": 5}, "--llm-tpm: '=5' has no model"),
        ({}, "--llm-tpm: an empty table"),
    ],
)
def test_one_parser_refuses_each_bad_spec_in_one_line(given, error):
    from memplug.executors import parse_llm_limit, parse_llm_tpm

    with pytest.raises(MemplugError) as caught:
        parse_llm_tpm(given)
    assert str(caught.value).startswith(error) and "\n" not in str(caught.value)
    with pytest.raises(MemplugError, match="^--llm-limit: "):
        parse_llm_limit(given)
    with pytest.raises(MemplugError, match="^sweep.toml: llm_tpm: "):
        parse_llm_tpm(given, "sweep.toml: llm_tpm")


def test_the_documented_forms_parse():
    from memplug.executors import parse_llm_limit, parse_llm_tpm

    assert parse_llm_tpm(" openai/a = 10 , *=3") == {"openai/a": 10, "*": 3}
    assert parse_llm_limit("openai/gpt-4o-mini=8,*=32") == {"openai/gpt-4o-mini": 8, "*": 32}
    assert parse_llm_limit(16) == {"*": 16} and parse_llm_tpm({"openai/a": 5}) == {"openai/a": 5}


@pytest.mark.parametrize("option", ["--llm-tpm", "--llm-limit"])
@pytest.mark.parametrize("value", ["=5", " ", "a=1=2", "x=5,x=6"])
def test_eval_refuses_a_bad_spec_before_any_work(option, value, tmp_path):
    from click.testing import CliRunner

    from memplug.cli import cli

    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "memsim",
            "-o",
            "n=2",
            "--quiet",
            "--output",
            str(tmp_path / "runs"),
            option,
            value,
        ],
    )
    assert result.exit_code == 2 and result.output.startswith(f"memplug: error: {option}: ")
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()
