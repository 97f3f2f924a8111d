"""The perltqa loader on schema fixtures of the English v2 release, and on broken files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from memplug.datasets.perltqa.builder import PerLTQABuilder
from memplug.datasets.perltqa.schema import PROFILE_FIELDS
from memplug.errors import DataError
from memplug.models import Sample
from memplug.protocols import BuildOptions

FIXTURES = Path(__file__).parent / "fixtures" / "perltqa"
MEMORY, QA = "perltmem_en_v2.json", "perltqa_en_v2.json"


def load(data: Path, **values: Any) -> list[Sample]:
    return list(PerLTQABuilder().build(BuildOptions(values=values, data=data)))


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    for name in (MEMORY, QA):
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path


def edit(path: Path, change: Callable[[Any], object]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_fixture_directory_loads_one_sample_per_character_with_questions() -> None:
    samples = load(FIXTURES)
    assert [s.id for s in samples] == ["Wang Xiaoming", "Li Hua"]  # "Nobody Asked" has no QA
    wang = samples[0]
    ids = [m.id for m in wang.messages]
    assert ids == [f"profile/{f}" for f in PROFILE_FIELDS] + [
        "profile_description",
        "1_0",
        "1_1",
        "1_0_0",
        "1_1_0",
        "1_0_0#0",
    ]
    kinds = {m.id: (m.meta["kind"], m.meta["memory_type"]) for m in wang.messages}
    assert kinds["profile/Age"] == ("profile", "semantic") and kinds["1_1"] == ("social_relationship", "semantic")
    assert kinds["1_0_0"] == ("events", "episodic") and kinds["1_0_0#0"] == ("dialogues", "episodic")
    by_id = {m.id: m for m in wang.messages}
    assert by_id["profile/Age"].text == "Wang Xiaoming's age: 28"
    assert by_id["1_0"].text.startswith("Wang Xiaohong is Wang Xiaoming's elder sister. Wang Xiaoming's sister")
    assert by_id["1_0_0"].time == "May 12, 2022"
    assert by_id["1_0_0#0"].text.splitlines()[0] == "[2022-05-20 10:00]"
    assert wang.meta["n_semantic"] == 17 and wang.meta["n_episodic"] == 3
    json.dumps([attrs.asdict(s) for s in samples])


def test_questions_keep_references_anchors_and_memory_types() -> None:
    wang = load(FIXTURES)[0]
    q = {x.id: x for x in wang.questions}
    assert len(q) == 7
    gender = q["Wang Xiaoming/profile/profile/0"]
    assert (gender.category, gender.meta["memory_type"], gender.targets) == ("profile", "semantic", ("profile/Gender",))
    assert gender.answers == ("Wang Xiaoming is male.",) and gender.anchors == ("male",)
    degree = q["Wang Xiaoming/profile/profile/1"]
    assert degree.anchors == ("Bachelor's degree in Computer Science",)  # &#39; decoded
    trip = q["Wang Xiaoming/events/1_0_0/0"]
    assert trip.meta["memory_type"] == "episodic" and trip.targets == ("1_0_0",)
    assert trip.anchors == ("Grand Canyon", "cliffs")
    assert trip.meta["anchor_spans"] == [["Grand Canyon", 12, 14], ["cliffs", -1, -1]]
    assert q["Wang Xiaoming/events/1_0_0/1"].targets == ("1_0_0", "1_0")
    dangling = q["Wang Xiaoming/events/1_0_0/2"]
    assert dangling.targets == () and dangling.meta["unresolved_references"] == ["1_1_9"]
    assert q["Wang Xiaoming/dialogues/1_0_0#0/0"].targets == ("1_0_0#0",)
    assert q["Wang Xiaoming/social_relationship/1_0/0"].meta["memory_type"] == "semantic"


def test_memory_file_as_data_finds_or_takes_the_qa_file(copy: Path, tmp_path: Path) -> None:
    assert len(load(copy / MEMORY)) == 2
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    shutil.move(copy / QA, elsewhere / "questions.json")
    with pytest.raises(DataError, match=r"expected exactly one QA file matching \*qa\*\.json \(found: none\)"):
        load(copy / MEMORY)
    assert len(load(copy / MEMORY, qa=elsewhere / "questions.json")) == 2


def test_ambiguous_directory_is_an_error(copy: Path) -> None:
    shutil.copy(copy / QA, copy / "perltqa_zh.json")
    with pytest.raises(DataError, match=r"found: perltqa_en_v2\.json, perltqa_zh\.json"):
        load(copy)


@pytest.mark.parametrize("name", [MEMORY, QA])
def test_truncated_files_name_the_file(copy: Path, name: str) -> None:
    text = (copy / name).read_text(encoding="utf-8")
    (copy / name).write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(DataError, match=rf"{name}: invalid JSON at line \d+ column \d+: "):
        load(copy)


def _qa_item(data):
    return data[0]["Wang Xiaoming"]["events"][0]["1_0_0"][0]


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        (
            QA,
            lambda d: d[0]["Wang Xiaoming"].update(hobbies=[]),
            r"perltqa_en_v2\.json: \['Wang Xiaoming'\]\.hobbies: unknown section",
        ),
        (QA, lambda d: _qa_item(d).pop("Answer"), r"\.events\[0\]\.1_0_0\[0\]: missing key 'Answer'"),
        (
            QA,
            lambda d: _qa_item(d).update({"Reference Memory": "['1_0_0'"}),
            r"1_0_0\[0\]\.Reference Memory: cannot parse reference list",
        ),
        (
            QA,
            lambda d: _qa_item(d).update({"Memory Anchors": [{"Grand Canyon": ["a", 2]}]}),
            r"Memory Anchors\[0\]\.Grand Canyon: expected \[start, end\] integers",
        ),
        (QA, lambda d: d.append({"Ghost": {}}), r"\[2\]\.Ghost: character not in the memory file"),
        (QA, lambda d: d.append({"Li Hua": {}}), r"\[2\]\.Li Hua: character listed twice"),
        (QA, lambda d: d.__setitem__(0, []), r"perltqa_en_v2\.json: \[0\]: expected dict, got list"),
        (
            MEMORY,
            lambda d: d["Wang Xiaoming"].update(world_knowledge={}),
            r"perltmem_en_v2\.json: 'Wang Xiaoming'\.world_knowledge: unknown section",
        ),
        (
            MEMORY,
            lambda d: d["Wang Xiaoming"]["social_relationship"]["1_1"].pop("Relationship"),
            r"'Wang Xiaoming'\.social_relationship\.1_1: missing key 'Relationship'",
        ),
        (
            MEMORY,
            lambda d: d["Wang Xiaoming"]["dialogues"]["1_0_0#0"].update(contents=["hi"]),
            r"dialogues\.1_0_0#0\.contents: expected dict, got list",
        ),
        (
            MEMORY,
            lambda d: d["Wang Xiaoming"]["profile"].update(Age=None),
            r"'Wang Xiaoming'\.profile\.Age: expected str or int or float, got NoneType",
        ),
        (MEMORY, lambda d: d["Wang Xiaoming"].pop("profile"), r"'Wang Xiaoming': missing key 'profile'"),
    ],
)
def test_malformed_parts_name_the_file_and_key(
    copy: Path, name: str, change: Callable[[Any], object], message: str
) -> None:
    edit(copy / name, change)
    with pytest.raises(DataError, match=message):
        load(copy)


def test_an_error_in_a_file_found_by_name_says_it_was_picked(copy: Path, tmp_path: Path) -> None:
    """A neighbour that matches *qa*.json is named as picked, and how to give another; a
    file given by name (--data, -o qa=) is not."""
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(copy / MEMORY, mine / "obj.json")
    (mine / "noqa.json").write_text("[1]", encoding="utf-8")
    picked = r"noqa\.json: \[0\]: expected dict, got int \(picked as the QA file, the one \*qa\*\.json"
    with pytest.raises(DataError, match=rf"{picked} beside --data obj\.json; .* -o qa=PATH\)$"):
        load(mine / "obj.json")
    with pytest.raises(DataError, match=r"noqa\.json: \[0\]: expected dict, got int$"):
        load(mine / "obj.json", qa=mine / "noqa.json")
    (mine / "obj.json").rename(mine / "mem.json")
    with pytest.raises(DataError, match=rf"{picked} in {mine}; "):
        load(mine)
    edit(copy / MEMORY, lambda d: d["Wang Xiaoming"].pop("profile"))
    with pytest.raises(DataError, match=r"'profile' \(picked as the memory file, the one \*mem\*\.json in "):
        load(copy)
    with pytest.raises(DataError, match=r"missing key 'profile'$"):
        load(copy / MEMORY)
