"""The LLM layer against the loopback stub: cache, retries, limits, accounting, secrets."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memplug.errors import MemplugError
from memplug.llm import LLM, Completion, LLMError, default_model, usage_scope
from memplug.llm.transport import env_proxy
from openai_stub import OpenAIStub, hashed_embedding

SECRET = "sk-SECRET-0123456789abcdef"


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def make_llm(openai_stub: OpenAIStub, tmp_path: Path) -> Iterator[Callable[..., LLM]]:
    """LLMs on the stub with a private cache and short backoff; closed after the test."""
    made: list[LLM] = []

    def make(**kwargs: Any) -> LLM:
        kwargs = {
            "api_base": openai_stub.base_url,
            "api_key": "sk-test",
            "cache_path": tmp_path / "llm.sqlite3",
            "retry_base": 0.01,
            **kwargs,
        }
        llm = LLM(kwargs.pop("model", "openai/stub"), **kwargs)
        made.append(llm)
        return llm

    yield make
    for llm in made:
        llm.close()


# --- cache ---------------------------------------------------------------------------


def test_second_identical_call_is_a_cache_hit(openai_stub, make_llm):
    llm = make_llm()
    first = llm.complete(user("first line\nthe question"))
    second = llm.complete(user("first line\nthe question"))
    assert first == Completion("the question", 4, 2, 0.0, cached=False)
    assert second.cached and second.text == "the question"
    assert len(openai_stub.chat_requests) == 1
    assert llm.usage.as_dict() == {
        "calls": 1,
        "cache_hits": 1,
        "prompt_tokens": 4,
        "completion_tokens": 2,
        "cost_usd": 0.0,
    }


def test_cache_survives_a_new_llm_object(openai_stub, make_llm):
    make_llm().complete(user("persist me"))
    again = make_llm().complete(user("persist me"))
    assert again.cached and len(openai_stub.chat_requests) == 1


def test_cache_key_covers_output_parameters(openai_stub, make_llm):
    llm = make_llm()
    llm.complete(user("q"), max_tokens=5)
    llm.complete(user("q"), max_tokens=6)
    llm.complete(user("q"), max_tokens=5, stop=["\n"])
    assert len(openai_stub.chat_requests) == 3
    assert llm.complete(user("q"), stop=["\n"], max_tokens=5).cached
    make_llm(model="openai/other").complete(user("q"), max_tokens=5)  # another model: a miss
    assert len(openai_stub.chat_requests) == 4


def test_no_cache_above_temperature_zero(openai_stub, make_llm):
    llm = make_llm()
    for _ in range(2):
        assert not llm.complete(user("q"), temperature=0.7).cached
    hot = make_llm(temperature=1.0)
    for _ in range(2):
        assert not hot.complete(user("q")).cached
    assert len(openai_stub.chat_requests) == 4
    assert openai_stub.chat_requests[-1]["temperature"] == 1.0
    assert llm.usage.cache_hits == hot.usage.cache_hits == 0


def test_no_cache_flag_neither_reads_nor_writes(
    openai_stub: OpenAIStub, make_llm: Callable[..., LLM], tmp_path: Path
) -> None:
    llm = make_llm(use_cache=False, cache_path=tmp_path / "never.sqlite3")
    llm.complete(user("q"))
    assert not llm.complete(user("q")).cached
    assert len(openai_stub.chat_requests) == 2
    assert not (tmp_path / "never.sqlite3").exists()


def test_openai_compatible_prefixes_take_the_direct_path(openai_stub, make_llm):
    assert make_llm(model="hosted_vllm/qwen").direct and make_llm().direct
    assert not make_llm(model="ollama/qwen").direct and not make_llm(transport="litellm").direct
    assert not LLM("openai/gpt-4o-mini", use_cache=False).direct  # no api_base: api.openai.com via litellm
    make_llm(model="hosted_vllm/qwen").complete(user("q"))
    assert openai_stub.chat_requests[-1]["model"] == "qwen"


def test_params_and_seed_reach_the_server(openai_stub, make_llm):
    llm = make_llm(seed=7)
    reply = llm.complete(user("say it"), response_format={"type": "json_object"}, max_tokens=9)
    assert json.loads(reply.text) == {"text": "say it"}
    body = openai_stub.chat_requests[-1]
    assert body["model"] == "stub" and body["seed"] == 7 and body["max_tokens"] == 9 and body["temperature"] == 0.0
    with pytest.raises(TypeError, match="api_key"):
        llm.complete(user("q"), api_key="x")


def test_parameters_the_sdk_does_not_name_reach_the_server(openai_stub, make_llm):
    make_llm().complete(user("q"), top_k=5, repetition_penalty=1.1, num_retries=3)  # vLLM's own, and litellm's
    body = openai_stub.chat_requests[-1]
    assert body["top_k"] == 5 and body["repetition_penalty"] == 1.1 and "num_retries" not in body


def test_a_query_string_in_the_endpoint_stays_after_the_route(openai_stub, make_llm):
    # the stub answers 404 to any path that does not end in the route once the query is cut
    llm = make_llm(api_base=f"{openai_stub.base_url}?api-version=2024-06-01")
    assert llm.complete(user("q")).text == "q" and llm.embed(["q"]) == [hashed_embedding("q", 64)]


def test_without_a_key_no_authorization_is_sent(openai_stub, make_llm, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = make_llm(api_key=None)
    llm.complete(user("q"))
    llm.embed(["q"])
    assert [auth for _, _, auth in openai_stub.log] == ["", ""]


# --- retries -------------------------------------------------------------------------


def test_retry_on_429_waits_retry_after(openai_stub, make_llm):
    openai_stub.retry_after = 0.4
    openai_stub.fail_next(1, "429")
    start = time.monotonic()
    assert make_llm().complete(user("q")).text == "q"
    assert time.monotonic() - start >= 0.4
    assert len(openai_stub.chat_requests) == 2


@pytest.mark.parametrize("kind", ["500", "malformed"])
def test_retry_on_server_error_and_malformed_body(openai_stub, make_llm, kind):
    openai_stub.fail_next(2, kind)
    llm = make_llm()
    assert llm.complete(user("q")).text == "q"
    assert len(openai_stub.chat_requests) == 3
    assert llm.usage.calls == 1  # failed attempts are not calls


def test_hang_times_out_then_succeeds(openai_stub, make_llm):
    llm = make_llm(timeout=0.3)
    llm.complete(user("warm"))  # the SDK's import (a second on a busy machine) is not the timeout's
    openai_stub.fail_next(1, "hang")
    start = time.monotonic()
    assert llm.complete(user("q")).text == "q"
    assert 0.3 <= time.monotonic() - start < openai_stub.hang_s  # the timeout, not the end of the hang, ended it
    assert len(openai_stub.chat_requests) == 3


def test_gives_up_after_max_retries(openai_stub, make_llm):
    openai_stub.fail_next(10, "500")
    with pytest.raises(LLMError, match="after 3 attempts: HTTP 500") as info:
        make_llm(max_retries=2).complete(user("q"))
    assert "\n" not in str(info.value) and isinstance(info.value, MemplugError)
    assert len(openai_stub.chat_requests) == 3


def test_no_retry_on_a_bad_request(openai_stub, make_llm):
    openai_stub.fail_next(1, "400")
    with pytest.raises(LLMError, match="HTTP 400"):
        make_llm().complete(user("q"))
    assert len(openai_stub.chat_requests) == 1


# --- accounting and limits -------------------------------------------------------------


def test_usage_scopes_are_isolated_between_tasks(openai_stub, make_llm):
    openai_stub.latency = 0.05
    llm = make_llm()

    async def task(n: int) -> dict[str, Any]:
        with usage_scope() as usage:
            await asyncio.gather(*[llm.acomplete(user(f"task {n} call {i}")) for i in range(n)])
            await llm.acomplete(user(f"task {n} call 0"))  # a cache hit
        return usage.as_dict()

    async def both() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        with usage_scope() as outer:
            one, three = await asyncio.gather(task(1), task(3))
            # the sync path in a worker thread counts in the scope it was started from
            await asyncio.to_thread(llm.complete, user("from a thread"))
        return one, three, outer.as_dict()

    one, three, outer = asyncio.run(both())
    assert one == {"calls": 1, "cache_hits": 1, "prompt_tokens": 4, "completion_tokens": 4, "cost_usd": 0.0}
    assert three == {"calls": 3, "cache_hits": 1, "prompt_tokens": 12, "completion_tokens": 12, "cost_usd": 0.0}
    assert outer == {"calls": 5, "cache_hits": 2, "prompt_tokens": 19, "completion_tokens": 19, "cost_usd": 0.0}
    assert llm.usage.as_dict() == outer


def test_cost_comes_from_litellm_price_map(openai_stub, make_llm):
    reply = make_llm(model="openai/gpt-4o-mini").complete(user("one two three"))
    assert reply.prompt_tokens == 3 and reply.completion_tokens == 3
    # gpt-4o-mini: $0.15 / $0.60 per million tokens in litellm's bundled map
    assert reply.cost_usd == pytest.approx(3 * 0.15e-6 + 3 * 0.60e-6)


def test_async_concurrency_limit(openai_stub: OpenAIStub, make_llm: Callable[..., LLM]) -> None:
    openai_stub.latency = 0.1
    llm = make_llm(concurrency=4)

    async def many() -> list[Completion]:
        return await asyncio.gather(*[llm.acomplete(user(f"q{i}")) for i in range(20)])

    replies = asyncio.run(many())
    assert [r.text for r in replies] == [f"q{i}" for i in range(20)]
    assert openai_stub.max_in_flight == 4


def test_cancelling_a_call_frees_its_slot(openai_stub: OpenAIStub, make_llm: Callable[..., LLM]) -> None:
    llm = make_llm(concurrency=1, timeout=10)
    openai_stub.fail_next(1, "hang")

    async def cancel_then_call() -> str:
        stuck = asyncio.ensure_future(llm.acomplete(user("stuck")))
        while not openai_stub.chat_requests:  # the hung request holds the slot (however slow the first call's start)
            await asyncio.sleep(0.01)
        stuck.cancel()
        # the hung request was cancelled in the I/O loop too, so the one slot is free; a slot
        # still held would wait for the hang's 10 s timeout
        return (await asyncio.wait_for(llm.acomplete(user("next")), 8)).text

    assert asyncio.run(cancel_then_call()) == "next"
    assert llm.usage.calls == 1


def test_sync_calls_from_threads_share_the_limit(openai_stub, make_llm):
    openai_stub.latency = 0.1
    llm = make_llm(concurrency=2)
    threads = [threading.Thread(target=llm.complete, args=(user(f"t{i}"),)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert openai_stub.max_in_flight == 2 and llm.usage.calls == 6


def test_one_connection_pool_across_calls_and_event_loops(openai_stub, make_llm):
    llm = make_llm(concurrency=3, use_cache=False)

    async def batch(tag: str) -> None:
        for _ in range(4):
            await asyncio.gather(*[llm.acomplete(user(f"{tag}{i}")) for i in range(3)])

    asyncio.run(batch("a"))
    asyncio.run(batch("b"))  # a second event loop reuses the same pool
    for i in range(3):
        llm.complete(user(f"sync {i}"))
    assert len(openai_stub.chat_requests) == 27
    assert openai_stub.connections <= 3


# --- a lent loop (LLM.hosted: the runner's samples loop) ------------------------------


def test_a_hosted_llm_awaits_its_calls_on_the_lent_loop(openai_stub, make_llm):
    """Inside ``hosted()`` no I/O thread is started: the pool is the lent loop's, and it is
    closed when the block ends; after it the I/O thread carries the calls again."""
    llm = make_llm(concurrency=3, use_cache=False)
    seen: dict[str, Any] = {}

    async def run() -> list[str]:
        async with llm.hosted():
            replies = await asyncio.gather(*[llm.acomplete(user(f"h{i}")) for i in range(6)])
            vectors = await llm.aembed(["one", "two"])
            seen["host"] = llm._host
            seen["pool"] = llm._host.transport if llm._host else None
        seen["after"] = llm._host
        assert len(vectors) == 2
        return [r.text for r in replies]

    assert asyncio.run(run()) == [f"h{i}" for i in range(6)]
    assert llm._io is None  # no thread was needed
    assert seen["pool"] is not None and seen["host"].transport is None and seen["after"] is None
    assert llm.complete(user("later")).text == "later" and llm._io is not None


def test_sync_callers_share_a_hosted_llms_limit(openai_stub, make_llm):
    """Agents' worker threads send their calls to the lent loop, under the same limit as the
    loop's own callers; nobody waits on a thread that is not there."""
    openai_stub.latency = 0.1
    llm = make_llm(concurrency=2, use_cache=False)

    async def run() -> list[str]:
        async with llm.hosted():
            loop = asyncio.get_running_loop()
            in_threads = [loop.run_in_executor(None, llm.complete, user(f"t{i}")) for i in range(4)]
            on_loop = [llm.acomplete(user(f"a{i}")) for i in range(4)]
            replies = await asyncio.gather(*in_threads, *on_loop)
        return sorted(r.text for r in replies)

    assert asyncio.run(run()) == sorted([f"t{i}" for i in range(4)] + [f"a{i}" for i in range(4)])
    assert openai_stub.max_in_flight == 2 and llm.usage.calls == 8
    assert llm._io is None


def test_a_blocking_call_on_the_lent_loops_thread_does_not_deadlock(
    openai_stub: OpenAIStub, make_llm: Callable[..., LLM]
) -> None:
    """An inline agent calling ``complete()`` blocks the lent loop; its call goes to the I/O
    thread instead of waiting on the loop it blocks."""
    llm = make_llm(use_cache=False)

    async def run() -> str:
        async with llm.hosted():
            return llm.complete(user("inline")).text

    assert asyncio.run(asyncio.wait_for(run(), 20)) == "inline"
    assert llm._io is not None


def test_a_second_hosted_block_keeps_the_first_loop(openai_stub, make_llm):
    llm = make_llm(use_cache=False)

    async def run() -> None:
        async with llm.hosted():
            first = llm._host
            async with llm.hosted():
                assert llm._host is first
                await llm.acomplete(user("nested"))
            assert llm._host is first and first is not None and first.transport is not None

    asyncio.run(run())


def test_a_runs_reader_calls_are_awaited_on_its_samples_loop(openai_stub, tmp_path, monkeypatch):
    """The runner lends its samples' loop to the run's LLMs: a run whose LLM calls all come
    from that loop (the reader's) starts no I/O thread; a sync agent calling ``complete()``
    from its worker thread would send its call to that loop too."""
    import memplug
    from memplug.llm import client

    def no_thread() -> client.IOLoop:
        raise AssertionError("an LLM I/O thread was started")

    monkeypatch.setattr(client.IOLoop, "start", staticmethod(no_thread))
    run = memplug.evaluate(
        "recent",
        "memsim",
        options={"n": 6},
        reader="llm",
        llm="openai/stub",
        api_base=openai_stub.base_url,
        concurrency=3,
        output=tmp_path,
        progress=False,
    )
    assert run.status == "finished" and run.summary.n_errors == 0
    assert len(openai_stub.chat_requests) == 6


def test_a_call_left_on_a_loop_given_back_makes_no_new_pool(openai_stub, make_llm):
    """A worker thread's call still on the lent loop when the block ends (an agent given up
    after --sample-timeout) fails instead of opening a pool nobody would close."""
    llm = make_llm(use_cache=False)

    async def run() -> None:
        async with llm.hosted():
            host = llm._host
            await llm.acomplete(user("first"))
        assert host is not None and host.released and host.transport is None
        with pytest.raises(RuntimeError, match="given back"):
            await llm._chat(host, {"messages": user("late")})
        assert host.transport is None

    asyncio.run(run())


def test_a_worker_threads_call_still_running_when_the_block_ends_is_cancelled(openai_stub, make_llm, caplog):
    """An agent's thread given up after --sample-timeout may still wait on a call when the
    run ends: the call is cancelled before the pool closes (its thread gets CancelledError
    at once), not failed as a timeout and retried on a closed pool."""
    import concurrent.futures

    openai_stub.latency = 3
    llm = make_llm(use_cache=False, timeout=20)
    outcome: dict[str, Any] = {}

    def call() -> None:
        start = time.monotonic()
        try:
            llm.complete(user("slow"))
        except BaseException as exc:
            outcome["error"] = exc
        outcome["took"] = time.monotonic() - start

    async def run() -> threading.Thread:
        async with llm.hosted():
            thread = threading.Thread(target=call)
            thread.start()
            while not openai_stub.chat_requests:
                await asyncio.sleep(0.01)
        return thread

    with caplog.at_level(logging.INFO, logger="memplug.llm"):
        asyncio.run(run()).join(10)
    assert "retrying" not in caplog.text
    assert isinstance(outcome["error"], concurrent.futures.CancelledError)
    assert outcome["took"] < 2
    assert len(openai_stub.chat_requests) == 1  # not retried


def test_cancelling_a_hosted_call_frees_its_slot(openai_stub: OpenAIStub, make_llm: Callable[..., LLM]) -> None:
    llm = make_llm(concurrency=1, timeout=10)
    openai_stub.fail_next(1, "hang")

    async def cancel_then_call() -> str:
        async with llm.hosted():
            stuck = asyncio.ensure_future(llm.acomplete(user("stuck")))
            while not openai_stub.chat_requests:
                await asyncio.sleep(0.01)
            stuck.cancel()
            return (await asyncio.wait_for(llm.acomplete(user("next")), 8)).text

    assert asyncio.run(cancel_then_call()) == "next"


# --- embeddings ----------------------------------------------------------------------


def test_embeddings_are_ordered_cached_and_counted(openai_stub, make_llm):
    llm = make_llm()
    texts = ["the cat sat", "a dog ran", "the cat sat"]
    vectors = llm.embed(texts)
    assert vectors == [hashed_embedding(t, 64) for t in texts]
    assert all(math.isclose(sum(x * x for x in v), 1.0) for v in vectors)
    assert asyncio.run(llm.aembed(["a dog ran", "new text"])) == [vectors[1], hashed_embedding("new text", 64)]
    inputs = [body["input"] for path, body, _ in openai_stub.log if path.endswith("/embeddings")]
    assert inputs == [texts, ["new text"]]  # "a dog ran" came from the cache
    assert llm.usage.calls == 2 and llm.usage.cache_hits == 1 and llm.usage.prompt_tokens == 11
    assert llm.embed([]) == []


# --- secrets -------------------------------------------------------------------------


def test_api_key_never_leaks(
    openai_stub: OpenAIStub, make_llm: Callable[..., LLM], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    llm = make_llm(api_key=SECRET, max_retries=1)
    assert SECRET not in repr(llm) and "***" in repr(llm)
    openai_stub.fail_next(1, "429")
    llm.complete(user("cached answer"))
    llm.embed(["cached vector"])
    openai_stub.fail_next(1, "401")  # the server quotes the key back, as OpenAI does
    with pytest.raises(LLMError) as info:
        llm.complete(user("other"))
    assert "Incorrect API key provided: ***" in str(info.value)
    assert SECRET not in str(info.value)
    assert caplog.records and all(SECRET not in r.getMessage() for r in caplog.records)
    assert openai_stub.log[0][2] == f"Bearer {SECRET}"  # it was sent, just never shown
    llm.close()
    files = list(tmp_path.glob("llm.sqlite3*"))
    assert files and all(SECRET.encode() not in f.read_bytes() for f in files)


def test_key_from_the_provider_variable_is_sent_and_scrubbed(openai_stub, make_llm, monkeypatch):
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", SECRET)
    llm = make_llm(model="hosted_vllm/qwen", api_key=None)
    llm.complete(user("q"))
    assert openai_stub.log[-1][2] == f"Bearer {SECRET}"
    openai_stub.fail_next(1, "401")
    with pytest.raises(LLMError) as info:
        llm.complete(user("other"))
    assert SECRET not in str(info.value) and "***" in str(info.value)


def test_proxy_comes_from_the_environment(monkeypatch):
    for var in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.upper(), raising=False)
    assert env_proxy("http://10.1.2.3:8000/v1/chat/completions") is None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    assert env_proxy("http://10.1.2.3:8000/v1/chat/completions") == "http://proxy:3128"
    assert env_proxy("https://api.example/v1/embeddings") is None
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    assert env_proxy("http://10.1.2.3:8000/v1/chat/completions") is None


def test_requests_go_through_the_proxy_of_the_environment(openai_stub, make_llm, monkeypatch):
    for var in ("no_proxy", "NO_PROXY", "http_proxy", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", openai_stub.base_url.rsplit("/v1", 1)[0])  # the stub forwards nothing: it answers
    llm = make_llm(api_base="http://memplug-nowhere.invalid:9/v1")  # a name that never resolves
    assert llm.complete(user("via the proxy")).text == "via the proxy"


def test_default_model_reads_env(monkeypatch):
    monkeypatch.setenv("MEMPLUG_LLM", "ollama/qwen2.5")
    assert default_model() == "ollama/qwen2.5"
    monkeypatch.delenv("MEMPLUG_LLM")
    assert default_model() is None


# --- the litellm transport (every model that is not openai/ with an api_base) --------


@pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier")  # pytest resets litellm's filter
def test_litellm_transport(openai_stub, make_llm):
    openai_stub.retry_after = 0.3
    llm = make_llm(transport="litellm", api_key=SECRET)
    openai_stub.fail_next(1, "429")
    openai_stub.fail_next(1, "500")
    openai_stub.fail_next(1, "malformed")
    start = time.monotonic()
    reply = llm.complete(user("via litellm"))
    assert time.monotonic() - start >= 0.3
    assert reply == Completion("via litellm", 2, 2, 0.0)
    assert len(openai_stub.chat_requests) == 4
    assert llm.complete(user("via litellm")).cached
    assert llm.embed(["x y"]) == [hashed_embedding("x y", 64)]
    openai_stub.fail_next(1, "401")
    with pytest.raises(LLMError, match="HTTP 401") as info:
        llm.complete(user("bad key"))
    assert SECRET not in str(info.value)
    assert len(openai_stub.chat_requests) == 5  # no retry on 401


def test_closing_an_llm_ends_what_runs_on_its_loop(openai_stub, make_llm):
    """litellm starts a logging worker on the loop of its first call; a loop stopped with it
    pending left it to the garbage collector, which printed "Exception ignored in:
    <coroutine object LoggingWorker._worker_loop>" whenever it came by."""
    llm = make_llm(transport="litellm", use_cache=False)
    llm.complete(user("via litellm"))
    io = llm._io
    assert io is not None
    llm.close()
    assert io.loop.is_closed()
    assert not [task for task in asyncio.all_tasks(io.loop) if not task.done()]


def test_stub_serves_models_and_rejects_unknown_faults(openai_stub):
    import urllib.request

    with urllib.request.urlopen(openai_stub.base_url + "/models") as response:
        assert json.loads(response.read())["data"][0]["id"] == "stub"
    with pytest.raises(ValueError):
        openai_stub.fail_next(1, "teapot")


# --- errors by kind (issue 14) -------------------------------------------------------


@pytest.mark.parametrize(
    "fault, message",
    [
        ("401", "HTTP 401"),
        ("403", "HTTP 403"),
        ("404", "does not exist"),
        ("400", "HTTP 400"),
    ],
)
def test_faults_no_question_can_escape_are_fatal_and_never_retried(openai_stub, make_llm, fault, message):
    from memplug.llm import FatalLLMError

    openai_stub.fail_next(1, fault)
    with pytest.raises(FatalLLMError, match=message):
        make_llm().complete(user("hi"))
    assert len(openai_stub.chat_requests) == 1


@pytest.mark.parametrize(
    "fault, message",
    [
        ("context", "maximum context length"),
        ("null", "empty reply"),
        ("filtered", "content filter"),
    ],
)
def test_faults_of_one_question_are_its_error_not_retried_not_cached(openai_stub, make_llm, fault, message):
    from memplug.llm import FatalLLMError

    llm = make_llm()
    openai_stub.fail_next(1, fault)
    with pytest.raises(LLMError, match=message) as info:
        llm.complete(user("hi"))
    assert not isinstance(info.value, FatalLLMError)
    assert len(openai_stub.chat_requests) == 1
    assert llm.complete(user("hi")).cached is False  # the failure was not cached: asked again


def test_a_call_ends_at_its_deadline_whatever_the_retries(openai_stub, make_llm):
    openai_stub.retry_after = 0.4
    openai_stub.fail_next(100, "429")
    with pytest.raises(LLMError, match="deadline of 1s passed"):
        make_llm(max_retries=20, deadline=1.0).complete(user("hi"))
    # 0.4 s apart, at most three attempts fit in the second (a slow machine makes fewer), not 21
    assert 1 <= len(openai_stub.chat_requests) <= 3


def test_waiting_is_told_to_listeners(openai_stub, make_llm):
    from memplug.llm import on_wait

    heard: list[str | None] = []
    remove = on_wait(heard.append)
    try:
        openai_stub.retry_after = 0.05
        openai_stub.fail_next(1, "429")
        make_llm().complete(user("hi"))
    finally:
        remove()
    assert heard[0] is not None and "HTTP 429" in heard[0] and "retrying in" in heard[0]
    assert heard[-1] is None


def test_a_timeout_that_is_not_finite_is_refused():
    with pytest.raises(MemplugError, match="finite and positive"):
        LLM("openai/stub", timeout=math.inf)


def test_a_password_in_the_endpoint_is_sent_as_basic_auth_and_never_shown(openai_stub, make_llm):
    host = openai_stub.base_url.split("//")[1]
    llm = make_llm(api_base=f"http://me:pa55word99@{host}", api_key=None)
    llm.complete(user("hi"))
    assert openai_stub.log[-1][2].startswith("Basic ")
    openai_stub.fail_next(1, "400")
    with pytest.raises(LLMError) as info:
        llm.complete(user("again"))
    assert "pa55word99" not in str(info.value) and "pa55word99" not in repr(llm)


def test_litellm_missing_key_is_fatal_not_retried():
    """litellm reports the openai client's missing key as an InternalServerError (HTTP 500),
    which every attempt would repeat: it stops at once instead of being retried 7 times."""
    import litellm

    from memplug.llm.retry import Fatal, Transient
    from memplug.llm.transport import classify_litellm

    missing = litellm.InternalServerError(
        "OpenAIException - Missing credentials. Please pass an `api_key`, or set the `OPENAI_API_KEY` "
        "environment variable.",
        llm_provider="openai",
        model="gpt-4o-mini",
    )
    assert isinstance(classify_litellm(missing), Fatal)
    busy = litellm.InternalServerError(
        "OpenAIException - The server had an error", llm_provider="openai", model="gpt-4o-mini"
    )
    assert isinstance(classify_litellm(busy), Transient)


def test_the_cookie_jar_reads_only_responses_that_set_cookies(
    openai_stub: OpenAIStub, make_llm: Callable[..., LLM]
) -> None:
    """httpx parsed every response for cookies (a seventh of the SDK's CPU a call); the jar
    memplug gives the SDK's client skips responses without Set-Cookie, and keeps the rest."""
    import httpx

    from memplug.llm.transport import OpenAITransport, cookie_jar_class

    llm = make_llm()
    llm.complete([{"role": "user", "content": "hello"}], temperature=0.7)  # makes the transport
    assert llm._io is not None and isinstance(llm._io.transport, OpenAITransport)
    jar = llm._io.transport.client._client.cookies  # the SDK's httpx client
    jar_class: type[httpx.Cookies] = cookie_jar_class()
    assert isinstance(jar, jar_class), "httpx no longer keeps the jar where memplug puts it"
    request = httpx.Request("POST", "https://api.example.com/v1/chat/completions")
    jar.extract_cookies(httpx.Response(200, headers={"content-type": "application/json"}, request=request))
    assert len(jar) == 0
    jar.extract_cookies(httpx.Response(200, headers={"set-cookie": "lb=node-3; Path=/"}, request=request))
    assert jar.get("lb") == "node-3"


def test_replies_kept_in_memory_are_written_at_close_and_at_exit(
    openai_stub: OpenAIStub, make_llm: Callable[..., LLM], tmp_path: Path
) -> None:
    """Fresh replies are written in batches (memplug.llm.caching.BATCH): none may be lost
    when the LLM is closed, or when the process exits without closing it."""
    import subprocess
    import sys

    from memplug.cache import ResponseCache

    llm = make_llm(cache_path=tmp_path / "closed.sqlite3")
    for text in ("one", "two", "three"):
        llm.complete(user(text))
    llm.close()
    assert len(ResponseCache(tmp_path / "closed.sqlite3")) == 3

    code = (
        "import sys; from memplug.llm import LLM; "
        "llm = LLM('openai/stub', api_base=sys.argv[1], api_key='sk-test', cache_path=sys.argv[2]); "
        "llm.complete([{'role': 'user', 'content': 'left open'}])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, openai_stub.base_url, str(tmp_path / "open.sqlite3")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert len(ResponseCache(tmp_path / "open.sqlite3")) == 1
