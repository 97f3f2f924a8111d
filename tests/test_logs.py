"""memplug.log: what a run's log keeps, and what it leaves out."""

from __future__ import annotations

import logging
from pathlib import Path

from memplug.logs import LOG_NAME, logs_to


def test_the_run_log_leaves_out_a_line_per_http_request(tmp_path: Path) -> None:
    """httpx's INFO line per request (5,120 of them for a 5,120-question run) stays out;
    its warnings, and every other library's INFO lines, stay in; its level is put back."""
    httpx = logging.getLogger("httpx")
    before = httpx.level
    with logs_to(tmp_path):
        httpx.info('HTTP Request: POST http://127.0.0.1/v1/chat/completions "HTTP/1.1 200 OK"')
        httpx.warning("a connection was dropped")
        logging.getLogger("mem0").info("stored a memory")
    text = (tmp_path / LOG_NAME).read_text()
    assert "HTTP Request" not in text
    assert "httpx: a connection was dropped" in text and "mem0: stored a memory" in text
    assert httpx.level == before


def test_a_runs_log_ends_with_how_it_ended(tmp_path: Path) -> None:
    import memplug

    run = memplug.evaluate("bm25", "memsim", options={"n": 3}, output=tmp_path, progress=False)
    lines = (run.path / LOG_NAME).read_text().splitlines()
    assert " started: 3 of 3 questions to ask" in lines[0]
    assert lines[-1].endswith(" s") and " finished: 3 of 3 questions answered in " in lines[-1]
