"""The SQLite response cache: keys, round trips, crash safety and two processes at once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memplug.cache import ResponseCache, cache_key, default_cache_path


def test_cache_key_is_canonical():
    a = cache_key({"model": "m", "request": {"temperature": 0, "messages": [{"role": "user", "content": "hé"}]}})
    b = cache_key({"request": {"messages": [{"content": "hé", "role": "user"}], "temperature": 0}, "model": "m"})
    assert a == b and len(a) == 64
    assert cache_key({"model": "m", "request": {"temperature": 0, "max_tokens": 5}}) != cache_key(
        {"model": "m", "request": {"temperature": 0, "max_tokens": 6}}
    )


def test_round_trip_and_get_many(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "sub" / "c.sqlite3")
    assert cache.get("nope") is None
    cache.put("a", b"1")
    cache.put_many({"b": b"2", "c": b"\x00\xff"})
    cache.put("a", b"3")  # replace
    assert cache.get("a") == b"3"
    assert cache.get_many(["a", "c", "zz", "a"]) == {"a": b"3", "c": b"\x00\xff"}
    assert len(cache) == 3
    conn = sqlite3.connect(cache.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_default_location_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMPLUG_CACHE_DIR", str(tmp_path / "x"))
    assert default_cache_path() == tmp_path / "x" / "llm.sqlite3"
    monkeypatch.delenv("MEMPLUG_CACHE_DIR")
    assert default_cache_path() == Path.home() / ".cache" / "memplug" / "llm.sqlite3"


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


WRITER = """
    import sys
    from memplug.cache import ResponseCache
    cache = ResponseCache(sys.argv[1])
    i = 0
    while True:
        cache.put(f"k{i}", (f"value-{i}-" + "x" * 2000).encode())
        if i % 5 == 0:
            cache.put_many({f"k{i}-{j}": f"value-{i}-{j}".encode() for j in range(20)})
        i += 1
        if i == 100:
            print("ready", flush=True)
"""


def test_survives_sigkill_mid_write(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    proc = _python(WRITER, str(path))
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    time.sleep(0.2)  # let it write on, so the kill lands inside some transaction
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    cache = ResponseCache(path)
    assert len(cache) >= 100
    for i in range(100):
        value = cache.get(f"k{i}")
        assert value is not None and value.startswith(f"value-{i}-".encode())
    # a put_many batch is all or nothing, whatever moment the kill hit
    batches: dict[str, int] = {}
    for (key,) in conn.execute("SELECT key FROM responses WHERE key LIKE 'k%-%'"):
        batch = key.split("-")[0]
        batches[batch] = batches.get(batch, 0) + 1
    assert batches and set(batches.values()) == {20}
    cache.put("after", b"ok")  # and it takes writes again
    assert cache.get("after") == b"ok"


READER_WRITER = """
    import sys
    from memplug.cache import ResponseCache
    path, me, other = sys.argv[1], sys.argv[2], sys.argv[3]
    cache = ResponseCache(path)
    seen = 0
    for i in range(300):
        cache.put(f"{me}{i}", f"{me}-{i}".encode())
        value = cache.get(f"{other}{i // 2}")
        if value is not None:
            assert value == f"{other}-{i // 2}".encode(), value
            seen += 1
    print(seen)
"""


def test_two_processes_share_one_cache(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    ResponseCache(path)  # create the schema once, as a first run would
    procs = [_python(READER_WRITER, str(path), "a", "b"), _python(READER_WRITER, str(path), "b", "a")]
    outputs = [p.communicate(timeout=60) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
    assert sum(int(out) for out, _ in outputs) > 0  # each saw the other's writes while running
    cache = ResponseCache(path)
    assert len(cache) == 600
    assert cache.get("a299") == b"a-299" and cache.get("b0") == b"b-0"
