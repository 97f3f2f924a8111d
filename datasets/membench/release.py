"""Reads MemBench's categorised release: ``MemData/{FirstAgent,ThirdAgent}/<type>.json``.

Source: github import-myself/Membench at commit 04956796150992cc6fbffef51c53f541376bf0f6.
Each file is ``{scenario: [trajectory, ...]}`` for one question type (``load_test_data.py``
``MixMessage``/``MixSession`` key the files by their stem); a trajectory is ``{tid,
message_list, QA}`` with ``QA = {question, answer, choices: {A..D}, ground_truth,
target_step_id, time}``. ThirdAgent (observation) trajectories are a list of user
statements ``{message, place, time}``, or for the high-level types a list of such lists;
FirstAgent (participation) ones are sessions, lists of turns ``{user_message,
assistant_message, place, time}`` (some files say ``user``/``assistant``).

The official pipeline turns a trajectory into steps with ``load_test_data.py``'s
no-noise branches (``infuse_single_trajectory_message``, ``..._message_special``,
``infuse_single_trajectory_session`` with length 0): a statement becomes ``'{message}
(place: {place}; time{time})'`` (sic, no colon after "time"), a turn the pair of its user
and agent messages so written; sessions are flattened, and a nested target ``[step,
session]`` keeps its first element, the step's index in the flat list. The agent
(``MembenchAgent.response``) stores step *k* as ``"{k}[|]{statement}"`` or ``"{k}[|]'user':
{user}; 'agent': {agent}"``, and ``retri`` reads the step ids back from that prefix, which
``get_recall`` compares with ``target_step_id``; the runner that numbers the steps is not
released, and the targets are 0-based indices into the trajectory, so *k* counts from 0.
A memplug message is that stored string, its id *k*.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from memplug.errors import DataError
from memplug.files import read_json, short
from memplug.models import Message, Question, Sample

MODES = ("FirstAgent", "ThirdAgent")
LETTERS = ("A", "B", "C", "D")
_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2})")


def release_files(data: Path) -> list[tuple[str, Path]]:
    """(mode, file) pairs under ``data``: the MemData folder, one mode's folder, or a file
    (whose mode is its folder's name)."""
    if data.is_file():
        return [(_mode(data.parent, data), data)]
    if not data.is_dir():
        raise DataError(data, "no such file or directory")
    folders = [data / m for m in MODES if (data / m).is_dir()] or [data]
    files = [(_mode(folder, folder), path) for folder in folders for path in sorted(folder.glob("*.json"))]
    if not files:
        raise DataError(data, "no MemBench files here (expected MemData/FirstAgent/*.json, MemData/ThirdAgent/*.json)")
    return files


def _mode(folder: Path, where: Path) -> str:
    if folder.name not in MODES:
        raise DataError(where, f"a MemBench file sits in a folder named {' or '.join(MODES)} (its interaction mode)")
    return folder.name


def iso_time(text: Any) -> str | None:
    """ "'2024-10-04 08:49' Friday" -> "2024-10-04T08:49"; None when there is no such date."""
    m = _TIME.search(text) if isinstance(text, str) else None
    return f"{m[1]}-{m[2]}-{m[3]}T{m[4]}:{m[5]}" if m else None


def _stamp(text: Any, turn: Mapping[str, Any], path: Path, place: str) -> str:
    for key in ("place", "time"):
        if key not in turn:
            raise DataError(path, f"a step lacks {key!r}", place)
    return "{} (place: {}; time{})".format(text, turn["place"], turn["time"])


def step_text(k: int, turn: Any, path: Path, place: str) -> str:
    """What the official agent stores for step ``k``."""
    if not isinstance(turn, dict):
        raise DataError(path, f"a step must be an object, got {type(turn).__name__}", place)
    if "message" in turn:
        return f"{k}[|]{_stamp(turn['message'], turn, path, place)}"
    for user, agent in (("user_message", "assistant_message"), ("user", "assistant")):
        if user in turn and agent in turn:
            return "{}[|]'user': {}; 'agent': {}".format(
                k, _stamp(turn[user], turn, path, place), _stamp(turn[agent], turn, path, place)
            )
    raise DataError(
        path, "a step needs 'message' (ThirdAgent) or 'user_message' and 'assistant_message' (FirstAgent)", place
    )


def _steps(raw: Any, path: Path, place: str) -> list[tuple[Any, str]]:
    """(turn, place) of every step, sessions flattened in order."""
    if not isinstance(raw, list) or not raw:
        raise DataError(path, "message_list must be a non-empty list", place)
    if all(isinstance(s, list) for s in raw):
        return [(t, f"{place}.message_list[{i}][{j}]") for i, s in enumerate(raw) for j, t in enumerate(s)]
    return [(t, f"{place}.message_list[{i}]") for i, t in enumerate(raw)]


def _targets(raw: Any, n: int, path: Path, place: str) -> list[str]:
    if not isinstance(raw, list):
        raise DataError(path, "target_step_id must be a list", place)
    out = []
    for t in raw:
        step = t[0] if isinstance(t, list) and t else t  # [step, session] -> step, as the no-noise loaders
        if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step < n:
            raise DataError(path, f"target_step_id {short(t)} names no step of the trajectory ({n} steps)", place)
        out.append(str(step))
    return out


def _question(qa: Any, sample_id: str, category: str, n: int, path: Path, place: str) -> Question:
    if not isinstance(qa, dict):
        raise DataError(path, "QA must be an object", place)
    for key in ("question", "choices", "ground_truth", "target_step_id"):
        if key not in qa:
            raise DataError(path, f"QA lacks {key!r}", place)
    choices = qa["choices"]
    if not isinstance(choices, dict) or sorted(choices) != list(LETTERS):
        raise DataError(
            path,
            f"choices must be an object with the keys A, B, C, D (the official prompt's), got {short(choices)}",
            place,
        )
    correct = str(qa["ground_truth"])
    if correct not in LETTERS:
        raise DataError(path, f"ground_truth {short(correct)} is not one of A, B, C, D", place)
    answer = qa.get("answer", choices[correct])
    return Question(
        f"{sample_id}-q{qa.get('qid', 0)}",
        str(qa["question"]),
        (str(answer),),
        category,
        {k: str(choices[k]) for k in LETTERS},
        correct,
        _targets(qa["target_step_id"], n, path, place),
        time=iso_time(qa.get("time")),
        meta={"time_text": qa.get("time"), "answer": qa.get("answer")},
    )


def load_file(mode: str, path: Path) -> Iterator[Sample]:
    """The trajectories of one ``<type>.json``, scenario by scenario in file order."""
    data = read_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise DataError(path, "expected {scenario: [trajectories]} (a file of MemData/FirstAgent or ThirdAgent)")
    qtype = path.stem
    category = f"{mode}/{qtype}"
    seen: set[str] = set()
    for scenario, trajectories in data.items():
        for i, traj in enumerate(trajectories):
            place = f"[{scenario!r}][{i}]"
            if not isinstance(traj, dict) or "message_list" not in traj or "QA" not in traj:
                raise DataError(path, "a trajectory must be {tid, message_list, QA}", place)
            sample_id = f"membench-{mode}-{qtype}-{scenario}-{traj.get('tid', i)}"
            if sample_id in seen:
                raise DataError(path, f"tid {short(traj.get('tid'))} repeats in scenario {scenario!r}", place)
            seen.add(sample_id)
            steps = _steps(traj["message_list"], path, place)
            # step_text stamps every step with its time; FirstAgent steps name both speakers
            messages = [
                Message(
                    str(k),
                    step_text(k, turn, path, where),
                    time=iso_time(turn.get("time")),
                    speaker="user" if mode == "ThirdAgent" else None,
                    shows=("time",),
                )
                for k, (turn, where) in enumerate(steps)
            ]
            question = _question(traj["QA"], sample_id, category, len(messages), path, f"{place}.QA")
            yield Sample(
                sample_id,
                messages,
                [question],
                meta={"mode": mode, "type": qtype, "scenario": scenario, "tid": traj.get("tid"), "file": path.name},
            )


def load_release(data: Path) -> Iterator[Sample]:
    """Every trajectory under ``data``: FirstAgent before ThirdAgent, files by name."""
    for mode, path in release_files(data):
        yield from load_file(mode, path)
