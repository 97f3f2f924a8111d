"""`memplug eval --resume RUN`: a finished run is left as it is, a run with failed questions
is retried, and a run on relative --data resumes from any directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from inprocess import memplug_main

from memplug.results import RunDir


def memplug(env: dict[str, str] | None, cwd: Path, *args: object) -> tuple[int, str, str]:
    """`memplug ARGS` in process: exit code, stdout, stderr."""
    done = memplug_main(args, env=env, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def files(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}


def test_a_finished_run_has_nothing_to_resume_and_is_not_rewritten(testkit_env: dict[str, str], tmp_path: Path) -> None:
    # below its --fail-under (exit 3 the first time): the resume checks no gate again
    args = ("eval", "--agent", "lookup", "--dataset", "counting", "-o", "wrong=q1", "--fail-under", "em=0.99")
    code, out, err = memplug(testkit_env, tmp_path, *args, "--quiet")
    assert code == 3, err
    run = tmp_path / out.strip().splitlines()[-1]
    before = files(run)
    code, out, err = memplug(testkit_env, tmp_path, "eval", "--resume", run)
    assert code == 0 and out == "", out
    assert err.strip().splitlines() == [f"{run} is finished: nothing to resume (memplug report {run} shows it)"]
    assert files(run) == before
    # another scored option is still refused, not passed over as finished
    code, _, err = memplug(testkit_env, tmp_path, "eval", "--resume", run, "--top-k", "3")
    assert code == 2 and "options differ from run.json" in err, err
    # samples.jsonl short of what run.json counts (a line lost): the resume asks them again
    (run / "samples.jsonl").write_text("".join((run / "samples.jsonl").read_text().splitlines(keepends=True)[:-1]))
    code, _, err = memplug(testkit_env, tmp_path, "eval", "--resume", run, "--quiet")
    assert code == 3 and "nothing to resume" not in err, err  # and its gate checked again
    assert len(RunDir(run).records()) == 18


def test_a_run_with_failed_questions_is_resumed(testkit_env: dict[str, str], tmp_path: Path) -> None:
    args = ("eval", "--agent", "lookup", "--dataset", "counting", "-o", "fail_question=q1", "--quiet")
    code, out, err = memplug(testkit_env, tmp_path, *args)
    assert code == 1, err
    run = tmp_path / out.strip().splitlines()[-1]
    before = json.loads((run / "run.json").read_bytes())
    code, _, err = memplug(testkit_env, tmp_path, "eval", "--resume", run, "--quiet")
    assert code == 1 and "nothing to resume" not in err and "retry them with" in err, err
    after = json.loads((run / "run.json").read_bytes())
    assert after["status"] == "partial" and after["wall_s"] > before["wall_s"]


def test_a_run_on_relative_data_resumes_from_another_directory(shared_data: Path, tmp_path: Path) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    shutil.copytree(shared_data / "memdaily", here / "memdaily")
    elsewhere.mkdir()
    args = ("--agent", "bm25", "--dataset", "memdaily", "--data", "memdaily", "--limit", "20", "--quiet")
    code, out, err = memplug(None, here, "eval", *args)
    assert code == 0, err
    run = here / out.strip().splitlines()[-1]
    info = RunDir(run).info()
    assert info.spec["data"] == "memdaily"  # as given, and where it was beside it
    assert info.resolved["data_path"] == str((here / "memdaily").resolve())
    # as if interrupted after its first sample
    lines = (run / "samples.jsonl").read_text().splitlines(keepends=True)
    first = json.loads(lines[0])["sample_id"]
    (run / "samples.jsonl").write_text("".join(line for line in lines if json.loads(line)["sample_id"] == first))
    run_json = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**run_json, "status": "interrupted"}))
    code, _, err = memplug(None, elsewhere, "eval", "--resume", run, "--quiet")
    assert code == 0, err
    assert RunDir(run).info().status == "finished" and len(list(RunDir(run).records())) == 20
    # --data given again, relative to this directory: the same files, not another option
    code, _, err = memplug(None, here, "eval", "--resume", run, "--data", "./memdaily/", "--quiet")
    assert code == 0 and "nothing to resume" in err, err


def test_a_resumed_sample_starts_from_an_empty_work_folder(testkit_env: dict[str, str], tmp_path: Path) -> None:
    """A sample the interrupted run left unfinished kept its agent's folder under work/, and the
    resume built its agent on it: mem0's Qdrant held every message twice and scored lower than
    a run never interrupted (run.json said finished). The folder is emptied first now; a
    finished sample's is left as it is."""
    code, out, err = memplug(testkit_env, tmp_path, "eval", "--agent", "lookup", "--dataset", "counting", "--quiet")
    assert code == 0, err
    run = tmp_path / out.strip().splitlines()[-1]
    lines = (run / "samples.jsonl").read_text().splitlines(keepends=True)
    first = json.loads(lines[0])["sample_id"]
    (run / "samples.jsonl").write_text("".join(line for line in lines if json.loads(line)["sample_id"] == first))
    run_json = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**run_json, "status": "interrupted"}))
    folders = sorted(p for p in (run / "work").iterdir() if p.is_dir())
    assert len(folders) > 1 and (run / "work" / first) in folders
    for folder in folders:  # what an earlier try would have left in each
        (folder / "left-by-the-first-try.txt").write_text("stale")
    code, _, err = memplug(testkit_env, tmp_path, "eval", "--resume", run, "--quiet")
    assert code == 0, err
    for folder in folders:
        assert (folder / "left-by-the-first-try.txt").exists() == (folder.name == first), folder
        assert (folder / "memory.txt").exists()  # the agent's own, written again
