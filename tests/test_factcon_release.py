"""The factcon loader on MemoryAgentBench's release rows (../shared/data) and on broken files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

import attrs
import pytest

from memplug.datasets.factcon.builder import FactConBuilder
from memplug.errors import DataError
from memplug.models import Sample
from memplug.protocols import BuildOptions


def load(path: Path) -> list[Sample]:
    # one message per fact: what the release holds (the default unit, MemoryAgentBench's chunks,
    # is tested in test_protocol_factcon.py)
    return list(FactConBuilder().build(BuildOptions(values={"unit": "fact"}, data=path)))


def row(
    context: str = "Here is a list of facts:\n0. A is married to B.\n1. A is married to C.\n",
    questions: Sequence[str] = ("Who is A married to?",),
    answers: Sequence[Sequence[str]] = (["C"],),
    ids: Sequence[str] = ("factconsolidation_sh_6k_no0",),
) -> dict[str, Any]:
    return {
        "context": context,
        "questions": list(questions),
        "answers": [list(a) for a in answers],
        "metadata": {"qa_pair_ids": list(ids), "source": "factconsolidation_sh_6k", "demo": None},
    }


@pytest.mark.parametrize("kind", ["sh", "mh"])
def test_release_rows_match_the_files(shared_data: Path, kind: str) -> None:
    path = shared_data / "factconsolidation" / f"factconsolidation_{kind}_6k.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    serials = [int(m.group(1)) for m in re.finditer(r"^(\d+)\. ", raw["context"], flags=re.M)]
    (sample,) = load(path)
    assert sample.id == f"factconsolidation_{kind}_6k"
    assert len(sample.messages) == len(serials)
    assert [m.id for m in sample.messages] == [str(n) for n in serials] == [str(n) for n in range(len(serials))]
    assert all(m.text.startswith(f"{m.id}. ") for m in sample.messages)
    assert len(sample.questions) == len(raw["questions"])
    assert [q.text for q in sample.questions] == raw["questions"]
    assert [list(q.answers) for q in sample.questions] == raw["answers"]
    assert [q.id for q in sample.questions] == raw["metadata"]["qa_pair_ids"]
    assert {q.category for q in sample.questions} == {kind}
    assert sample.meta["header"] == "Here is a list of facts:"
    assert sample.meta["contiguous_serials"] is True
    json.dumps(attrs.asdict(sample))  # the lead writes samples as JSONL


def test_directory_loads_every_file_sorted(shared_data: Path) -> None:
    samples = load(shared_data / "factconsolidation")
    assert [s.id for s in samples] == ["factconsolidation_mh_6k", "factconsolidation_sh_6k"]
    assert sum(len(s.questions) for s in samples) == 200


def test_one_row_or_a_list_of_rows(tmp_path: Path) -> None:
    single = tmp_path / "one.json"
    single.write_text(json.dumps(row()))
    several = tmp_path / "many.json"
    several.write_text(json.dumps([row(), row(ids=("factconsolidation_mh_6k_no0",))]))
    (one,) = load(single)
    assert [m.text for m in one.messages] == ["0. A is married to B.", "1. A is married to C."]
    assert one.questions[0].answers == ("C",)
    two = load(several)
    assert [s.id for s in two] == ["factconsolidation_sh_6k", "factconsolidation_sh_6k#1"]
    assert [s.questions[0].category for s in two] == ["sh", "mh"]


def test_truncated_file_names_the_file_and_position(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(row())[:40])
    with pytest.raises(DataError, match=r"cut\.json: invalid JSON at line 1 column \d+: "):
        load(path)


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ({"context": None}, r"row\.context: expected str"),
        ({"questions": None}, r"row\.questions: expected list"),
        ({"answers": [["C"], ["D"]]}, r"row\.answers: 2 answers for 1 questions"),
        ({"answers": [[]]}, r"row\.answers\[0\]: expected a non-empty list"),
        ({"metadata": {"source": "x"}}, r"row\.metadata: qa_pair_ids must list one id per question"),
        (
            {"context": "Here is a list of facts:\n1. A.\n0. B."},
            r"row\.context line 3: serial number 0 does not follow 1",
        ),
        ({"context": "Here is a list of facts:\n0. A.\nstray text"}, r"row\.context line 3: expected a numbered fact"),
        ({"context": "Here is a list of facts:"}, r"row\.context: context holds no numbered facts"),
    ],
)
def test_malformed_rows_name_the_place(tmp_path: Path, broken: dict[str, Any], message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**row(), **broken}))
    with pytest.raises(DataError, match=r"bad\.json: " + message):
        load(path)


def test_missing_key_and_unknown_kind(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    data = row()
    del data["answers"]
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"bad\.json: row: missing key 'answers'"):
        load(path)
    data = row(ids=("qa0",))
    data["metadata"]["source"] = "mystery"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"qa_pair_ids\[0\]: cannot tell single-hop from multi-hop"):
        load(path)


def test_directory_without_json_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no \\*.json or \\*.parquet FactConsolidation files"):
        load(tmp_path)
