"""A stub LLM that speaks the external systems' formats, and runs of them on the counting dataset.

The loopback OpenAI stub (tests/openai_stub.py) answers every chat request; `system_reply`
makes those answers valid for what each library parses: Mem0's fact extraction
(`{"memory": [...]}`), Cognee's chunk summaries and knowledge graphs, and plain
answers for readers. Facts and answers are taken from the request itself, so what a
system stores and recalls still depends on what it was given.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memplug.record import QuestionRecord

if TYPE_CHECKING:
    from openai_stub import OpenAIStub

    from memplug.results import RunDir

#: one counting-dataset sentence ("Item 0-1 is lamp."); tests use that dataset
ITEM = re.compile(r"Item \d+-\d+ is \w+\.")


def _system_and_user(body: dict[str, Any]) -> tuple[str, str]:
    system = user = ""
    for message in body.get("messages") or []:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        if message.get("role") == "system":
            system += content
        elif message.get("role") == "user":
            user = content
    return system, user


def system_reply(body: dict[str, Any]) -> str:
    """A reply each library accepts, built from the sentences in the request."""
    system, user = _system_and_user(body)
    if "Memory Extractor" in system:  # Mem0's additive extraction: facts from the new messages only
        new = user.split("## New Messages", 1)[-1].split("## Observation Date", 1)[0]
        return json.dumps({"memory": [{"id": str(i), "text": s} for i, s in enumerate(ITEM.findall(new))]})
    if "knowledge graph" in system:  # Cognee's graph extraction
        nodes, edges = [], []
        for sentence in ITEM.findall(user):
            item, value = sentence.rstrip(".").split(" is ")
            nodes += [
                {"id": item, "name": item, "type": "Item", "description": sentence},
                {"id": value, "name": value, "type": "Word", "description": value},
            ]
            edges.append({"source_node_id": item, "target_node_id": value, "relationship_name": "is"})
        return json.dumps({"nodes": nodes, "edges": edges})
    if "Summarize" in system:  # Cognee's chunk summaries
        return json.dumps({"summary": " ".join(ITEM.findall(user)) or "nothing"})
    question = re.search(r"[Ww]hat is (item \d+-\d+)\?", user)
    if question:  # a reader: the word the memory gives for the item asked about
        found = re.search(rf"{question.group(1)} is (\w+)", user, re.IGNORECASE)
        answer = found.group(1) if found else "unknown"
    else:
        answer = "ok"
    fmt = (body.get("response_format") or {}).get("type")
    return json.dumps({"answer": answer}) if fmt in ("json_object", "json_schema") else answer


def evaluate(tmp_path: Path, agent: str, stub: OpenAIStub, **kw: Any) -> RunDir:
    """One in-process run of `agent` on the counting dataset against the stub; its RunDir."""
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    spec = RunSpec(
        agent=agent,
        dataset="counting",
        llm="openai/stub",
        api_base=stub.base_url,
        reader="llm",
        top_k=2,
        dataset_options={"samples": "2", "questions": "2", "messages": "4"},
        **kw,
    )
    return RunDir(Evaluation(spec).run(output=tmp_path / "runs"))


def assert_isolated(records: list[QuestionRecord]) -> None:
    """No sample recalls anything of another: every recalled sentence names its own sample."""
    for record in records:
        sample = record.sample_id.removeprefix("s")
        for item in record.recalled:
            for sentence in ITEM.findall(item.text):
                assert sentence.startswith(f"Item {sample}-"), (record.sample_id, item.text)


def cli_evaluate(tmp_path: Path, env: dict[str, str], agent: str, stub: OpenAIStub, *args: str) -> RunDir:
    """The same run through `memplug eval` in a subprocess (the testkit found by entry point); its RunDir.

    Cognee needs this: its module-level asyncio locks bind to the first event loop that
    contends them, so one process can hold one Cognee evaluation, as `memplug eval` does.
    """
    import subprocess
    import sys

    from memplug.results import RunDir

    output = tmp_path / "runs"
    cmd = [
        sys.executable,
        "-m",
        "memplug.cli",
        "eval",
        "--agent",
        agent,
        "--dataset",
        "counting",
        "--llm",
        "openai/stub",
        "--api-base",
        stub.base_url,
        "--reader",
        "llm",
        "--top-k",
        "2",
        "-o",
        "samples=2",
        "-o",
        "questions=2",
        "-o",
        "messages=4",
        "--output",
        str(output),
        "--quiet",
        *args,
    ]
    done = subprocess.run(cmd, env={**env, "OPENAI_API_KEY": "sk-test"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = [p for p in output.iterdir() if p.is_dir()]
    return RunDir(run)
