"""Every built-in native agent recalls something with its default options on real data.

`decay` once scored recall@5 0.000 on MemSim and 0.003 on MemDaily out of the box (its
seed's threshold was set for another embedder's cosines), and a report showed it as an
empty column. This guard runs each in-process agent memplug registers (not the adapters
of external systems, which need extras or servers) on a few MemSim trajectories and a
few MemDaily ones, with default options, through the check plugin authors get from
``memplug.testing``: an agent that errors, or that finds the answering message of no
question in its top 5 (recall@5 = 0), fails. `none` and `noisy` recall nothing by
design (no memory; everything but the answer) and must only run cleanly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memplug.models import Sample
from memplug.plugins import SELF, get_plugins
from memplug.testing import check_agent, dataset_samples

#: memplug's own agents that run in process: registered by memplug, no extra required
NATIVE = sorted(e.name for e in get_plugins().registry("agents") if e.plugin == SELF and not e.info.get("requires"))
#: agents that recall no answering message by design
RECALL_NOTHING = ("none", "noisy")
#: agents that return a token window, not a top k (MemSim's FullMem, NoisyMem, OracleMem)
WHOLE_HISTORY = ("full", "noisy", "oracle")


@pytest.fixture(scope="module")
def samples(shared_data: Path) -> dict[str, list[Sample]]:
    """Ten MemSim trajectories (English, generated offline) and ten of MemDaily's 589
    (Chinese, the release), one in sixty so that all six question types are in."""
    memdaily = dataset_samples("memdaily", data=shared_data / "memdaily")[::60]
    return {"memsim": dataset_samples("memsim", n=10), "memdaily": memdaily}


def test_the_guard_covers_the_native_agents() -> None:
    assert {"full", "recent", "embedding", "bm25", "none", "noisy", "oracle", "decay", "emg", "hybrid"} <= set(NATIVE)
    assert not {"mem0", "letta", "cognee", "llamaindex", "graphiti", "mcp"} & set(NATIVE)


@pytest.mark.parametrize("dataset", ["memsim", "memdaily"])
@pytest.mark.parametrize("agent", NATIVE)
def test_every_native_agent_recalls_something_with_default_options(
    agent: str, dataset: str, samples: dict[str, list[Sample]]
) -> None:
    entry = get_plugins().registry("agents").get(agent)
    problems = check_agent(
        entry.load(),
        samples=samples[dataset],
        top_k=5,
        chunk_size=512,
        min_recall=0,
        expect_recall=agent not in RECALL_NOTHING,
        whole_history=agent in WHOLE_HISTORY,
        reference=bool(entry.info.get("reference")),
    )
    assert problems == [], f"{agent} on {dataset}:\n" + "\n".join(problems)


def test_the_guard_catches_decay_with_the_seeds_raw_cosine(samples: dict[str, list[Sample]]) -> None:
    """What the guard is for: the seed's threshold on wordllama's cosines recalls nothing."""
    decay = get_plugins().registry("agents").get("decay").load()
    for dataset, questions in (("memsim", 10), ("memdaily", 10)):
        problems = check_agent(
            decay, options={"relevance": "cosine"}, samples=samples[dataset], top_k=5, chunk_size=512, min_recall=0
        )
        assert problems == [
            f"your agent recalled nothing on {questions} questions: the answering message was in "
            "none of its top 5 (recall@5 = 0; every Recall empty); with its default options, an "
            "agent that searches should find some (expect_recall=False for one that does not)"
        ]
