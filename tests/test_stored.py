"""What a system stored (issue 18.4): an agent's optional ``stored()``, the run's stored.jsonl,
and the HTML report's "what the agent stored" beside each wrong answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memplug import stored
from memplug.hookspecs import hookimpl
from memplug.models import AgentQuestion, Chunk, Recall, Recalled, StoredItem
from memplug.protocols import AgentConfig, ListsStored
from memplug.results import RunDir
from memplug.runner import Evaluation, RunSpec

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_RUNS = ROOT / "tests" / "fixtures" / "runs"
BM25_RUN = "20250604-101630-bm25-memsim"


def _run(tmp_path: Path, agent: str, **kw: Any) -> RunDir:
    spec = RunSpec(
        agent=agent,
        dataset="counting",
        top_k=2,
        dataset_options={"samples": "3", "questions": "2", "messages": "4"},
        **kw,
    )
    return RunDir(Evaluation(spec).run(output=tmp_path / "runs"))


@pytest.mark.parametrize("agent", ["bm25", "full", "recent", "embedding", "decay", "emg"])
def test_native_agents_list_what_they_hold(testkit: ModuleType, tmp_path: Path, agent: str) -> None:
    rd = _run(tmp_path, agent)
    lines = [json.loads(x) for x in (rd.path / "stored.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(line["sample_id"] for line in lines) == ["s0", "s1", "s2"]  # one line per sample
    for line in lines:
        s = line["sample_id"].removeprefix("s")
        held = 2 if agent == "recent" else 4  # recent keeps the last top_k messages
        assert line["total"] == held and len(line["items"]) == held
        assert [i["message_ids"] for i in line["items"]] == [[f"m{n}"] for n in range(4 - held, 4)]
        assert all(i["text"].startswith(f"Item {s}-") for i in line["items"])
    assert not rd.records()[0].error


class _Lister:
    """Holds every message; ``stored()`` does what the test class says."""

    blocking = False

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.messages: list[Recalled] = []

    def ingest(self, chunk: Chunk) -> None:
        self.messages += [Recalled(m.text, None, (m.id,)) for m in chunk.messages]

    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(tuple(self.messages[:2]))

    def close(self) -> None:
        pass


class _Many(_Lister):
    def stored(self) -> Any:  # a generator and plain strings are accepted too
        return (f"memory {n} " + "x" * (n * 10) for n in range(stored.MAX_ITEMS + 50))


class _Raises(_Lister):
    def stored(self) -> list[StoredItem]:
        raise RuntimeError("the store's listing API is down")


class _Garbage(_Lister):
    def stored(self) -> Any:
        return 42


class _AsyncLister(_Lister):
    blocking = True

    def stored(self) -> list[StoredItem]:  # never called: the async variant is preferred
        raise AssertionError("sync stored() called")

    async def astored(self) -> list[StoredItem]:
        return [StoredItem(m.text, f"id-{i}", m.message_ids, {"kind": "passage"}) for i, m in enumerate(self.messages)]


@pytest.fixture
def listers(testkit, plugins):
    class Plugin:
        @hookimpl
        def register_agents(self, register):
            for name, cls in (
                ("many", _Many),
                ("raises", _Raises),
                ("garbage", _Garbage),
                ("async-lister", _AsyncLister),
                ("plain", _Lister),
            ):
                register(name, cls)

    plugin = Plugin()
    plugins.register(plugin, name="stored-test")
    yield
    plugins.unregister(plugin)


def test_the_first_items_are_kept_and_all_counted(listers: None, tmp_path: Path) -> None:
    rd = _run(tmp_path, "many")
    line = stored.read(rd.path)["s0"]
    assert line["total"] == stored.MAX_ITEMS + 50 and len(line["items"]) == stored.MAX_ITEMS
    assert line["items"][0] == {"text": "memory 0 ", "id": None, "message_ids": []}
    long = line["items"][stored.MAX_ITEMS - 1]  # 1,990 x's: clipped to MAX_CHARS
    assert len(long["text"]) == stored.MAX_CHARS and long["text"].endswith("…") and long["clipped"]


def test_the_async_variant_is_used(listers: None, tmp_path: Path) -> None:
    rd = _run(tmp_path, "async-lister")
    items = stored.read(rd.path)["s1"]["items"]
    assert [i["id"] for i in items] == ["id-0", "id-1", "id-2", "id-3"]
    assert items[0]["message_ids"] == ["m0"] and items[0]["meta"] == {"kind": "passage"}


@pytest.mark.parametrize("agent", ["raises", "garbage"])
def test_a_failing_listing_never_fails_the_run(
    listers: None, tmp_path: Path, agent: str, caplog: pytest.LogCaptureFixture
) -> None:
    rd = _run(tmp_path, agent)
    assert rd.info().status == "finished"
    assert not any(r.error for r in rd.records()) and len(rd.records()) == 6
    assert stored.read(rd.path) == {}  # nothing recorded
    assert "nothing recorded" in caplog.text or "not recorded" in caplog.text


def test_agents_without_the_method_write_no_file(listers: None, tmp_path: Path) -> None:
    rd = _run(tmp_path, "plain")
    assert not (rd.path / "stored.jsonl").exists()
    assert not isinstance(_Lister(AgentConfig(), tmp_path), ListsStored)
    assert isinstance(_Many(AgentConfig(), tmp_path), ListsStored)


def test_read_keeps_a_resumed_samples_last_line_and_skips_a_torn_one(tmp_path: Path) -> None:
    stored.append(tmp_path, stored.entry("a", ["old"]))
    stored.append(tmp_path, stored.entry("b", [StoredItem("b1", "1", ["m1"])]))
    stored.append(tmp_path, stored.entry("a", ["new", "newer"]))
    with (tmp_path / stored.STORED_FILE).open("a", encoding="utf-8") as fh:
        fh.write('{"sample_id": "c", "tot')  # killed mid-write
    lines = stored.read(tmp_path)
    assert lines["a"]["total"] == 2 and [i["text"] for i in lines["a"]["items"]] == ["new", "newer"]
    assert lines["b"]["items"] == [{"text": "b1", "id": "1", "message_ids": ["m1"]}]
    assert "c" not in lines


def test_the_runs_stored_file_appends_a_line_a_sample_and_drops_what_comes_after_close(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The driver's stored.jsonl stays open for the run: created at the first line (none
    without one), appended to (a resumed run keeps the lines there), closed at the end; a
    line after close (a thread a Ctrl-C left behind) is dropped, a failure only logged."""
    lines = stored.StoredFile(tmp_path)
    lines.close()
    assert not (tmp_path / stored.STORED_FILE).exists()
    stored.append(tmp_path, stored.entry("a", ["before the resume"]))
    lines = stored.StoredFile(tmp_path)
    lines.write(stored.entry("b", [StoredItem("b1", "1", ["m1"])]))
    lines.write(stored.entry("a", ["é, after"]))
    lines.close()
    lines.write(stored.entry("c", ["late"]))
    text = (tmp_path / stored.STORED_FILE).read_text(encoding="utf-8")
    assert json.loads(text.splitlines()[1]) == stored.entry("b", [StoredItem("b1", "1", ["m1"])])
    read = stored.read(tmp_path)
    assert sorted(read) == ["a", "b"] and read["a"]["items"][0]["text"] == "é, after"
    gone = stored.StoredFile(tmp_path / "missing")
    gone.write(stored.entry("d", ["x"]))  # no such folder: logged, not raised
    gone.close()
    assert "sample d: what the agent stored is not recorded" in caplog.text


# -- in the HTML report -------------------------------------------------------------
def _with_stored(tmp_path: Path) -> Path:
    """The bm25 fixture run with a stored.jsonl: per sample, its messages as the records
    recalled them, plus (for the first sample) 300 more than the file keeps."""
    run = Path(shutil.copytree(FIXTURE_RUNS / BM25_RUN, tmp_path / BM25_RUN))
    by_sample: dict[str, dict[str, str]] = {}
    for line in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        for item in rec.get("recalled") or []:
            for mid in item.get("message_ids") or []:
                by_sample.setdefault(rec["sample_id"], {})[mid] = item["text"]
    for n, (sample, messages) in enumerate(by_sample.items()):
        items = [StoredItem(text, f"mem-{mid}", (mid,)) for mid, text in sorted(messages.items())]
        if n == 0:
            items += [StoredItem(f"filler {k}") for k in range(300)]
        stored.append(run, stored.entry(sample, items))
    return run


def test_html_shows_what_the_agent_stored_beside_each_wrong_answer(tmp_path: Path) -> None:
    from memplug.htmlreport import write_html

    run = _with_stored(tmp_path)
    page = write_html([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count('class="muted">what the agent stored (') == 8  # every wrong answer of bm25 has its list
    wrong_samples = {
        json.loads(x)["sample_id"]
        for x in (run / "samples.jsonl").read_text().splitlines()
        if (json.loads(x)["scores"] or {}).get("accuracy", 1) < 1 or json.loads(x)["error"]
    }
    assert page.count('<template id="stored-0-') == len(wrong_samples)  # each sample's list once
    first = stored.read(run)[next(iter(stored.read(run)))]
    assert first["total"] > 300 and len(first["items"]) == stored.MAX_ITEMS
    assert "… and " in page and "stored.jsonl" in page  # the rest of the first sample's list
    # whether the evidence was kept at all: the fixture's targets are among the stored messages
    assert "hold a target message" in page or "holds a target message" in page


def test_html_without_stored_jsonl_has_no_stored_entries() -> None:
    from memplug.htmlreport import render_html

    page = render_html([FIXTURE_RUNS / BM25_RUN])
    assert "<template id=" not in page and "data-stored=" not in page


#: Opens every "what the agent stored" of the page and reports, per opened entry, the items
#: copied into it and how many are shaded as holding a target message.
OPEN_STORED = """new Promise(function (done) {
  var all = document.querySelectorAll("details[data-stored]");
  for (var i = 0; i < all.length; i++) all[i].open = true;
  setTimeout(function () {
    done(JSON.stringify(Array.prototype.map.call(all, function (d) {
      return {items: d.querySelectorAll("li").length, targets: d.querySelectorAll("li.target").length,
              filled: d.getAttribute("data-filled")};
    })));
  }, 200);
})"""


def test_chromium_fills_the_stored_list_when_opened(tmp_path: Path) -> None:
    from test_report_html import _chromium, _devtools

    from memplug.htmlreport import write_html

    chromium = _chromium()
    run = _with_stored(tmp_path)
    page = write_html([run], tmp_path / "report.html")
    value, console = _devtools(chromium, page, tmp_path, 1280, 1000, OPEN_STORED)
    assert console == []
    opened = json.loads(value)
    assert len(opened) == 8 and all(o["items"] > 0 for o in opened)
    assert max(o["items"] for o in opened) == 50  # the page shows the first 50 of a long list
    # shaded where the summary counted: the targets are among the stored messages
    html = page.read_text(encoding="utf-8")
    assert sum(o["targets"] for o in opened) > 0
    assert all(o["filled"] == str(o["targets"]) for o in opened)
    assert "hold a target message" in html or "holds a target message" in html


def test_a_ray_worker_returns_what_the_agent_stored_and_diagnoses_against_it(tmp_path):
    """The worker runs the runner's own run_sample, unpatched: the stored line comes back in
    its SampleResult, and each miss is placed against it as in a local run (a patched listing
    once returned nothing to diagnose with: every `stored` was unknown on Ray)."""
    import asyncio

    import attrs

    from memplug.executors import _SampleWorker

    spec = RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "2"})
    local = RunDir(Evaluation(spec).run(output=tmp_path / "local"))
    driver = Evaluation(spec)
    sample = driver.samples()[0]
    worker = _SampleWorker("worker-0")
    try:
        result = asyncio.run(worker.run_sample(attrs.asdict(spec), driver.resolved, str(tmp_path / "work"), sample))
    finally:
        worker.close()
    assert result.stored is not None and result.stored == stored.read(local.path)[sample.id]
    here = {r.key: r for r in local.records()}
    assert result.records and all(r.diagnosis is not None and r.diagnosis.stored is not None for r in result.records)
    assert [r.diagnosis for r in result.records] == [here[r.key].diagnosis for r in result.records]


def test_a_line_holds_what_json_would_write_of_an_agents_own_values() -> None:
    """Compact UTF-8 JSON (orjson, as samples.jsonl); an item's meta with values JSON has no
    type for is written as their text, keys that are not strings as strings, numpy numbers
    as numbers, and an int orjson cannot take through json; a listing that holds itself
    fails (and is then not recorded)."""
    import numpy as np

    meta: dict[Any, Any] = {1: np.float64(0.5), "tags": {"a"}, "big": 2**70, "day": "é"}
    line = stored.entry("s", [StoredItem("ünï", "1", ("m1",), meta)])
    data = stored._encoded(line)
    assert data.endswith(b"\n") and b"\\u" not in data
    written = json.loads(data)
    assert written["items"][0]["meta"] == {"1": 0.5, "tags": "{'a'}", "big": 2**70, "day": "é"}
    assert written["items"][0]["text"] == "ünï"
    looped: dict[str, object] = {"sample_id": "x"}
    looped["items"] = [looped]
    with pytest.raises(RecursionError):
        stored._encoded(looped)


def test_a_run_whose_agent_stored_nothing_anywhere_says_so(tmp_path: Path) -> None:
    """mem0 whose fact extraction kept nothing: every sample's listing empty, the scores
    resting on an empty memory; one line says it. A run without stored.jsonl (an agent
    that does not list), or with one sample holding something, says nothing."""
    from memplug.cli.report import empty_store_line

    assert empty_store_line(tmp_path) is None
    stored.append(tmp_path, stored.entry("s0", []))
    stored.append(tmp_path, stored.entry("s1", []))
    line = empty_store_line(tmp_path)
    assert line is not None and line.startswith("the agent stored nothing in any of its 2 samples")
    stored.append(tmp_path, stored.entry("s1", ["a fact"]))  # a resumed sample: its last line counts
    assert empty_store_line(tmp_path) is None
