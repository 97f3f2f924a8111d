"""`memplug report --html`: the page's content, its escaping, and how it renders in Chromium.

The fixtures under tests/fixtures/runs/ are three hand-written runs of MemSim-style
questions (full, bm25 and recent agents; 4 trajectories x 6 categories), with wrong
answers and errors; their summaries were computed by memplug.results.summarize.

The Chromium tests are the recipe behind docs/img/report.png and docs/img/report-phone.png:
    MEMPLUG_UPDATE_SCREENSHOT=1 .venv/bin/pytest tests/test_report_html.py -k chromium
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from memplug.compare import comparisons
from memplug.errors import MemplugError
from memplug.htmlreport import differing_options, headline_metric, is_wrong, load_run, write_html
from memplug.record import QuestionRecord
from memplug.stats import repeat_summary

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_RUNS = ROOT / "tests" / "fixtures" / "runs"
RUN_IDS = ("20250604-101512-full-memsim", "20250604-101630-bm25-memsim", "20250604-101745-recent-memsim")
#: Wrong answers per run in the fixtures (accuracy 19/24, 16/24, 9/22 plus 2 errors).
WRONG = {"full": 5, "bm25": 8, "recent": 15}
#: The charts of the fixture page, in page order: paired differences (full against bm25 and
#: recent), two metrics (accuracy, recall@5) by category, efficiency, accuracy against cost.
CHARTS = ["paired-memsim", "accuracy", "recall@5", "efficiency", "cost-memsim"]
N_CHARTS = len(CHARTS)
SCREENSHOT = ROOT / "docs" / "img" / "report.png"
PHONE_SCREENSHOT = ROOT / "docs" / "img" / "report-phone.png"
#: A phone's width in CSS pixels (an iPhone 12 to 15) and a desktop window's.
PHONE, DESKTOP = 390, 1280


@pytest.fixture(scope="module")
def run_dirs() -> list[Path]:
    return [FIXTURE_RUNS / r for r in RUN_IDS]


@pytest.fixture(scope="module")
def page(run_dirs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The page for the three fixture runs, written once for the checks that only read it."""
    return write_html(run_dirs, tmp_path_factory.mktemp("page") / "report.html").read_text(encoding="utf-8")


class Page(HTMLParser):
    """Tags, attributes and text of a page, enough to check it without a browser."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.scripts: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        if self.tags and self.tags[-1][0] == "script" and data.strip():
            self.scripts.append(data)

    def all(self, tag: str, **match: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in match.items())]


def _given(attrs: dict[str, str | None], name: str) -> str:
    """The value of attribute ``name``, which must have one (a bare attribute's is None)."""
    value = attrs[name]
    assert value is not None, f"{name} has no value"
    return value


def _figures(page: str) -> list[str]:
    """The data-chart names of the page's chart figures."""
    return [_given(a, "data-chart") for a in Page(page).all("figure") if a.get("class") == "chart"]


def test_page_is_self_contained(page: str) -> None:
    parsed = Page(page)
    assert not parsed.all("link") and not parsed.all("img") and not parsed.all("iframe")
    for tag, attrs in parsed.tags:
        for name in ("src", "href", "xlink:href", "action"):
            value = attrs.get(name)
            assert value is None or value.startswith("#"), f"<{tag} {name}={value!r}> leaves the page"
    assert "@import" not in page and "url(http" not in page


def test_every_chart_is_an_inline_svg(page: str) -> None:
    assert _figures(page) == CHARTS
    assert page.count("<svg") == N_CHARTS
    ids = [a["id"] for _, a in Page(page).tags if a.get("id")]
    assert len(ids) == len(set(ids)), "ids repeat across charts: clip paths would point at the wrong chart"


def test_user_text_is_escaped(page: str) -> None:
    # a fixture question carries "<script>alert(1)</script>"; it must reach the page as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert len(Page(page).all("script")) == 1  # the page's own filter script, nothing else


def test_runs_table_shows_differing_options_metrics_and_intervals(run_dirs: list[Path], page: str) -> None:
    assert differing_options([load_run(d) for d in run_dirs]) == ["top_k", "agent_options.window"]
    assert 'title="top_k"' in page and 'title="agent_options.window"' in page
    assert 'title="seed"' not in page  # the same in every run
    # full's accuracy (19/24) and its bootstrap interval from summary.json
    assert "0.792" in page and "[0.708, 0.833]" in page
    # totals from summary["llm"]: recent retried its failed calls (36 calls), cost in USD
    assert ">36<" in page and "$0.0017" in page


def test_wrong_answers_are_listed_per_run(page: str) -> None:
    for agent, n in WRONG.items():
        assert f"{n}</span> shown of {n} wrong by accuracy" in page, agent
    assert page.count('<tr data-category="') == sum(WRONG.values())
    assert "RateLimitError" in page  # an error counts as wrong and shows its message


def test_cli_writes_the_page(run_dirs: list[Path], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memplug.cli import cli

    out = tmp_path / "nested" / "report.html"
    result = CliRunner().invoke(cli, ["report", *map(str, run_dirs), "--html", str(out)])
    assert result.exit_code == 0, result.output
    assert _figures(out.read_text(encoding="utf-8")) == CHARTS


def test_wrong_means_headline_below_one_or_error() -> None:
    def record(scores: dict[str, float | None], error: str | None = None) -> QuestionRecord:
        return QuestionRecord("s", "q", "c", "?", scores=scores, error=error)

    assert is_wrong(record({"accuracy": 0.0}), "accuracy")
    assert not is_wrong(record({"accuracy": 1.0, "recall@5": 0.0}), "accuracy")
    assert is_wrong(record({}, "TimeoutError"), "accuracy")
    assert not is_wrong(record({"accuracy": None}), "accuracy")


def test_headline_prefers_judge_then_the_first_answer_metric() -> None:
    assert headline_metric(["accuracy", "recall@5"]) == "accuracy"
    assert headline_metric(["recall@5", "subem", "judge"]) == "judge"
    assert headline_metric(["recall@5", "f1"]) == "f1"
    assert headline_metric(["recall@5"]) == "recall@5"
    assert headline_metric([]) is None


def _copy_run(run_id: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE_RUNS / run_id, tmp_path / run_id))


def test_torn_last_line_is_skipped(tmp_path: Path) -> None:
    run = _copy_run(RUN_IDS[1], tmp_path)
    with (run / "samples.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"sample_id": "memsim-en-0005", "question_id": "memsim-en-00')  # killed mid-write
    page = write_html([run], tmp_path / "out.html").read_text(encoding="utf-8")
    assert f"{WRONG['bm25']}</span> shown of {WRONG['bm25']} wrong" in page


def test_corrupt_line_inside_samples_is_a_data_error(tmp_path: Path) -> None:
    run = _copy_run(RUN_IDS[1], tmp_path)
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = "not json\n"
    (run / "samples.jsonl").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(MemplugError, match="line 4"):
        write_html([run], tmp_path / "out.html")


def test_a_run_without_summary_is_refused(tmp_path: Path) -> None:
    run = _copy_run(RUN_IDS[0], tmp_path)
    (run / "summary.json").unlink()
    with pytest.raises(MemplugError, match="summary.json"):
        write_html([run], tmp_path / "out.html")
    with pytest.raises(MemplugError, match="run.json"):
        write_html([tmp_path], tmp_path / "out.html")


def test_intervals_are_shown_only_when_the_summary_has_them(tmp_path: Path) -> None:
    run = _copy_run(RUN_IDS[0], tmp_path)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    del summary["ci"]
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    page = write_html([run], tmp_path / "out.html").read_text(encoding="utf-8")
    assert "0.792" in page and "[0.708, 0.833]" not in page and "95% intervals" not in page
    assert "n=24" in page  # the count stays without its interval
    # a single run gets every chart but the paired one: nothing to pair it with
    assert _figures(page) == [c for c in CHARTS if not c.startswith("paired")]
    assert 'id="paired"' not in page and 'href="#paired"' not in page


def test_each_dataset_gets_its_own_charts(tmp_path: Path) -> None:
    memsim = _copy_run(RUN_IDS[0], tmp_path / "a")
    other = _copy_run(RUN_IDS[1], tmp_path / "b")
    summary = json.loads((other / "summary.json").read_text(encoding="utf-8"))
    summary["dataset"], summary["llm"]["cost_usd"] = "memdaily", 0.0  # an offline run costs nothing
    (other / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    recent = FIXTURE_RUNS / RUN_IDS[2]
    page = write_html([memsim, other, recent], tmp_path / "out.html").read_text(encoding="utf-8")
    # memsim's first run is paired with recent, across the memdaily run between them; memdaily has no pair
    assert _figures(page) == [
        "paired-memsim",
        "accuracy",
        "recall@5",
        "accuracy",
        "recall@5",
        "efficiency",
        "cost-memsim",
        "cost-memdaily",
    ]
    assert _paired_rows(page).keys() == {("accuracy", RUN_IDS[2]), ("recall@5", RUN_IDS[2])}
    assert "$0.0000" in page


def test_runs_of_one_agent_are_told_apart_by_their_options(tmp_path: Path) -> None:
    first = _copy_run(RUN_IDS[1], tmp_path / "a")
    second = _copy_run(RUN_IDS[1], tmp_path / "b")
    run = json.loads((second / "run.json").read_text(encoding="utf-8"))
    run["run_id"], run["spec"]["top_k"] = "bm25-top10", 10
    (second / "run.json").write_text(json.dumps(run), encoding="utf-8")
    page = write_html([first, second], tmp_path / "out.html").read_text(encoding="utf-8")
    assert "bm25 (top_k=3)" in page and "bm25 (top_k=10)" in page


def _paired_rows(page: str) -> dict[tuple[str, str], str]:
    """The paired table's rows by (metric, run id of B), as their text with tags and spaces stripped."""
    rows = re.findall(r'<tr[^>]*data-metric="([^"]+)" data-b="([^"]+)">(.*?)</tr>', page, re.DOTALL)
    return {(m, b): re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)).strip() for m, b, body in rows}


def test_paired_section_shows_what_compare_computes(run_dirs: list[Path], page: str) -> None:
    expected = comparisons(run_dirs)
    rows = _paired_rows(page)
    assert list(rows) == [(m, run_id) for m in ("accuracy", "recall@5") for run_id in RUN_IDS[1:]]
    for comparison, run_id in zip(expected, RUN_IDS[1:]):
        for metric, c in comparison["metrics"].items():
            numbers = [
                str(c["n"]),
                f"{c['mean_a']:.3f}",
                f"{c['mean_b']:.3f}",
                f"{c['diff']:+.3f}",
                f"[{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]",
                f"{c['p_value']:.3g}",
            ]
            if c["test"] == "mcnemar-exact":  # with the cluster-aware p and the discordant counts
                numbers += [f"bootstrap {c['p_bootstrap']:.3g}", c["test"], f"{c['a_only']} / {c['b_only']} discordant"]
            else:
                numbers += [c["test"]]
            assert " ".join(numbers) in rows[metric, run_id], (metric, run_id)
    # by hand: full is right on 4 accuracy questions bm25 misses, bm25 on 1 the other way round;
    # exact McNemar p = 2 * (C(5,0) + C(5,1)) / 2**5 = 0.375
    assert rows["accuracy", RUN_IDS[1]].startswith("accuracy full − bm25 24 0.792 0.667 +0.125")
    assert "0.375 bootstrap" in rows["accuracy", RUN_IDS[1]] and "4 / 1 discordant" in rows["accuracy", RUN_IDS[1]]
    # recent failed 2 questions with errors: compared on the 22 both answered
    assert rows["accuracy", RUN_IDS[2]].startswith("full − recent 22 0.773 0.409 +0.364")
    assert "paired-bootstrap" in rows["recall@5", RUN_IDS[1]] and "discordant" not in rows["recall@5", RUN_IDS[1]]


def test_scores_show_the_questions_behind_them(page: str) -> None:
    # the runs table: recent's 2 errors leave 22 questions behind its overall scores
    assert page.count('<span class="ci">n=24</span>') == 4 and page.count('<span class="ci">n=22</span>') == 2
    # by category (summary["n"]): recent's errors were a comparative and a post_processing question
    accuracy_table = page[
        page.index('<table class="bycat">') : page.index("</table>", page.index('<table class="bycat">'))
    ]
    recent_row = accuracy_table[accuracy_table.index('<tr><td class="label">recent') :]
    assert re.findall(r'class="n">n=(\d+)', recent_row) == ["4", "3", "4", "4", "3", "4", "22"]


def _edit_json(path: Path, edit: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _judge_check(model: str, agreement: float, kappa: float | None, n: int) -> dict[str, Any]:
    """judge-check.json's shape (memplug.judge_checks.check_run) with one judge's figures."""
    return {"judges": {model: {"vs_exact": {"all": {"n": n, "agreement": agreement, "kappa": kappa}}}}}


def test_judge_checks_and_repeats(tmp_path: Path) -> None:
    judged = _copy_run(RUN_IDS[0], tmp_path / "a")
    # as if run with --judge: a judge score, its count and interval
    _edit_json(
        judged / "summary.json",
        lambda s: (
            s["metrics"]["overall"].update(judge=0.75),
            s["n"]["overall"].update(judge=24),
            s["ci"]["overall"].update(judge=[0.6, 0.9]),
        ),
    )
    (judged / "judge-check.json").write_text(json.dumps(_judge_check("openai/gpt-4o-mini", 0.9375, 0.8571, 16)))
    # bm25 twice, seeds 7 and 8, the second scoring 0.5 on accuracy; checked by a judge it was not scored with
    first = _copy_run(RUN_IDS[1], tmp_path / "b")
    second = _copy_run(RUN_IDS[1], tmp_path / "c")
    _edit_json(second / "run.json", lambda r: (r.update(run_id="bm25-seed8"), r["spec"].update(seed=8)))
    _edit_json(second / "summary.json", lambda s: s["metrics"]["overall"].update(accuracy=0.5))
    (first / "judge-check.json").write_text(json.dumps(_judge_check("ollama/qwen2.5", 0.8, None, 20)))

    page = write_html([judged, first, second], tmp_path / "out.html").read_text(encoding="utf-8")
    assert "agreement 0.938<br>κ 0.857 (n=16)" in page  # under full's judge score
    assert "bm25 (seed=7, top_k=3), ollama/qwen2.5: agreement 0.800 · κ — (n=20)" in page  # kappa undefined
    repeats = page[
        page.index('<table class="repeats">') : page.index("</table>", page.index('<table class="repeats">'))
    ]
    assert repeats.count("<tr>") == 2  # the header and the one bm25 group; full has no repeat
    accuracy = repeat_summary([0.666667, 0.5])
    assert f"{accuracy['mean']:.3f} ± {accuracy['std']:.3f}" == "0.583 ± 0.118"
    assert "0.583 ± 0.118" in repeats and "0.500 – 0.667" in repeats and "7, 8" in repeats
    assert "0.812 ± 0.000" in repeats  # recall@5 the same in both


# -- in a browser ----------------------------------------------------------------
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)
#: Runs after the page's own script: counts, per chart, the data marks (bars, points; their
#: ids hold "-mark-") the browser laid out with a non-empty box, and what the filter hid.
PROBE = """<script>
(function () {
  var figures = document.querySelectorAll("figure.chart");
  for (var i = 0; i < figures.length; i++) {
    var shapes = figures[i].querySelectorAll("svg [id*='-mark-']");
    var drawn = 0;
    for (var j = 0; j < shapes.length; j++) {
      var box = shapes[j].getBBox();
      if (box.width > 0 || box.height > 0) drawn++;
    }
    figures[i].setAttribute("data-drawn", String(drawn));
  }
  var hidden = document.querySelectorAll("tr[data-category][hidden], section.wrong-run[hidden]");
  document.body.setAttribute("data-hidden", String(hidden.length));
})();
</script>"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("chromium is missing; CI installs it with: apt-get install -y chromium")
    pytest.skip("chromium not installed (apt-get install -y chromium)")


def _browse(chromium: str, page: Path, tmp_path: Path, *args: str, fragment: str = "") -> tuple[str, list[str]]:
    """Chromium's output (DOM or nothing) and the console messages the page produced."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    proc = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri() + fragment],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, console


def _probed(page: Path) -> Path:
    probed = page.with_name("probed.html")
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    return probed


def _drawn(dom: str) -> dict[str, int]:
    parsed = Page(dom)
    return {
        _given(a, "data-chart"): int(a.get("data-drawn") or 0)
        for a in parsed.all("figure")
        if a.get("class") == "chart"
    }


def test_console_check_catches_a_broken_page(tmp_path: Path) -> None:
    """The no-console-errors check below can fail: a script error is caught."""
    chromium = _chromium()
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><script>notDefined();</script></body></html>", encoding="utf-8")
    _, console = _browse(chromium, broken, tmp_path, "--dump-dom")
    assert any("notDefined" in line for line in console)


def test_chromium_draws_every_chart_without_console_errors(run_dirs: list[Path], tmp_path: Path) -> None:
    chromium = _chromium()
    page = write_html(run_dirs, tmp_path / "report.html")
    probed = _probed(page)

    dom, console = _browse(chromium, probed, tmp_path, "--dump-dom")
    assert console == []
    drawn = _drawn(dom)
    assert list(drawn) == CHARTS
    # 2 metrics x 2 paired differences, 3 runs x (6 categories + overall) bars per metric,
    # 2 x 3 efficiency bars, 3 points
    assert drawn == {"paired-memsim": 4, "accuracy": 21, "recall@5": 21, "efficiency": 6, "cost-memsim": 3}
    assert 'data-hidden="0"' in dom

    # the filters, preset from the URL as a shared link would: only bm25's aggregative rows stay
    dom, console = _browse(chromium, probed, tmp_path, "--dump-dom", fragment=f"#category=aggregative&run={RUN_IDS[1]}")
    assert console == []
    parsed = Page(dom)
    shown_runs = [a["data-run"] for a in parsed.all("section") if "data-run" in a and "hidden" not in a]
    assert shown_runs == [RUN_IDS[1]]
    rows = [a for a in parsed.all("tr") if "data-category" in a]
    assert len(rows) == sum(WRONG.values())
    visible = [a["data-category"] for a in rows if "hidden" not in a]
    assert visible == ["aggregative"] * 10  # 3 + 4 + 3 aggregative misses of full, bm25 and recent
    assert '<span class="shown">4</span>' in dom  # bm25's own count follows the filter

    # the screenshot in docs/ comes from this recipe
    shot = tmp_path / "report.png"
    _, console = _browse(chromium, page, tmp_path, f"--screenshot={shot}", "--window-size=1280,2000")
    assert console == []
    with shot.open("rb") as fh:
        header = fh.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", header[16:24]) == (1280, 2000)
    if os.environ.get("MEMPLUG_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)


# -- at a desktop's and a phone's width --------------------------------------------
#: Returns, as JSON, what the layout checks need: the window's width and the page's, every
#: pair of text boxes in one chart that overlap (matplotlib draws each piece of text as a
#: group with an id "<prefix>-text_N"), and the tick labels of each cost chart's x axis.
LAYOUT_PROBE = """(function () {
  function overlap(a, b) {  // half a pixel of grace: neighbours that touch do not collide
    return a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  }
  var out = {innerWidth: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
             overlaps: [], texts: 0, costTicks: {}};
  var figures = document.querySelectorAll("figure.chart");
  for (var i = 0; i < figures.length; i++) {
    var name = figures[i].getAttribute("data-chart");
    var groups = figures[i].querySelectorAll("svg g[id*='-text_']");
    var boxes = [];
    for (var j = 0; j < groups.length; j++) {
      var r = groups[j].getBoundingClientRect();
      if (r.width > 0 && r.height > 0) boxes.push({text: groups[j].textContent.trim(), r: r});
    }
    out.texts += boxes.length;
    for (var a = 0; a < boxes.length; a++)
      for (var b = a + 1; b < boxes.length; b++)
        if (overlap(boxes[a].r, boxes[b].r)) out.overlaps.push([name, boxes[a].text, boxes[b].text]);
    if (name.indexOf("cost-") === 0) {
      var ticks = figures[i].querySelectorAll("svg g[id*='-xtick_'] text");
      out.costTicks[name] = Array.prototype.map.call(ticks, function (t) { return t.textContent.trim(); });
    }
  }
  return JSON.stringify(out);
})()"""


def _devtools(
    chromium: str, page: Path, tmp_path: Path, width: int, height: int, expression: str, screenshot: Path | None = None
) -> tuple[Any, list[dict[str, Any]]]:
    """Open ``page`` in a viewport ``width`` CSS pixels wide, evaluate ``expression`` after the
    load event, and return its value and what the page logged or threw.

    Headless Chromium makes no window narrower than 500 pixels (``--window-size=390,…`` gives
    an innerWidth of 500), so the viewport is set through the DevTools protocol
    (``Emulation.setDeviceMetricsOverride``) over ``--remote-debugging-pipe``: file
    descriptors 3 and 4, NUL-terminated JSON, no network port. The same is used for the
    desktop width, so both are measured the same way.
    """
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    to_chromium, from_us = os.pipe()
    to_us, from_chromium = os.pipe()

    def child() -> None:  # Chromium reads commands on fd 3 and writes replies on fd 4
        # copies numbered 5 and up first: dup2 onto 3 or 4 then never clobbers one end with
        # the other, and never is a no-op that would leave the copy close-on-exec
        read, write = fcntl.fcntl(to_chromium, fcntl.F_DUPFD, 5), fcntl.fcntl(from_chromium, fcntl.F_DUPFD, 5)
        os.dup2(read, 3)  # dup2 makes them inheritable; every other fd Python opened is not
        os.dup2(write, 4)

    # close_fds=False: closing would take 3 and 4 too, and pass_fds=(3, 4) fails where the
    # parent has no fd 3 or 4 open
    proc = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
        close_fds=False,
        preexec_fn=child,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(to_chromium)
    os.close(from_chromium)
    out, replies = os.fdopen(from_us, "wb", buffering=0), os.fdopen(to_us, "rb", buffering=0)
    pending, events, counter = b"", [], [0]

    def receive() -> dict[str, Any]:
        nonlocal pending
        while b"\0" not in pending:
            block = replies.read(1 << 16)
            assert block, "chromium closed the DevTools pipe"
            pending += block
        message, pending = pending.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def send(method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        counter[0] += 1
        message: dict[str, Any] = {"id": counter[0], "method": method, "params": params}
        if session:
            message["sessionId"] = session
        out.write(json.dumps(message).encode() + b"\0")
        while True:
            reply = receive()
            if reply.get("id") == counter[0]:
                assert "error" not in reply, (method, reply["error"])
                result: dict[str, Any] = reply["result"]
                return result
            events.append(reply)

    try:
        target = next(t["targetId"] for t in send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        session = send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        send(
            "Emulation.setDeviceMetricsOverride", session, width=width, height=height, deviceScaleFactor=1, mobile=False
        )
        send("Page.enable", session)
        send("Runtime.enable", session)
        send("Page.navigate", session, url=page.as_uri())
        while not any(e.get("method") == "Page.loadEventFired" for e in events):
            events.append(receive())
        value = send("Runtime.evaluate", session, expression=expression, returnByValue=True, awaitPromise=True)[
            "result"
        ].get("value")
        if screenshot is not None:
            screenshot.write_bytes(base64.b64decode(send("Page.captureScreenshot", session, format="png")["data"]))
        console = [e for e in events if e.get("method") in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown")]
        send("Browser.close")
    finally:
        out.close()
        replies.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return value, console


def _layout(chromium: str, page: Path, tmp_path: Path, width: int, screenshot: Path | None = None) -> dict[str, Any]:
    value, console = _devtools(chromium, page, tmp_path, width, 2000, LAYOUT_PROBE, screenshot)
    assert console == []
    layout: dict[str, Any] = json.loads(value)
    return layout


#: Agent names as long as plugins' get, one with spaces and one without.
LONG_NAMES = {
    RUN_IDS[1]: "mem0-graph-memory-with-reranker-and-top10",
    RUN_IDS[2]: "letta sleeptime agent with archival memory v2",
}


def _stressed(tmp_path: Path, zero_times: bool = False) -> list[Path]:
    """The fixture runs with long agent names and no LLM cost (offline runs), and with
    ``zero_times`` no measurable ingest or recall time either (constant charts)."""
    dirs = []
    for run_id in RUN_IDS:
        run = _copy_run(run_id, tmp_path / "runs")

        def edit(s: dict[str, Any], run_id: str = run_id) -> None:
            s["agent"] = LONG_NAMES.get(run_id, s["agent"])
            s["llm"]["cost_usd"] = 0.0
            if zero_times:
                s["efficiency"].update(ingest_s_per_message=0.0, recall_s_per_question=0.0)

        _edit_json(run / "summary.json", edit)
        dirs.append(run)
    return dirs


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
@pytest.mark.parametrize("zero_times", [False, True], ids=["times", "zero-times"])
def test_chromium_page_fits_the_window_and_chart_text_never_overlaps(
    tmp_path: Path, width: int, zero_times: bool
) -> None:
    chromium = _chromium()
    page = write_html(_stressed(tmp_path, zero_times), tmp_path / "report.html")
    assert all(name in page.read_text(encoding="utf-8") for name in LONG_NAMES.values())
    layout = _layout(chromium, page, tmp_path, width)
    assert layout["innerWidth"] == width  # the viewport really is a phone's (or a desktop's)
    # wide tables scroll inside their box and charts shrink or scroll inside their figure:
    # the page as a whole never scrolls sideways
    assert layout["scrollWidth"] <= layout["innerWidth"], layout["scrollWidth"]
    assert layout["texts"] > 60  # the check looked at the charts' text: titles, ticks, names, legends
    assert layout["overlaps"] == []
    # every run cost nothing: one tick at 0, no negative cost
    assert layout["costTicks"] == {"cost-memsim": ["0"]}


def test_layout_probe_catches_a_wide_page_overlapping_text_and_negative_ticks(tmp_path: Path) -> None:
    """The checks above can fail: a page wider than the window, two labels on top of each
    other and a negative cost tick are all reported."""
    chromium = _chromium()
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><div style="width: 900px">wide</div>'
        '<figure class="chart" data-chart="cost-x"><svg width="300" height="100">'
        '<g id="c1-xtick_1"><g id="c1-text_1"><text x="10" y="50">−1.00</text></g></g>'
        '<g id="c1-text_2"><text x="12" y="52">a long agent name</text></g></svg></figure></body></html>',
        encoding="utf-8",
    )
    layout = _layout(chromium, bad, tmp_path, PHONE)
    assert layout["innerWidth"] == PHONE and layout["scrollWidth"] > PHONE
    assert layout["overlaps"] == [["cost-x", "−1.00", "a long agent name"]]
    assert layout["costTicks"] == {"cost-x": ["−1.00"]}


def test_chromium_phone_screenshot(run_dirs: list[Path], tmp_path: Path) -> None:
    """docs/img/report-phone.png: the fixture page at a phone's width."""
    chromium = _chromium()
    page = write_html(run_dirs, tmp_path / "report.html")
    shot = tmp_path / "report-phone.png"
    layout = _layout(chromium, page, tmp_path, PHONE, screenshot=shot)
    assert layout["scrollWidth"] <= PHONE and layout["overlaps"] == []
    with shot.open("rb") as fh:
        header = fh.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", header[16:24]) == (PHONE, 2000)
    if os.environ.get("MEMPLUG_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(shot, PHONE_SCREENSHOT)


def _chart(draw, *args):
    """A chart function of memplug.htmlreport drawn as the page draws it: its SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memplug import htmlreport

    with matplotlib.rc_context(htmlreport._RC):
        return str(draw(plt, *args))


def test_a_category_without_the_metric_gets_no_bar_and_no_legend_entry(tmp_path: Path) -> None:
    from memplug import htmlreport
    from memplug.runner import Evaluation, RunSpec

    path = Evaluation(RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "4"})).run(output=tmp_path)
    run = htmlreport.load_run(path)
    assert run.by_category("aggregative", "accuracy") is None  # counting questions have no choices
    categories = run.categories
    accuracy = _chart(htmlreport._category_chart, "accuracy", "memsim", [run], categories, "a")
    recall = _chart(htmlreport._category_chart, "recall@5", "memsim", [run], categories, "r")
    assert ">aggregative<" not in accuracy and ">comparative<" in accuracy
    assert ">aggregative<" in recall


def test_runs_on_one_point_of_the_cost_chart_are_set_side_by_side(tmp_path: Path) -> None:
    from memplug import htmlreport
    from memplug.runner import Evaluation, RunSpec

    paths = [
        Evaluation(RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "4"}, top_k=k)).run(output=tmp_path)
        for k in (5, 6)
    ]
    runs = [htmlreport.load_run(p) for p in paths]
    assert runs[0].overall("accuracy") == runs[1].overall("accuracy")  # one point: same score, no cost
    svg = _chart(htmlreport._cost_chart, "accuracy", "memsim", runs, "c")
    centres = []
    for i in range(2):
        group = re.search(rf'<g id="c-{htmlreport.MARK}-{i}">(.*?)</g>', svg, re.S)
        assert group, f"no marker of run {i}"
        centres.append(re.findall(r'<use [^>]*x="([\d.]+)"', group.group(1)))
    assert centres[0] and centres[1] and centres[0] != centres[1]


#: The runs table's width and that of the box it scrolls in, as JSON.
RUNS_TABLE_PROBE = """(function () {
  var box = document.querySelector("table.runs").parentElement;
  return JSON.stringify({innerWidth: window.innerWidth, box: box.clientWidth, table: box.scrollWidth});
})()"""


def test_chromium_locomo_runs_table_fits_a_desktop_window(shared_data: Path, tmp_path: Path) -> None:
    """LoCoMo's five metrics (locomo_f1_no_adv, session_hit@5, ...) made the runs table 1,300
    pixels wide: it scrolled in a 1280-pixel window. Here a real LoCoMo run beside one as an
    LLM run of the whole release gives it (intervals, a judge, millions of tokens)."""
    from memplug.runner import Evaluation, RunSpec

    chromium = _chromium()
    spec = RunSpec(agent="bm25", dataset="locomo", data=str(shared_data / "locomo" / "locomo_conv26.json"))
    offline = Evaluation(spec).run(output=tmp_path / "runs")
    with_llm = Path(shutil.copytree(offline, tmp_path / "runs" / "20260101-000000-hybrid-locomo"))

    def edit(s: dict[str, Any]) -> None:
        s["run_id"], s["agent"] = with_llm.name, "hybrid"
        s["llm"].update(calls=1986, cache_hits=12, prompt_tokens=3_456_789, completion_tokens=23_456, cost_usd=1.2345)
        s["metrics"]["overall"]["judge"], s["n"]["overall"]["judge"] = 0.61234, 1986
        for metric in s["metrics"]["overall"]:
            s["ci"]["overall"][metric] = [0.3123, 0.4012]

    _edit_json(with_llm / "summary.json", edit)
    _edit_json(with_llm / "run.json", lambda r: r.update(run_id=with_llm.name))
    page = write_html([offline, with_llm], tmp_path / "report.html")
    value, console = _devtools(chromium, page, tmp_path, DESKTOP, 1000, RUNS_TABLE_PROBE)
    assert console == []
    layout = json.loads(value)
    assert layout["innerWidth"] == DESKTOP
    assert layout["table"] <= layout["box"], layout
    # the heads wrap after a separator: the whole name is the title
    assert '<th class="num" title="locomo_f1_no_adv">locomo_<wbr>f1_<wbr>no_<wbr>adv</th>' in page.read_text("utf-8")


def test_a_run_that_did_not_finish_is_marked_beside_its_name(tmp_path: Path) -> None:
    """A run stopped by --max-errors read in the runs table as "questions 8, errors 3, em 1.000":
    its status and the questions never asked were in the versions section only."""
    from memplug.runner import Evaluation, RunSpec

    spec = RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "6"})
    path = Evaluation(spec).run(output=tmp_path)
    summary = json.loads((path / "summary.json").read_text())
    summary.update(status="failed", n_expected=18, n_answered=6, n_failed=0, stopped="--max-errors 2")
    (path / "summary.json").write_text(json.dumps(summary))
    page = write_html([path], tmp_path / "page.html").read_text(encoding="utf-8")
    assert "FAILED: 6 of 18 answered" in page
