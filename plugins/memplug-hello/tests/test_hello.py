"""The example plugin's own tests, written as an outside author would, with memplug.testing."""

from memplug.testing import assert_agent_conforms, assert_dataset_conforms, run_cli, tiny_samples

from memplug_hello.agent import HelloAgent
from memplug_hello.dataset import HelloDataset


def test_the_agent_keeps_the_contract():
    assert_agent_conforms(HelloAgent)  # on memplug's tiny conversations
    assert_agent_conforms(HelloAgent, options={"min_overlap": "2"}, samples=tiny_samples(2), expect_recall=False)


def test_the_dataset_keeps_the_contract():
    assert_dataset_conforms(HelloDataset())
    assert_dataset_conforms(HelloDataset(), options={"people": "1"})


def test_memplug_finds_and_runs_both(tmp_path):
    result = run_cli(["eval", "--agent", "hello", "--dataset", "hello", "--quiet"], cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert result.summary.n_errors == 0
    assert result.summary.metrics.overall["recall@5"] == 1.0
