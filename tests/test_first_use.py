"""Defects a new user's first hour found: each one as the user met it, held here.

An --api-base that is a web page, the README's `--llm ollama/qwen2.5`, `memplug report
runs`, a blank line before one-line errors, a JSON error cut short, and lines wider
than an 80-column terminal.
"""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from typing import Iterator

import pytest

from inprocess import memplug_main
from memplug import preflight
from memplug.errors import DataError, MemplugError
from memplug.files import read_json
from memplug.llm import LLM


class _Page(http.server.BaseHTTPRequestHandler):
    """Answers every GET with ``status``, ``body`` and ``kind`` (set on the server)."""

    def do_GET(self) -> None:
        status, kind, body = self.server.answer  # type: ignore[attr-defined]
        self.send_response(status)
        if kind:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def page() -> Iterator[http.server.ThreadingHTTPServer]:
    """A loopback web server: set ``.answer = (status, content type, body)``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    server.answer = (200, "text/html", b"<html>hello</html>")  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server: http.server.ThreadingHTTPServer, path: str = "") -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def test_an_api_base_that_answers_a_web_page_is_refused_at_start_up(page, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    api_base = _url(page, "/v1")
    with pytest.raises(MemplugError) as refused:
        preflight.check_llm(LLM("openai/x", api_base=api_base, api_key="x", use_cache=False))
    assert str(refused.value) == (
        f"--llm: {api_base} answers but not as an OpenAI API: GET /v1/models gave text/html; "
        "check the URL (it usually ends in /v1)"
    )
    # what an API answers passes: JSON by its type, a JSON object without one, any 404
    for answer in (
        (200, "application/json; charset=utf-8", b'{"data": []}'),
        (200, None, b'{"object": "list", "data": []}'),
        (404, "text/html", b"<html>not found</html>"),
    ):
        page.answer = answer
        preflight.probe(api_base)
    page.answer = (200, None, b"<html>hello</html>")
    with pytest.raises(MemplugError, match="GET /v1/models gave no content type"):
        preflight.probe(api_base)


def test_ollama_needs_no_key_and_its_server_is_checked(page, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("OLLAMA_API_BASE", _url(page))
    page.answer = (404, "text/plain", b"404 page not found")  # Ollama has no /models: someone is there
    preflight.check_llm(LLM("ollama/qwen2.5", use_cache=False))
    page.server_close()  # nobody at the address now
    with pytest.raises(MemplugError) as refused:
        preflight.check_llm(LLM("ollama/qwen2.5", use_cache=False), "--judge")
    line = str(refused.value)
    assert line.startswith(f"--judge ollama/qwen2.5: no ollama server answers at {_url(page)} (")
    assert line.endswith("): start it, or give --api-base URL")


def test_ollama_without_its_variable_is_asked_at_litellms_default_address(monkeypatch):
    # the README's `--llm ollama/qwen2.5` was refused: "ollama needs OLLAMA_API_BASE"
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    asked: list[str] = []
    monkeypatch.setattr(preflight, "probe", lambda api_base, *args, **kwargs: asked.append(api_base))
    preflight.check_llm(LLM("ollama/qwen2.5", use_cache=False))
    assert asked == ["http://localhost:11434"]


def _runs(env: dict[str, str], cwd: Path, n: int) -> list[str]:
    made = []
    for k in range(n):
        done = memplug_main(
            ["eval", "--agent", "lookup", "--dataset", "counting", "-o", f"wrong=q{k}", "--quiet"], env=env, cwd=cwd
        )
        assert done.returncode == 0, done.stderr
        made.append(Path(done.stdout.strip()).name)
    return made


def test_report_of_the_default_output_folder_reports_every_run_in_it(testkit_env, tmp_path):
    first, second = _runs(testkit_env, tmp_path, 2)
    done = memplug_main(["report", "runs", "--json"], env=testkit_env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    reported = json.loads(done.stdout)
    assert [Path(r["path"]).name for r in reported["runs"]] == sorted([first, second])
    assert len(reported["paired"]) == 1  # as `memplug report runs/*` pairs them
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = memplug_main(["report", "empty"], env=testkit_env, cwd=tmp_path)
    assert refused.returncode == 2 and "not a memplug run directory" in refused.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--fail-under", "nosuch=0.5"],
        ["--output", "a-file"],
    ],
)
def test_a_one_line_error_has_no_blank_line_before_it(testkit_env, tmp_path, args):
    (tmp_path / "a-file").write_text("")
    done = memplug_main(["eval", "--agent", "lookup", "--dataset", "counting", *args], env=testkit_env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("memplug: error: ") and done.stderr.count("\n") == 1, repr(done.stderr)


def test_invalid_json_says_where_and_what_whole(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"a": 1,\n "b": "cut')
    with pytest.raises(DataError) as refused:
        read_json(path)
    assert str(refused.value) == f"{path}: invalid JSON at line 2 column 7: Unterminated string"


def test_reproduce_prints_its_verdict_within_80_columns(testkit_env, tmp_path):
    (run,) = _runs(testkit_env, tmp_path, 1)
    done = memplug_main(["reproduce", f"runs/{run}", "--output", "again"], env=testkit_env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-2:]
    assert last[0] == f"all metric means match: runs/{run}"
    assert last[1].startswith("reproduced as again/") and all(len(line) <= 80 for line in last)
