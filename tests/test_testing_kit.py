"""memplug.testing: the conformance checks catch what they promise, and memplug's own
agents, datasets and the example plugin pass them."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memplug.models import AgentQuestion, Chunk, Recall, Recalled
from memplug.plugins import get_plugins
from memplug.protocols import AgentConfig
from memplug.testing import (
    ConformanceError,
    TinyDataset,
    assert_agent_conforms,
    assert_dataset_conforms,
    check_agent,
    check_dataset,
    run_cli,
    tiny_samples,
)

ROOT = Path(__file__).resolve().parents[1]
#: native agents that search (`decay` by its rank-calibrated relevance); `recent` and
#: `none` do not, `noisy`/`oracle` need the reference channel
RETRIEVING = ("full", "bm25", "embedding", "emg", "hybrid", "decay")


@pytest.mark.parametrize("name", RETRIEVING + ("recent", "none"))
def test_every_native_agent_conforms(name: str) -> None:
    factory = get_plugins().registry("agents").get(name).load()
    assert_agent_conforms(factory, expect_recall=name in RETRIEVING, whole_history=name == "full")


class Forgetful:
    """Breaks four promises: too many items, ids never given, a NaN score, memory shared across samples."""

    shared: list[tuple[str, str]] = []  # class-level: every agent sees every sample

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.top_k = config.top_k

    def ingest(self, chunk: Chunk) -> None:
        self.shared.extend((m.id, m.text) for m in chunk.messages)

    def recall(self, question: AgentQuestion) -> Recall:
        items = [Recalled(text, 1.0, (mid,)) for mid, text in self.shared[: self.top_k + 1]]
        return Recall((*items, Recalled("made up", float("nan"), ("nowhere",))))

    def close(self) -> None:
        pass


def test_the_agent_check_names_every_broken_promise() -> None:
    Forgetful.shared = []
    problems = check_agent(Forgetful)
    text = "\n".join(problems)
    assert "items for top_k=3" in text
    assert "never given (nowhere)" in text
    assert "score nan" in text
    assert "messages of another sample" in text
    assert "recalled nothing on 8 questions" in text and "recall@3 = 0; none empty" in text
    with pytest.raises(ConformanceError, match="promise"):
        assert_agent_conforms(Forgetful)


class FirstFactOnly:
    """Recalls each sample's first fact whatever the question: right on 3 of tiny's 8."""

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.first: Recalled | None = None

    def ingest(self, chunk: Chunk) -> None:
        for m in chunk.messages:
            if self.first is None and m.id == f"{m.speaker}-0":  # not a filler note
                self.first = Recalled(m.text, 1.0, (m.id,))

    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(() if self.first is None else (self.first,))

    def close(self) -> None:
        pass


class RecallsNothing(FirstFactOnly):
    def recall(self, question: AgentQuestion) -> Recall:
        return Recall(())


def test_the_agent_check_tells_a_memory_that_recalls_nothing_from_a_weak_one() -> None:
    assert check_agent(RecallsNothing) == [
        "your agent recalled nothing on 8 questions: the answering message was in none of its top 3 "
        "(recall@3 = 0; every Recall empty); with its default options, an agent that searches should "
        "find some (expect_recall=False for one that does not)"
    ]
    assert check_agent(RecallsNothing, min_recall=0) == check_agent(RecallsNothing)  # never excused
    assert check_agent(RecallsNothing, expect_recall=False) == []
    weak = check_agent(FirstFactOnly)
    assert weak == [
        "found the answering message of only 3 of 8 questions in the top 3, under min_recall=0.5 "
        "(pass expect_recall=False for an agent that does not retrieve)"
    ]
    assert check_agent(FirstFactOnly, min_recall=0.375) == check_agent(FirstFactOnly, min_recall=0) == []


def test_the_agent_check_gives_a_reference_agent_its_channel() -> None:
    oracle = get_plugins().registry("agents").get("oracle").load()
    assert any("needs the reference channel" in p for p in check_agent(oracle))
    assert check_agent(oracle, reference=True) == []


def test_the_agent_check_reports_a_crash_and_bad_options() -> None:
    class Crashes(Forgetful):
        def recall(self, question):
            raise RuntimeError("index missing")

    assert any("RuntimeError: index missing" in p for p in check_agent(Crashes, expect_recall=False))
    bm25 = get_plugins().registry("agents").get("bm25").load()
    assert check_agent(bm25, options={"no_such_option": "1"})[0].startswith("options:")


def test_the_agent_check_holds_stored_to_its_promise() -> None:
    """The runner never fails a run for stored() (it logs and goes on), so the kit is where a
    plugin author learns that it raised or returned something else than StoredItems."""
    from memplug.models import StoredItem

    class Lists(Forgetful):
        def __init__(self, config: AgentConfig, workdir: Path) -> None:
            super().__init__(config, workdir)
            self.mine: list[str] = []

        def ingest(self, chunk: Chunk) -> None:
            self.mine.extend(m.id for m in chunk.messages)

        def recall(self, question: AgentQuestion) -> Recall:
            return Recall(())

        def stored(self):
            return [StoredItem("a message", id="1", message_ids=tuple(self.mine[:1])), "plain text is fine"]

    class Raises(Lists):
        def stored(self):
            raise RuntimeError("store offline")

    class Five(Lists):
        def stored(self):
            return 5

    class Elsewhere(Lists):
        def stored(self):
            return [StoredItem("x", message_ids=("not-a-message",)), {"text": "a dict"}]

    assert check_agent(Lists, expect_recall=False) == []
    assert any("stored() raised RuntimeError: store offline" in p for p in check_agent(Raises, expect_recall=False))
    assert any("stored() returned int" in p for p in check_agent(Five, expect_recall=False))
    text = "\n".join(check_agent(Elsewhere, expect_recall=False))
    assert "names messages of no ingested chunk: not-a-message" in text and "listed a dict" in text


def test_memplugs_datasets_and_the_tiny_one_conform(shared_data: Path) -> None:
    assert_dataset_conforms(TinyDataset())
    datasets = get_plugins().registry("datasets")
    assert_dataset_conforms(datasets.get("memsim").load()(), options={"n": "3"})
    assert_dataset_conforms(datasets.get("memdaily").load()(), data=shared_data / "memdaily")
    assert_dataset_conforms(datasets.get("locomo").load()(), data=shared_data / "locomo" / "locomo_conv26.json")


def test_the_dataset_check_catches_a_target_of_another_sample() -> None:
    class Mixed(TinyDataset):
        def build(self, options):
            a, b = tiny_samples(2)
            q = a.questions[0]
            bad = type(q)(q.id, q.text, q.answers, targets=(b.messages[0].id,))
            return [type(a)(a.id, a.messages, (bad, *a.questions[1:])), b, b]

    problems = check_dataset(Mixed())
    assert any("targets name no message of the sample: bob-0" in p for p in problems)
    assert any("sample id 'bob' appears twice" in p for p in problems)


def test_run_cli_returns_the_run_it_wrote(tmp_path: Path) -> None:
    result = run_cli(["eval", "--agent", "bm25", "--dataset", "memsim", "-o", "n=2", "--quiet"], cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert result.run_dir is not None and result.run_dir.parent == tmp_path / "runs"
    assert result.summary.n_errors == 0


def _hello_installed() -> bool:
    try:
        importlib.metadata.distribution("memplug-hello")
    except importlib.metadata.PackageNotFoundError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("the example plugin is not installed; the README's setup installs -e plugins/memplug-hello")
        return False
    return True


def test_the_example_plugin_installed_like_a_third_party_one(tmp_path: Path) -> None:
    """plugins/memplug-hello as its author would check it: found through its entry point by
    a fresh `memplug` process, and its own tests (written with memplug.testing) pass."""
    if not _hello_installed():
        pytest.skip("memplug-hello is not installed (pip install -e plugins/memplug-hello)")
    env = {k: v for k, v in os.environ.items() if k != "MEMPLUG_LOAD_PLUGINS"}
    env["COLUMNS"] = "200"
    listed = subprocess.run(
        [sys.executable, "-m", "memplug.cli", "list"], capture_output=True, text=True, env=env, cwd=tmp_path, check=True
    )
    assert "memplug-hello" in listed.stdout
    own_tests = ROOT / "plugins" / "memplug-hello" / "tests"
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", str(own_tests)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert re.search(r"\b3 passed", ran.stdout), ran.stdout


def test_a_single_answer_string_is_one_answer_not_its_letters() -> None:
    from memplug import Question

    assert Question("q", "Where?", answers="Paris").answers == ("Paris",)
    assert Question("q", "Where?", answers=["Paris", "Lyon"], anchors="city").anchors == ("city",)
