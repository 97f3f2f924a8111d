"""The Ray executor on a local 2-CPU Ray bound to loopback (one cluster for the module:
starting Ray costs 4-8 s): a sharded run and a sweep give the records and scores of an
in-process run (timings apart), a resumed sharded run and a run whose worker is killed
mid-sample finish with every question once, and --llm-limit holds across workers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from plugin_dists import write_dist  # noqa: E402

import attrs  # noqa: E402

from memplug.errors import RunStopped  # noqa: E402
from memplug.executors import RayExecutor, ray_init  # noqa: E402
from memplug.results import RunDir, read_records  # noqa: E402
from memplug.runner import Evaluation, RunSpec  # noqa: E402
from memplug.testing import comparable_records  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TESTKIT = Path(__file__).resolve().parents[1] / "testkit"


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A local Ray with 2 CPUs, on 127.0.0.1 only, no dashboard, for this module's tests (shut
    down after them: the suite's other tests do not run beside Ray's processes); its workers
    find the testkit plugin (agent `lookup`, dataset `counting`) through a real entry point."""
    site = tmp_path_factory.mktemp("ray-site")
    write_dist(site, "memplug-testkit", "0.0.1", {"testkit": "memplug_testkit"})
    env = pytest.MonkeyPatch()
    env.delenv("RAY_ADDRESS", raising=False)
    env.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # (ray_init sets it too; undone after the module)
    ray_init(num_cpus=2, runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(TESTKIT), str(site)])}})
    yield ray
    ray.shutdown()
    env.undo()


def _listening_outside_loopback() -> list[str]:
    """The TCP sockets listening on an address other than loopback that a Ray process holds
    (from /proc: no tool needed)."""
    outside = set()
    for name in ("tcp", "tcp6"):
        path = Path("/proc/net") / name
        if not path.is_file():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            address = local.split(":")[0]
            loopback = address in ("0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F")
            if state == "0A" and not loopback:  # 0A: LISTEN
                outside.add(inode)
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if not any(k in cmdline for k in ("gcs_server", "raylet", "ray::", "default_worker", "ray/_private")):
                continue
            for fd in (proc / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:[") and target[8:-1] in outside:
                    found.append(f"{cmdline[:60]} (pid {proc.name})")
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def pool(ray_cluster):  # (the tests using it come last: its workers hold the cluster's 2 CPUs)
    """Two workers shared by the tests that need no settings of their own (a worker's start
    costs seconds); they load the testkit by its entry point, as a cluster's workers would
    load an installed plugin."""
    with RayExecutor(runtime_env={"env_vars": {"MEMPLUG_LOAD_PLUGINS": "memplug-testkit"}}) as executor:
        yield executor


def _same_summary(a: Path, b: Path) -> None:
    sa, sb = RunDir(a).summary().to_json(), RunDir(b).summary().to_json()
    for key in ("metrics", "ci", "n", "n_questions", "n_errors", "status", "llm", "unanswerable"):
        assert sa[key] == sb[key], key


def _keys(path: Path) -> list[tuple[str, str]]:
    return [r.key for r in read_records(path / "samples.jsonl")[0]]


# first the tests with executors of their own: the pool's workers below hold both CPUs


def test_ray_listens_on_loopback_only(ray_cluster):
    assert ray.nodes()[0]["NodeManagerAddress"] == "127.0.0.1"
    assert _listening_outside_loopback() == []


KILLED_DRIVER = """
import sys, time
from memplug.executors import RayExecutor
RayExecutor(num_cpus=1, workers=1).start()
print("ready", flush=True)
time.sleep(300)
"""


def test_a_killed_drivers_ray_processes_end_within_seconds():
    """After a SIGKILL of `memplug eval --executor ray`, ray::DashboardAgent and
    ray::RuntimeEnvAgent (about 200 MB) lived on for one to two minutes (issue 26): the
    raylet's children do not die with the driver as the raylet does. memplug.ray_reaper
    ends them."""
    from memplug import ray_reaper

    driver = subprocess.Popen(
        [sys.executable, "-c", KILLED_DRIVER],
        stdout=subprocess.PIPE,
        text=True,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
    )
    try:
        assert driver.stdout is not None and driver.stdout.readline() == "ready\n"
        table = ray_reaper.processes()
        session = ray_reaper.descendants({(driver.pid, table[driver.pid][1])}, table) - {
            (driver.pid, table[driver.pid][1])
        }
        agents = [
            pid
            for pid, _ in session
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith((b"ray::DashboardAgent", b"ray::RuntimeEnvAgent"))
        ]
        assert len(agents) == 2 and len(session) >= 6  # gcs, raylet, the agents, a worker, the reaper...
    finally:
        driver.kill()
        driver.wait()
    t0 = time.monotonic()
    while ray_reaper.descendants(session, ray_reaper.processes()) and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    elapsed, left = time.monotonic() - t0, ray_reaper.descendants(session, ray_reaper.processes())
    assert not left, f"{len(left)} of the session's processes alive after 30 s"
    assert elapsed < 5, elapsed


@pytest.mark.parametrize("times", [1, 2])
def test_ctrl_c_on_ray_stops_within_a_second(testkit_env, tmp_path, times):
    """Ctrl-C took up to 5 s on Ray (the cancelled samples waited for, the workers closed one
    by one, ray.shutdown()); now as in process: the records kept, one line naming the
    directory to resume, exit 130, and a second Ctrl-C changes nothing but the wait. What
    Ray started here ends with the process (memplug.ray_reaper)."""
    import signal

    from memplug import ray_reaper

    env = {k: v for k, v in testkit_env.items() if k != "RAY_ADDRESS"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memplug.cli",
            "eval",
            "--agent",
            "lookup",
            "--dataset",
            "counting",
            "-o",
            "samples=2000",
            "-o",
            "delay=0.05",
            "--executor",
            "ray",
            "--workers",
            "1",
            "--quiet",
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not [p for p in tmp_path.glob("runs/*/samples.jsonl") if p.read_bytes().count(b"\n") >= 20]:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    table = ray_reaper.processes()
    session = ray_reaper.descendants({(process.pid, table[process.pid][1])}, table)
    t0 = time.monotonic()
    process.send_signal(signal.SIGINT)
    if times == 2:
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    elapsed = time.monotonic() - t0
    (path,) = (tmp_path / "runs").iterdir()
    assert process.returncode == 130, err
    assert err == f"memplug: interrupted; finish the run with: memplug eval --resume runs/{path.name}\n"
    assert elapsed < 1.5, elapsed
    run = RunDir(path)
    outcome = run.summary().outcome
    assert run.info().status == "interrupted" and outcome is not None and outcome.status == "interrupted"
    assert outcome.n_answered == len(run.records()) >= 20
    deadline = time.monotonic() + 10
    while ray_reaper.descendants(session, ray_reaper.processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ray_reaper.descendants(session, ray_reaper.processes())


@pytest.mark.parametrize("times", [1, 2])
def test_ctrl_c_on_a_ray_sweep_stops_within_a_second(testkit_env, tmp_path, times):
    """`memplug sweep --executor ray`: Ctrl-C named the running cell's `eval --resume`
    (which finishes that cell alone) and shut the Ray session down in full; now as
    `memplug eval` on Ray, with the sweep's own resume command, and the cells' records kept."""
    import signal

    from memplug import ray_reaper
    from memplug.sweep import Sweep, cell_state

    env = {k: v for k, v in testkit_env.items() if k != "RAY_ADDRESS"}
    (tmp_path / "s.toml").write_text(
        '[base]\nagent = "lookup"\ndataset = "counting"\n'
        'options = { delay = "0.05" }\n'
        '[grid]\noptions = [{ samples = "2" }, { samples = "2000" }]\n'
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memplug.cli",
            "sweep",
            "s.toml",
            "--output",
            "sw",
            "--executor",
            "ray",
            "--workers",
            "1",
            "--quiet",
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not [p for p in tmp_path.glob("sw/*/runs/*-c001-*/samples.jsonl") if p.read_bytes().count(b"\n") >= 20]:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    table = ray_reaper.processes()
    session = ray_reaper.descendants({(process.pid, table[process.pid][1])}, table)
    t0 = time.monotonic()
    process.send_signal(signal.SIGINT)
    if times == 2:
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    elapsed = time.monotonic() - t0
    (path,) = (tmp_path / "sw").iterdir()
    assert process.returncode == 130, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.endswith(f"finish the sweep with: memplug sweep --resume sw/{path.name}\n"), err
    assert elapsed < 1.5, elapsed
    sweep = Sweep(path)
    manifest = sweep.read()
    assert [cell_state(path, c) for c in manifest["cells"]] == ["finished", "resume"]
    if times == 1:
        assert manifest["status"] == "interrupted"
        run = RunDir(path / manifest["cells"][1]["path"])
        outcome = run.summary().outcome
        assert run.info().status == "interrupted" and outcome is not None
        assert outcome.n_answered == len(run.records()) >= 20
    deadline = time.monotonic() + 10
    while ray_reaper.descendants(session, ray_reaper.processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ray_reaper.descendants(session, ray_reaper.processes())


def test_sweep_cli_on_ray_matches_local(ray_cluster, tmp_path):
    """`memplug sweep --executor ray`: each cell's records and summary as a local sweep's."""
    from click.testing import CliRunner

    from memplug.cli import cli
    from memplug.executors import LocalExecutor
    from memplug.sweep import Sweep, run_sweep

    config = tmp_path / "sweep.toml"
    config.write_text(
        'name = "small"\n[base]\nconcurrency = 2\noptions = { n = "6" }\n'
        '[grid]\nagents = ["bm25", "recent"]\ndatasets = ["memsim"]\nseeds = [0, 1]\n'
    )
    result = CliRunner().invoke(
        cli, ["sweep", str(config), "--output", str(tmp_path / "ray"), "--quiet", "--executor", "ray", "--workers", "2"]
    )
    assert result.exit_code == 0, result.output
    on_ray = Sweep(Path(result.output.strip().splitlines()[-1]))
    manifest = on_ray.read()
    assert manifest["status"] == "finished" and manifest["executor"]["name"] == "ray"
    assert ray.is_initialized()  # an executor never shuts down a Ray it did not start
    local = Sweep.create(config, tmp_path / "local", {"name": "local"})
    run_sweep(local, LocalExecutor())
    ids = [c["run_id"] for c in manifest["cells"]]
    assert len(ids) == len(set(ids)) == 4
    assert manifest["sweep_id"] != local.read()["sweep_id"]
    for a, b in zip(on_ray.run_dirs(), local.run_dirs()):
        assert comparable_records(a) == comparable_records(b)
        _same_summary(a, b)


def test_llm_limit_holds_across_workers(ray_cluster, openai_stub, monkeypatch, tmp_path):
    """Two workers of 4 samples each, but at most one LLM call in flight in the cluster."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_stub.latency = 0.02
    spec = RunSpec(
        agent="bm25",
        dataset="memsim",
        dataset_options={"n": "12"},
        llm="openai/stub",
        api_base=openai_stub.base_url,
        reader="llm",
        concurrency=4,
        cache=False,
    )
    with RayExecutor(llm_limit={"*": 1}) as executor:
        path = Evaluation(spec).run(output=tmp_path, executor=executor)
        stats = executor.limiter_stats()
        outcome = RunDir(path).summary().outcome
        assert outcome is not None and outcome.status == "finished"
        assert len(openai_stub.chat_requests) >= 12
        assert openai_stub.max_in_flight == 1
        assert stats is not None and stats["peak"] == {"openai/stub": 1}

        # a failure no question can get past (the key refused), met in a worker, stops the run as locally
        stopped = Evaluation(attrs.evolve(spec, seed=1))
        openai_stub.fail_next(1000, "401")
        with pytest.raises(RunStopped) as caught:
            stopped.run(output=tmp_path / "stopped", executor=executor)
    assert "401" in str(caught.value) and "Traceback" not in str(caught.value)
    run = RunDir(Path(caught.value.run_dir)).info()
    assert run.status in ("failed", "partial") and run.outcome is not None and "401" in str(run.outcome.stopped)


def test_llm_tpm_is_one_budget_for_all_workers(ray_cluster, openai_stub, monkeypatch, tmp_path):
    """--llm-tpm on Ray: every call of both workers takes from and settles with the limiter
    actor's one bucket (its waiting is tested with an injected clock in test_llm_tpm.py)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spec = RunSpec(
        agent="bm25",
        dataset="memsim",
        dataset_options={"n": "12"},
        llm="openai/stub",
        api_base=openai_stub.base_url,
        reader="llm",
        concurrency=4,
        cache=False,
    )
    with RayExecutor(workers=2, llm_tpm={"openai/stub": 10_000_000}) as executor:
        path = Evaluation(spec).run(output=tmp_path, executor=executor)
        stats = executor.limiter_stats()
    run = RunDir(path)
    outcome = run.summary().outcome
    assert outcome is not None and outcome.status == "finished"
    assert run.info().resolved["executor"]["llm_tpm"] == {"openai/stub": 10_000_000}
    usage = [r.usage for r in run.records()]
    assert stats is not None
    assert stats["tokens_used"] == {"openai/stub": sum(u.prompt_tokens + u.completion_tokens for u in usage if u)} != {}


def test_sharded_run_and_resume_match_in_process(pool, tmp_path):
    spec = RunSpec(agent="bm25", dataset="memsim", dataset_options={"n": "16"}, concurrency=2)
    local = Evaluation(spec).run(output=tmp_path / "local")
    assert len(pool.actors) == 2
    sharded = Evaluation(spec).run(output=tmp_path / "ray", executor=pool)
    assert comparable_records(sharded) == comparable_records(local)
    _same_summary(sharded, local)
    for name in ("run.json", "samples.jsonl", "summary.json"):
        assert (sharded / name).is_file() and (local / name).is_file()
    assert not (sharded / "work").exists()  # bm25 stores nothing on disk, locally or on a worker
    # what the agent stored: written by the driver from what the workers returned, as locally
    assert sorted((sharded / "stored.jsonl").read_text().splitlines()) == sorted(
        (local / "stored.jsonl").read_text().splitlines()
    )

    # a run killed half-way: its last records and its summary lost; --resume on Ray finishes it
    lines = (sharded / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (sharded / "samples.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:7])
    (sharded / "summary.json").unlink()
    resumed = Evaluation(spec).run(resume=sharded, executor=pool)
    keys = _keys(resumed)
    assert len(keys) == len(set(keys)) == 16
    assert comparable_records(resumed) == comparable_records(local)
    _same_summary(resumed, local)
    assert RunDir(resumed).info().status == "finished"


def test_killed_worker_is_replaced_and_its_samples_rerun(pool, testkit, tmp_path):
    marker = tmp_path / "died"
    base: dict[str, Any] = dict(
        agent="lookup",
        dataset="counting",
        dataset_options={"samples": "8", "questions": "3"},
        concurrency=2,
        agent_options={"delay": "0.05"},
    )
    local = Evaluation(RunSpec(**base)).run(output=tmp_path / "local")
    spec = RunSpec(**{**base, "agent_options": {"delay": "0.05", "die_once": str(marker)}})
    before = pool.worker_pids()
    path = Evaluation(spec).run(output=tmp_path / "ray", executor=pool)
    after = pool.worker_pids()
    assert pool.retried >= 1
    assert marker.exists()  # a worker did die (os._exit) in the middle of a sample
    assert set(before) != set(after)  # and was replaced
    keys = _keys(path)
    assert len(keys) == len(set(keys)) == 24  # every question once: nothing lost, nothing twice
    assert RunDir(path).info().status == "finished"
    assert comparable_records(path) == comparable_records(local)
    _same_summary(path, local)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
