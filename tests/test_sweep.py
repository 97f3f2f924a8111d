"""`memplug sweep` with the local executor: cells, unique run ids, the manifest, resume of
unfinished cells, `memplug report SWEEP_DIR`; the executor options of `memplug eval`.
(The Ray executor: tests/integration/test_ray.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from memplug.cli import cli
from memplug.errors import MemplugError
from memplug.executors import LocalExecutor, make_executor, parse_llm_limit
from memplug.results import RunDir, read_records
from memplug.sweep import Sweep, cell_state, load_config, plan_cells, run_sweep
from memplug.testing import comparable_records

CONFIG = """
name = "tiny"
[base]
concurrency = 2
options = { n = "4" }
[grid]
agents = ["bm25", "recent"]
datasets = ["memsim"]
seeds = [0, 1]
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(CONFIG)
    return path


def test_cells_and_run_ids(config):
    cells = plan_cells(load_config(config), "tiny-20250101-000000-abcdef")
    assert [(c["axes"]["agent"], c["axes"]["seed"]) for c in cells] == [
        ("bm25", 0),
        ("bm25", 1),
        ("recent", 0),
        ("recent", 1),
    ]
    assert cells[0]["run_id"] == "tiny-20250101-000000-abcdef-c000-bm25-memsim-s0"
    assert cells[3]["spec"] == {
        "concurrency": 2,
        "agent": "recent",
        "dataset": "memsim",
        "seed": 1,
        "agent_options": {},
        "dataset_options": {"n": "4"},
    }


def test_option_sets_go_to_agent_or_dataset(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        '[grid]\nagents = ["bm25"]\ndatasets = [{ name = "memsim", options = { n = "3" } }]\n'
        'options = [{ feedback = "0.5" }, { feedback = "0" }]\n'
    )
    cells = plan_cells(load_config(path), "x")
    assert [c["spec"]["agent_options"] for c in cells] == [{"feedback": "0.5"}, {"feedback": "0"}]
    assert all(c["spec"]["dataset_options"] == {"n": "3"} for c in cells)


def test_model_reader_and_judge_axes(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        '[base]\napi_base = "http://127.0.0.1:9/v1"\n[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\n'
        'llms = ["openai/a", "openai/b"]\nreaders = ["llm"]\njudges = ["openai/j"]\n'
    )
    cells = plan_cells(load_config(path), "x")
    assert [(c["spec"]["llm"], c["spec"]["reader"], c["spec"]["judge"]) for c in cells] == [
        ("openai/a", "llm", "openai/j"),
        ("openai/b", "llm", "openai/j"),
    ]
    assert all(c["spec"]["api_base"] == "http://127.0.0.1:9/v1" for c in cells)
    assert len({c["run_id"] for c in cells}) == 2


@pytest.mark.parametrize(
    "text, error",
    [
        ('[grid]\nagentz = ["bm25"]\n', "no axis agentz"),
        ('[grid]\nagents = []\ndatasets = ["memsim"]\n', "non-empty list"),
        ('colour = 1\n[grid]\nagents = ["bm25"]\n', "unknown key"),
        ('[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\noptions = [{ nope = "1" }]\n', "nope"),
        ('[grid]\nagents = ["nosuch"]\ndatasets = ["memsim"]\n', "nosuch"),
        ('[base]\ntopk = 3\n[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\n', "topk"),
    ],
)
def test_bad_config_is_one_error_before_any_directory(tmp_path, text, error):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(MemplugError, match=error):
        Sweep.create(path, tmp_path / "out", {"name": "local"})
    assert not (tmp_path / "out").exists()


class _StopAfter(LocalExecutor):
    """Runs ``n`` cells, then is interrupted (Ctrl-C, a killed driver)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def map_cells(self, cells, run_cell, on_done):
        for cell in cells[: self.n]:
            on_done(cell, run_cell(cell, None))
        raise KeyboardInterrupt


def test_sweep_resume_runs_only_unfinished_cells(config, tmp_path):
    sweep = Sweep.create(config, tmp_path, {"name": "local"})
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, _StopAfter(2))
    manifest = sweep.read()
    assert [c["status"] for c in manifest["cells"]] == ["finished", "finished", "pending", "pending"]
    assert manifest["status"] == "interrupted"
    first = sweep.path / manifest["cells"][0]["path"] / "samples.jsonl"
    before = first.stat().st_mtime_ns
    # the second cell was killed half-way: its last record and summary lost, run.json still running
    second = sweep.path / manifest["cells"][1]["path"]
    lines = (second / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (second / "samples.jsonl").write_bytes(b"".join(lines[:-1]))
    (second / "summary.json").unlink()
    run = json.loads((second / "run.json").read_text())
    (second / "run.json").write_text(json.dumps({**run, "status": "running"}))
    assert [cell_state(sweep.path, c) for c in manifest["cells"]] == ["finished", "resume", "new", "new"]

    result = CliRunner().invoke(cli, ["sweep", "--resume", str(sweep.path), "--quiet"])
    assert result.exit_code == 0, result.output
    manifest = sweep.read()
    assert manifest["status"] == "finished"
    assert all(c["status"] == "finished" for c in manifest["cells"])
    assert first.stat().st_mtime_ns == before  # a finished cell is not run again
    for cell in manifest["cells"]:
        keys = [r.key for r in read_records(sweep.path / cell["path"] / "samples.jsonl")[0]]
        assert len(keys) == len(set(keys)) == 4
    assert sorted(p.name for p in (sweep.path / "runs").iterdir()) == sorted(c["run_id"] for c in manifest["cells"])


def test_resume_with_another_config_is_refused(config, tmp_path):
    sweep = Sweep.create(config, tmp_path, {"name": "local"})
    other = tmp_path / "other.toml"
    other.write_text(CONFIG.replace("seeds = [0, 1]", "seeds = [0, 2]"))
    result = CliRunner().invoke(cli, ["sweep", str(other), "--resume", str(sweep.path)])
    assert result.exit_code == 2 and "plans other cells" in result.output


def test_process_pool_sweep_matches_sequential_and_report_reads_the_sweep(config, tmp_path):
    pooled = Sweep.create(config, tmp_path / "pool", {"name": "local"})
    assert run_sweep(pooled, LocalExecutor(workers=2))["status"] == "finished"
    sequential = Sweep.create(config, tmp_path / "seq", {"name": "local"})
    run_sweep(sequential, LocalExecutor())
    for a, b in zip(pooled.run_dirs(), sequential.run_dirs()):
        assert comparable_records(a) == comparable_records(b)
        assert RunDir(a).summary().metrics == RunDir(b).summary().metrics
    result = CliRunner().invoke(cli, ["report", str(pooled.path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert len(out["runs"]) == 4
    # paired within the cells that asked the same questions: bm25 vs recent, per seed
    assert sorted((p["a"][-14:], p["b"][-16:]) for p in out["paired"]) == [
        ("c000-bm25-memsim-s0"[-14:], "c002-recent-memsim-s0"[-16:]),
        ("c001-bm25-memsim-s1"[-14:], "c003-recent-memsim-s1"[-16:]),
    ]


def test_eval_executor_options(tmp_path):
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "memsim",
            "-o",
            "n=3",
            "--quiet",
            "--output",
            str(tmp_path),
            "--executor",
            "local",
        ],
    )
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "memsim",
            "-o",
            "n=3",
            "--quiet",
            "--output",
            str(tmp_path),
            "--llm-limit",
            "8",
        ],
    )
    assert result.exit_code == 2 and "--executor ray" in result.output


def test_parse_llm_limit():
    assert parse_llm_limit("16") == {"*": 16}
    assert parse_llm_limit("openai/gpt-4o-mini=8,*=32") == {"openai/gpt-4o-mini": 8, "*": 32}
    assert parse_llm_limit({"a": 2}) == {"a": 2} and parse_llm_limit(4) == {"*": 4} and parse_llm_limit(None) == {}
    with pytest.raises(MemplugError):
        parse_llm_limit("x=0")
    with pytest.raises(MemplugError, match="unknown executor"):
        make_executor("dask")


def test_run_json_names_the_executor(testkit, tmp_path):
    from memplug.executors import make_executor
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    local = RunDir(Evaluation(RunSpec(agent="lookup", dataset="counting")).run(output=tmp_path / "a"))
    assert local.info().resolved["executor"] == {"name": "local"}
    with make_executor("local", workers=2) as pool:
        pooled = RunDir(
            Evaluation(RunSpec(agent="lookup", dataset="counting")).run(output=tmp_path / "b", executor=pool)
        )
    assert pooled.info().resolved["executor"] == {"name": "local", "workers": 2}


def _docs_sweep_toml(shared_data: Path) -> str:
    """The sweep.toml of docs/scale.md, as written (its data path pointed at the shared data)."""
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / "scale.md").read_text()
    blocks: list[str] = re.findall(r"```toml\n(.*?)```", text, re.S)
    block = next(b for b in blocks if b.startswith("# sweep.toml"))
    return block.replace("../shared/data", str(shared_data))


def test_the_docs_sweep_example_parses_and_dry_runs(tmp_path, shared_data):
    path = tmp_path / "sweep.toml"
    path.write_text(_docs_sweep_toml(shared_data))
    result = CliRunner().invoke(cli, ["sweep", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "18 cells"
    assert "hybrid on memdaily, seed 2" in result.output


def test_an_option_a_cell_refuses_names_the_cell(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        '[base]\noptions = { n = "20" }\n[grid]\nagents = ["bm25"]\n'
        'datasets = ["memsim", { name = "memdaily", data = "x" }]\n'
    )
    result = CliRunner().invoke(cli, ["sweep", str(path), "--dry-run"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert result.output.startswith(
        "memplug: error: cell c001 (bm25 on memdaily, options {'n': '20'}): -o n: "
        "neither the agent nor the dataset accepts it"
    )


LOCAL_LIMIT = "--address and --llm-limit are for --executor ray (locally, --concurrency bounds the LLM calls)"


@pytest.mark.parametrize(
    "head, args, error",
    [
        ("", ["--llm-limit", "16"], f"memplug: error: {LOCAL_LIMIT}"),
        ("llm_limit = 16\n", [], "llm_limit is for --executor ray"),
        ('executor = "local"\naddress = "auto"\n', [], "address is for --executor ray"),
        ("llm_tpm = true\n", [], "llm_tpm: true is not a number of tokens a minute"),
        ("llm_tpm = 1.5\n", [], "llm_tpm: 1.5 is not a number of tokens a minute"),
        ('llm_tpm = "=5"\n', [], "llm_tpm: '=5' has no model before '='"),
        ('llm_limit = { "a" = 0 }\n', ["--executor", "ray"], "llm_limit: a=0: at least 1 call"),
        ("", ["--llm-tpm", "a=1=2"], "memplug: error: --llm-tpm: 'a=1=2' has more than one '='"),
        ('executor = "dask"\n', [], "executor: 'dask' is not one of local, ray"),
    ],
)
@pytest.mark.parametrize("dry_run", [True, False])
def test_the_file_and_dry_run_refuse_what_the_command_line_refuses(tmp_path, head, args, error, dry_run):
    path = tmp_path / "s.toml"
    path.write_text(head + '[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\n')
    result = CliRunner().invoke(
        cli, ["sweep", str(path), "--output", str(tmp_path / "out"), *args, *(["--dry-run"] if dry_run else [])]
    )
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and error in result.output
    if head and not args:
        assert result.output.startswith(f"memplug: error: {path}: ")
    assert not (tmp_path / "out").exists()


def test_a_ray_file_run_with_executor_local_drops_its_ray_settings(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('executor = "ray"\nllm_limit = 16\n[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\n')
    result = CliRunner().invoke(cli, ["sweep", str(path), "--dry-run", "--executor", "local"])
    assert result.exit_code == 0, result.output


GRID = '[grid]\nagents = ["bm25", "recent"]\ndatasets = ["memsim"]\nseeds = [0, 1]\n'


@pytest.mark.parametrize(
    "base, error",
    [
        ("limit = -3", "cell c000 (bm25 on memsim, seed 0): limit = -3 is out of range: use a number from 1 or more"),
        ("limit = 2.5", "cell c000 (bm25 on memsim, seed 0): limit = 2.5: expected a whole number"),
        ('limit = "x"', "cell c000 (bm25 on memsim, seed 0): limit = 'x': expected a whole number"),
        ("sample_timeout = 0", "sample_timeout = 0 is out of range: use a number from 1 to 604800"),
        # a whole number whole ("1e+07" before)
        ("context_tokens = 0", "--context-tokens 0 is out of range: use a number from 1 to 10000000"),
        ("cache = 1", "cache = 1: expected true or false"),
        ("fail_under = [1]", "fail_under = [1]: expected a list of strings"),
        ('options = { n = "abc" }', "cell c000 (bm25 on memsim, seed 0, -o n=abc): option n='abc': expected int"),
        ("concurrency = 0", "cell c000 (bm25 on memsim, seed 0): --concurrency 0 is out of range"),
        ("top_k = -1", "--top-k -1 is out of range"),
        ('llm = "openai/gpt-4o-mini"', "--llm openai/gpt-4o-mini: openai needs OPENAI_API_KEY in the environment"),
        ('judge_prompt = "locomo-j"', "--judge-prompt locomo-j chooses the judge's prompts; it needs --judge MODEL"),
        ('max_errors = "lots"', "cell c000 (bm25 on memsim, seed 0): "),
    ],
)
@pytest.mark.parametrize("dry_run", [True, False])
def test_every_cell_is_checked_as_eval_checks_it_before_the_directory(tmp_path, monkeypatch, base, error, dry_run):
    """Each was a traceback (rc 1), a negative --limit drawing nothing, or a sweep directory
    whose cells all "failed" with a `sweep --resume` that could never finish them."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "s.toml"
    path.write_text(f"[base]\n{base}\n{GRID}")
    args = ["sweep", str(path), "--output", str(tmp_path / "out"), *(["--dry-run"] if dry_run else [])]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"memplug: error: {'' if error.startswith('cell') else 'cell c000 '}")
    assert error in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "text, error",
    [
        ('[base]\nseed = "x"\n[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\n', "seed = 'x': expected a whole"),
        ('[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\nseeds = ["a"]\n', "[grid] seeds: 'a' is not a whole"),
        ('[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\nseeds = [true]\n', "[grid] seeds: True is not a whole"),
        ('[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\nllms = ["openai/x"]\n', "openai needs OPENAI_API_KEY"),
        ('[base]\nno_cache = 1\n[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\n', "[base] no_cache = 1: expected"),
    ],
)
def test_a_bad_seed_or_model_is_one_line_before_the_directory(tmp_path, monkeypatch, text, error):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(MemplugError, match=re.escape(error)):
        Sweep.create(path, tmp_path / "out", {"name": "local"})
    assert not (tmp_path / "out").exists()


def test_a_checked_sweep_still_runs_and_its_cell_lines_fit_the_console(tmp_path, monkeypatch):
    """A cell's line was one line of 87 columns here: wrapped at a space between two
    metrics, never between a metric and its value."""
    monkeypatch.setenv("COLUMNS", "80")
    path = tmp_path / "s.toml"
    path.write_text(
        '[base]\noptions = { n = "4" }\n[grid]\nagents = ["bm25"]\ndatasets = ["memsim"]\nseeds = [1000000000]\n'
    )
    result = CliRunner().invoke(cli, ["sweep", str(path), "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    first = lines.index(next(line for line in lines if line.startswith("c000 ")))
    cell = [lines[first], *(line for line in lines[first + 1 :] if line.startswith(" " * 5))]
    assert len(cell) == 2 and all(len(line) <= 80 for line in cell), cell
    assert re.fullmatch(
        r"c000 bm25 on memsim, seed 1000000000, -o n=4: finished; accuracy \d\.\d{3}, recall@5 \d\.\d{3}",
        " ".join(line.strip() for line in cell),
    ), cell


def test_a_cell_below_its_fail_under_makes_the_sweep_exit_3(tmp_path):
    """A sweep file's fail_under was recorded in each cell's spec and never checked: a cell
    below it left the sweep's exit 0. A metric the cells do not score is refused on --dry-run,
    as `memplug eval` refuses it (it was accepted, and each cell failed after running)."""
    config = tmp_path / "gated.toml"
    config.write_text(CONFIG.replace('options = { n = "4" }', 'options = { n = "4" }\nfail_under = ["accuracy=0.99"]'))
    result = CliRunner().invoke(cli, ["sweep", str(config), "--output", str(tmp_path / "sweeps"), "--quiet"])
    assert result.exit_code == 3, result.output
    said = " ".join(result.stderr.split())
    assert said.count("memplug: below --fail-under: accuracy ") == 4, said
    config.write_text(CONFIG.replace('options = { n = "4" }', 'options = { n = "4" }\nfail_under = ["nosuch=0.5"]'))
    dry = CliRunner().invoke(cli, ["sweep", str(config), "--dry-run"])
    assert dry.exit_code == 2 and "--fail-under nosuch: the run scores no metric 'nosuch'" in dry.stderr


def test_report_of_a_sweep_reads_its_finished_cells_and_names_the_others(config, tmp_path):
    """A partial cell (its failed questions out of its means) was tabled and paired as if it
    had finished, and a failed cell was left out without a word."""
    sweep = Sweep.create(config, tmp_path, {"name": "local"})
    run_sweep(sweep, LocalExecutor())
    manifest = sweep.read()
    manifest["cells"][1].update(status="partial", error="3 of 4 questions failed")
    manifest["cells"][2].update(status="failed", error="agent set-up failed")
    sweep.write(manifest)
    assert sweep.run_dirs() == [sweep.path / manifest["cells"][i]["path"] for i in (0, 3)]
    result = CliRunner().invoke(cli, ["report", str(sweep.path)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert (
        f"memplug: {sweep.path}: 2 cells not reported, not finished (c001 partial: 3 of 4 questions failed; "
        f"c002 failed: agent set-up failed): memplug sweep --resume {sweep.path}"
    ) in result.stderr
    assert manifest["cells"][1]["run_id"] not in result.stdout and manifest["cells"][0]["run_id"] in result.stdout
