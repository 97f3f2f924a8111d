"""The README's commands run as written (those that need no LLM endpoint or earlier run), in
process through the console script's entry (tests/inprocess.py): the same arguments, exit
code and output as the installed `memplug` (which CI's base-install step also runs)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from inprocess import memplug_main

ROOT = Path(__file__).resolve().parents[1]
NEEDS_MORE = ("--llm", "<run", "--resume", "pip ", "python -m venv", "pytest")
#: agents that run a real external memory system (pyproject's `integration` marker): their
#: README commands run with `pytest -m integration`, beside the other tests of those systems
EXTERNAL_AGENTS = ("mem0", "letta", "cognee", "llamaindex", "graphiti", "mcp")


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line.startswith("memplug ") and not any(m in line for m in NEEDS_MORE)]


def readme_params() -> list[object]:
    return [
        pytest.param(c, marks=pytest.mark.integration)
        if re.search(rf"--agent ({'|'.join(EXTERNAL_AGENTS)})\b", c)
        else c
        for c in readme_commands()
    ]


def test_the_readme_has_the_commands_this_test_runs():
    commands = readme_commands()
    assert any(c.startswith("memplug eval --agent bm25 --dataset memsim") for c in commands)
    assert any(c.startswith("memplug generate") for c in commands)
    assert any("memdaily" in c for c in commands) and any("factcon" in c for c in commands)


@pytest.mark.slow
@pytest.mark.parametrize("command", readme_params())
def test_readme_command_runs(command, tmp_path, shared_data):
    argv = shlex.split(command.replace("../shared/data", str(shared_data)))[1:]
    res = memplug_main(argv, cwd=tmp_path)
    assert res.returncode == 0, f"{command}\n{res.stderr[-2000:]}"
