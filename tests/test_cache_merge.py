"""Merging LLM caches of several nodes (docs/scale.md): `python -m memplug.cache merge`."""

from __future__ import annotations

import subprocess
import sys

from memplug.cache import ResponseCache, merge


def test_merge_adds_missing_entries_and_keeps_the_target_s(tmp_path):
    a = ResponseCache(tmp_path / "a.sqlite3")
    a.put("k1", b"1")
    a.put("k2", b"2")
    a.close()
    b = ResponseCache(tmp_path / "b.sqlite3")
    b.put("k2", b"other")
    b.put("k3", b"3")
    b.close()
    assert merge(tmp_path / "a.sqlite3", [tmp_path / "b.sqlite3"]) == 1
    merged = ResponseCache(tmp_path / "a.sqlite3")
    assert (merged.get("k1"), merged.get("k2"), merged.get("k3"), len(merged)) == (b"1", b"2", b"3", 3)
    assert len(ResponseCache(tmp_path / "b.sqlite3")) == 2  # the sources are only read


def test_merge_command(tmp_path):
    for name, key in (("x", "k1"), ("y", "k2")):
        cache = ResponseCache(tmp_path / f"{name}.sqlite3")
        cache.put(key, b"v")
        cache.close()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplug.cache",
            "merge",
            str(tmp_path / "all.sqlite3"),
            str(tmp_path / "x.sqlite3"),
            str(tmp_path / "y.sqlite3"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"2 entries added to {tmp_path / 'all.sqlite3'}"
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplug.cache",
            "merge",
            str(tmp_path / "all.sqlite3"),
            str(tmp_path / "missing.sqlite3"),
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "no cache file" in bad.stderr


def test_merging_a_cache_into_itself_is_refused(tmp_path):
    """SQLite answered "database is locked"."""
    cache = ResponseCache(tmp_path / "x.sqlite3")
    cache.put("k", b"v")
    cache.close()
    path = str(tmp_path / "x.sqlite3")
    out = subprocess.run([sys.executable, "-m", "memplug.cache", "merge", path, path], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr == f"memplug: error: {path} is the cache merged into: nothing to add from it\n"
