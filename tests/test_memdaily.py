"""`memdaily` loader on the real release files in ../shared/data/memdaily (roles scenario, Chinese)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from memplug.datasets.memsim.memdaily import MemDailyLoader
from memplug.errors import DataError, MemplugError
from memplug.models import Sample
from memplug.protocols import BuildOptions


def load(data: Path, **values: Any) -> list[Sample]:
    return list(MemDailyLoader().build(BuildOptions(values=values, data=data)))


def kept(question: Mapping[str, object]) -> bool:
    return question["question"] != "[ERRORQ]" and question["answer"] != "[ERRORA]"


@pytest.fixture(scope="module")
def release(shared_data: Path) -> Path:
    return shared_data / "memdaily"


def test_counts_per_file_match_the_files(release):
    samples = load(release)
    by_type = Counter(q.category for s in samples for q in s.questions)
    expected = {}
    for path in sorted(release.glob("0*_*_roles.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        qtype = path.stem.split("_", 1)[1].rsplit("_", 1)[0]
        expected[qtype] = sum(kept(q) for t in raw for q in t["question_list"])
        single = load(path)
        assert sum(len(s.questions) for s in single) == expected[qtype]
        assert len(single) == sum(any(kept(q) for q in t["question_list"]) for t in raw)
    assert by_type == expected
    assert expected["aggregative"] < 100  # the release's [ERRORQ] items are gone


def test_targets_resolve_and_the_correct_choice_is_a_choice(release):
    for s in load(release):
        ids = {m.id for m in s.messages}
        assert s.meta["scenario"] == "roles" and s.meta["lang"] == "zh"
        for q in s.questions:
            assert q.targets and set(q.targets) <= ids
            assert q.choices is not None and q.correct_choice in q.choices
            assert q.category == s.meta["type"]


def test_seed_case_studies_are_reproduced(release):
    """Appendix E.3 of seed 000 prints these two items of MemDaily (translated)."""
    samples = {s.id: s for s in load(release, stamp=False)}
    simple = samples["memdaily-simple-roles-1"]
    q = simple.questions[0]
    assert (q.answers, q.correct_choice, q.targets, q.time) == (("36岁",), "D", ("4",), "2024-04-05T07:54")
    assert simple.messages[4].text == "我的表弟今年36岁。"
    cond = samples["memdaily-conditional-roles-0"].questions[0]
    assert (cond.answers, cond.correct_choice, cond.targets) == (("广东深圳",), "B", ("0", "4"))


def test_messages_carry_place_and_time_like_memsims_benchmark(release):
    s = load(release)[1]
    assert s.messages[4].text == "我的表弟今年36岁。 (消息地点 广东深圳, 消息时间 2024年04月02日 周二 21:21)"
    assert s.messages[4].time == "2024-04-02T21:21"
    info = MemDailyLoader().info_for({}, release)
    assert info.language == "zh" and info.metrics[0] == "accuracy" and "{choices}" in info.answer_prompt


def test_merged_memdaily_json_gives_the_same_questions(release, tmp_path):
    """The layout post_process.py writes: {type: {scenario: [{tid, message_list, QA}]}}."""
    merged: dict[str, Any] = {}
    for path in sorted(release.glob("0*_*_roles.json")):
        qtype = path.stem.split("_", 1)[1].rsplit("_", 1)[0]
        raw = json.loads(path.read_text(encoding="utf-8"))
        kept_items = [t for t in raw if kept(t["question_list"][0])]
        merged[qtype] = {
            "roles": [
                {"tid": i, "message_list": t["message_list"], "QA": t["question_list"][0]}
                for i, t in enumerate(kept_items)
            ],
            "events": None,
        }
    (tmp_path / "memdaily.json").write_text(json.dumps(merged, ensure_ascii=False), encoding="utf-8")
    from_dir = load(tmp_path)
    per_type = load(release)
    assert len(from_dir) == len(per_type)
    key = lambda s: [(q.category, q.text, q.correct_choice, q.targets) for q in s.questions]  # noqa: E731
    assert sorted(map(key, from_dir)) == sorted(map(key, per_type))


def test_quirks_are_handled_not_fixed(tmp_path):
    item = {
        "tid": 0,
        "message_list": [
            {"mid": 0, "message": "我表弟今年36岁。。", "time": "2024年04月03日 周三 08:00", "place": "北京"},
            {"mid": 1, "message": "我表妹今年30岁。", "time": "2024年04月02日 周二 08:00", "place": "北京"},
        ],
        "question_list": [
            {
                "qid": 0,
                "question": "我表弟多大？",
                "answer": "36岁",
                "target_step_id": [0],
                "choices": {"A": "36岁", "B": "35岁", "C": "37岁", "D": "34岁  "},
                "ground_truth": "A",
                "time": "2024年04月05日 周五 07:54",
            }
        ],
    }
    path = tmp_path / "01_simple_roles.json"
    path.write_text(json.dumps([item], ensure_ascii=False), encoding="utf-8")
    (s,) = load(path, stamp=False)
    assert [m.text for m in s.messages] == ["我表弟今年36岁。", "我表妹今年30岁。"]
    assert [m.time for m in s.messages] == ["2024-04-03T08:00", "2024-04-02T08:00"]  # order of the file
    # a choice's text as the release has it, trailing spaces included: MemSim's prompt shows them
    assert s.questions[0].choices is not None
    assert s.questions[0].choices["D"] == "34岁  "


def test_broken_files_name_the_file_and_the_place(release, tmp_path):
    truncated = tmp_path / "02_conditional_roles.json"
    truncated.write_text((release / "02_conditional_roles.json").read_text(encoding="utf-8")[:5000], encoding="utf-8")
    with pytest.raises(DataError, match=r"02_conditional_roles.json: invalid JSON at line \d+ column \d+: "):
        load(truncated)
    bad = tmp_path / "01_simple_roles.json"
    raw = json.loads((release / "01_simple_roles.json").read_text(encoding="utf-8"))
    raw[3]["question_list"][0]["target_step_id"] = [42]
    bad.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DataError, match=r"01_simple_roles.json: \[3\]\.question_list\[0\]: target_step_id \['42'\]"):
        load(bad)
    del raw[3]["question_list"][0]["choices"]
    bad.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DataError, match="lacks 'choices'"):
        load(bad)
    with pytest.raises(DataError, match="no MemDaily files"):
        load(tmp_path / "..")
    with pytest.raises(DataError, match="--data"):
        list(MemDailyLoader().build(BuildOptions()))


def test_memdaily_eta_mixes_noise_and_remaps_targets(release, tmp_path):
    posts = tmp_path / "posts.txt"
    posts.write_text("\n".join(f"今天的第{i}条随想。" for i in range(50)), encoding="utf-8")
    vanilla = {s.id: s for s in load(release, stamp=False)}
    noisy = load(release, stamp=False, eta=10, noise=posts)
    assert len(noisy) == len(vanilla)
    for s in noisy:
        v = vanilla[s.id]
        assert len(s.messages) == 10 * len(v.messages)
        by_id = {m.id: m.text for m in s.messages}
        old = {m.id: m.text for m in v.messages}
        for q, vq in zip(s.questions, v.questions):
            assert [by_id[t] for t in q.targets] == [old[t] for t in vq.targets]
    assert [m.text for m in load(release, stamp=False, eta=10, noise=posts)[0].messages] == [
        m.text for m in noisy[0].messages
    ]
    with pytest.raises(Exception, match="go together"):
        load(release, eta=10)
    with pytest.raises(MemplugError, match="eta=0: must be >= 1"):
        load(release, eta=0)
