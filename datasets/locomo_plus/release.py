"""Reads LoCoMo-Plus (``data/locomo_plus.json`` of xjtuleeyf/Locomo-Plus) with a LoCoMo file into samples.

Source: https://github.com/xjtuleeyf/Locomo-Plus, commit
059f4e3d38f7f1f96765e8e2cb7de3097551bffb, ``data/unified_input.py`` (which merges LoCoMo's
five categories with the sixth, Cognitive) and ``data/build_conv.py`` (the stitching it
calls). A LoCoMo-Plus item is ``{relation_type, cue_dialogue, trigger_query, time_gap,
model_name, scores, ranks, final_similarity_score}``: a short "A: ... / B: ..." cue dialogue,
a one-line "A: ..." trigger said later, and how much later ("two months later").

Two kinds of sample, as ``unified_input.build_unified_samples`` makes two kinds of input:

- **LoCoMo**: one sample per conversation of the LoCoMo file, read by memplug's LoCoMo
  loader (:mod:`memplug.datasets.locomo.release`), its questions renamed to LoCoMo-Plus's
  categories ("3-common-sense" where LoCoMo says open-domain) and given what LoCoMo-Plus's
  judge is shown: the evidence turns as ``_evidence_to_text`` writes them, and the answer
  as ``build_output_record``'s ``ground_truth``.
- **Cognitive**: one sample per LoCoMo-Plus item, paired with conversation ``i % n`` of the
  LoCoMo file (``_process_locomo_plus``) and stitched as ``build_conv.build_context``
  stitches it: the query is put 7 days after the last session, the cue ``time_gap`` before
  the query (:func:`parse_time_gap`: weeks 7 days, months 30, years 365, unparsed 0), A and
  B become the conversation's ``speaker_a`` and ``speaker_b``, and sessions and cue are
  ordered by time. Each turn is a message written as the stitched dialogue writes it
  (``Speaker said, "text"``, no date, no image caption: ``_stitch_dialogue_for_plus``); the
  cue's turns (ids ``cue:1``, ``cue:2``) are the question's targets. The trigger is the
  question, not a message: the official input ends with it, and an agent is asked with it.
  It has no reference answer; its ``answers`` hold the cue as the judge is shown it
  (``_cue_dialogue_to_evidence``), since that is what a reply must connect to.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator, Sequence

import attrs

from memplug.datasets.locomo.release import read_conversation
from memplug.errors import DataError
from memplug.files import read_json, short
from memplug.models import Message, Question, Sample

COMMIT = "059f4e3d38f7f1f96765e8e2cb7de3097551bffb"
SOURCE = (
    f"github xjtuleeyf/Locomo-Plus@{COMMIT} data/unified_input.py (_process_locomo, "
    "_process_locomo_plus, _evidence_to_text, _cue_dialogue_to_evidence) and data/build_conv.py (build_context)"
)

#: unified_input.py LOCOMO_CATEGORY_NAMES: the judge's prompt names, by LoCoMo's category number
LOCOMO_CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "common-sense", 4: "single-hop", 5: "adversarial"}
#: unified_input.py CATEGORY_SIXTH
COGNITIVE = "Cognitive"
#: the relation types of the release (101 causal, 100 each of state, goal, value)
RELATION_TYPES = ("causal", "state", "goal", "value")

_NUM_WORD = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_GAP = re.compile(
    r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a|an)\b\s*"
    r"(week|weeks|month|months|year|years)\b"
)
#: build_conv.py parse_locomo_session_time
_SESSION_TIME = "%I:%M %p on %d %B, %Y"


def category_name(number: int) -> str:
    """ "1-multi-hop" ... "5-adversarial": LoCoMo-Plus's names, LoCoMo's number first so tables sort by it."""
    return f"{number}-{LOCOMO_CATEGORY_NAMES[number]}"


def cognitive_category(relation_type: str) -> str:
    """ "cognitive-causal", ...: the cognitive questions by relation type, the grouping the issue asks of reports."""
    return f"cognitive-{relation_type}"


def parse_time_gap(time_gap: str) -> int:
    """build_conv.py ``parse_time_gap``: days back from the query ("two months later" -> 60;
    "several months later" matches nothing -> 0, the cue just before the query)."""
    match = _GAP.search(time_gap.lower().strip())
    if not match:
        return 0
    num, unit = match.groups()
    count = int(num) if num.isdigit() else 1 if num in ("a", "an") else _NUM_WORD.get(num, 0)
    return count * (7 if unit.startswith("week") else 30 if unit.startswith("month") else 365)


def parse_ab_dialogue(text: str) -> list[dict[str, str]]:
    """build_conv.py ``parse_ab_dialogue``: the lines starting "A:" or "B:", others dropped."""
    turns = []
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("A:") or line.startswith("B:"):
            turns.append({"speaker": line[0], "text": line[2:].strip()})
    return turns


def map_speaker(dialogue: list[dict[str, str]], speaker_a: str, speaker_b: str) -> list[dict[str, str]]:
    """build_conv.py ``map_speaker``: A is ``speaker_a``, anyone else ``speaker_b``."""
    out = []
    for turn in dialogue:
        mapped = copy.deepcopy(turn)
        mapped["speaker"] = speaker_a if turn["speaker"] == "A" else speaker_b
        out.append(mapped)
    return out


def stitched_line(speaker: str, text: str) -> str:
    """A turn as ``_stitch_dialogue_for_plus`` writes it."""
    return f'{speaker} said, "{text.strip()}"'


def locomo_evidence_text(conversation: dict[str, Any], evidence: Any) -> str:
    """unified_input.py ``_parse_evidence_list`` and ``_evidence_to_text``: "Speaker：text" per
    evidence id (full-width colon), ids split at ";" only, so "D9:1 D4:4" becomes one
    "[D9:1 D4:4] [Parse error]" line, as the official judge sees it."""
    parts: list[str] = []
    for value in evidence if isinstance(evidence, list) else [evidence]:
        parts.extend(p.strip() for p in str(value).split(";") if p.strip())
    lines = []
    for evid in parts:
        try:
            session_id, turn_id = evid.split(":")
            turns = conversation.get(f"session_{int(session_id.replace('D', ''))}", [])
            turn_idx = int(turn_id)
            if 0 <= turn_idx - 1 < len(turns):
                turn = turns[turn_idx - 1]
                lines.append(f"{turn.get('speaker', 'Unknown')}：{turn.get('text', '')}")
            else:
                lines.append(f"[{evid}] [Missing turn]")
        except Exception:  # the official bare except: any malformed id is one line
            lines.append(f"[{evid}] [Parse error]")
    return "\n".join(lines)


def ground_truth(qa: dict[str, Any]) -> str:
    """The judge's gold: ``unified_input`` keeps ``answer`` when present (category 5 has
    none), ``build_output_record`` makes None or blank "", ``_judge_one_record`` takes
    ``ground_truth or answer or ""``."""
    answer = qa.get("answer")
    if answer is None or (isinstance(answer, str) and not answer.strip()) or not answer:
        return ""
    return str(answer)


def _session_time(path: Path, where: str, raw: Any) -> datetime:
    try:
        return datetime.strptime(str(raw), _SESSION_TIME)
    except ValueError:
        raise DataError(path, f"session date {short(raw)} is not like '1:56 pm on 8 May, 2023'", where) from None


def _conversation(path: Path, place: str, row: Any) -> tuple[str, str, list[tuple[datetime, list[dict[str, Any]]]]]:
    """build_conv.py ``analyze_conversation``: speakers and (time, turns) of session_1, session_2, ...
    up to the first number missing."""
    conv = row.get("conversation") if isinstance(row, dict) else None
    if not isinstance(conv, dict):
        raise DataError(path, "missing 'conversation' (dict)", place)
    speakers = conv.get("speaker_a"), conv.get("speaker_b")
    if not all(isinstance(s, str) for s in speakers):
        raise DataError(path, "the conversation needs speaker_a and speaker_b", f"{place}.conversation")
    sessions = []
    n = 1
    while f"session_{n}" in conv:
        turns = conv[f"session_{n}"]
        if not isinstance(turns, list) or not all(
            isinstance(t, dict) and isinstance(t.get("speaker"), str) for t in turns
        ):
            raise DataError(path, "a session is a list of turns with a speaker", f"{place}.conversation.session_{n}")
        sessions.append(
            (
                _session_time(path, f"{place}.conversation.session_{n}_date_time", conv.get(f"session_{n}_date_time")),
                turns,
            )
        )
        n += 1
    if not sessions:
        raise DataError(path, "the conversation has no session_1", f"{place}.conversation")
    return str(speakers[0]), str(speakers[1]), sessions


def read_plus_items(path: Path) -> list[dict[str, Any]]:
    """The LoCoMo-Plus items, each checked for what stitching and judging read."""
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise DataError(
            path,
            "expected a non-empty list of LoCoMo-Plus items (cue_dialogue, trigger_query, time_gap, relation_type)",
        )
    for i, item in enumerate(data):
        where = f"[{i}]"
        if not isinstance(item, dict):
            raise DataError(path, f"expected an object, got {type(item).__name__}", where)
        for key in ("cue_dialogue", "trigger_query", "time_gap", "relation_type"):
            if not isinstance(item.get(key), str):
                raise DataError(path, f"missing {key!r} (a string)", where)
        if item["relation_type"] not in RELATION_TYPES:  # the category, and which prompt asks it
            raise DataError(
                path, f"relation_type {short(item['relation_type'])} is not one of {', '.join(RELATION_TYPES)}", where
            )
        for key in ("cue_dialogue", "trigger_query"):
            if not parse_ab_dialogue(item[key]):
                raise DataError(path, f"{key} has no line starting 'A:' or 'B:'", where)
    return data


def stitch(
    item: dict[str, Any], speaker_a: str, speaker_b: str, sessions: Sequence[tuple[datetime, list[dict[str, Any]]]]
) -> dict[str, Any]:
    """build_conv.py ``build_context``: the cue and query times, the mapped turns and the
    stitched order (sessions and cue sorted by time, ties keeping the session first; the
    query, 7 days after the last session, comes last). Returns ``events`` as
    (time, kind, session number or None, turns) in order, the query left out."""
    times = [t for t, _ in sessions]
    query_time = times[-1] + timedelta(days=7)
    cue_time = query_time - timedelta(days=parse_time_gap(item["time_gap"]))
    cue_idx = None
    for i, t in enumerate(times):
        if t <= cue_time:
            cue_idx = i
        else:
            break
    cue_turns = map_speaker(parse_ab_dialogue(item["cue_dialogue"]), speaker_a, speaker_b)
    query_turns = map_speaker(parse_ab_dialogue(item["trigger_query"]), speaker_a, speaker_b)
    events: list[tuple[datetime, str, int | None, list[dict[str, Any]]]] = [
        (t, "session", n, turns) for n, (t, turns) in enumerate(sessions, start=1)
    ]
    events.append((cue_time, "cue", None, cue_turns))
    events.sort(key=lambda e: e[0])  # stable, as the official list.sort
    return {
        "cue_time": cue_time,
        "query_time": query_time,
        "cue_session_idx": cue_idx,
        "cue_turns": cue_turns,
        "query_turns": query_turns,
        "events": events,
    }


def cognitive_sample(
    path: Path, index: int, item: dict[str, Any], locomo_path: Path, locomo_place: str, row: dict[str, Any]
) -> Sample:
    """One LoCoMo-Plus item stitched into its conversation: the messages, and the trigger as the question."""
    speaker_a, speaker_b, sessions = _conversation(locomo_path, locomo_place, row)
    ctx = stitch(item, speaker_a, speaker_b, sessions)
    messages: list[Message] = []
    for when, kind, number, turns in ctx["events"]:
        for t, turn in enumerate(turns, start=1):
            text = str(turn.get("text") or "")
            if kind == "cue":
                messages.append(
                    Message(
                        f"cue:{t}",
                        stitched_line(turn["speaker"], text),
                        time=when.isoformat(),
                        speaker=turn["speaker"],
                        meta={"session": "cue"},
                        shows=("speaker",),
                    )
                )
            else:
                messages.append(
                    Message(
                        str(turn.get("dia_id") or f"D{number}:{t}"),
                        stitched_line(turn["speaker"], text),
                        time=when.isoformat(),
                        speaker=turn["speaker"],
                        meta={"session": f"D{number}"},
                        shows=("speaker",),
                    )
                )
    if len({m.id for m in messages}) != len(messages):
        raise DataError(locomo_path, "two turns share a dia_id", f"{locomo_place}.conversation")
    evidence = "\n".join(f"{t['speaker']}：{t['text'].strip()}" for t in ctx["cue_turns"] if t.get("text"))
    relation = item["relation_type"]
    question = Question(
        id="trigger",
        text="\n".join(stitched_line(t["speaker"], t["text"]) for t in ctx["query_turns"]),
        answers=(evidence,),
        category=cognitive_category(relation),
        targets=[f"cue:{t}" for t in range(1, len(ctx["cue_turns"]) + 1)],
        time=ctx["query_time"].isoformat(),
        meta={
            "judge": "locomo-plus",
            "locomo_plus_category": COGNITIVE,
            "relation_type": relation,
            "evidence_text": evidence,
            "ground_truth": "",
            "time_gap": item["time_gap"],
        },
    )
    sample_id = str(row.get("sample_id") or locomo_place)
    return Sample(
        f"plus-{index}",
        messages,
        [question],
        {
            "file": str(path),
            "index": index,
            "locomo_file": str(locomo_path),
            "conversation": sample_id,
            "relation_type": relation,
            "time_gap": item["time_gap"],
            "model_name": item.get("model_name"),
            "cue_time": ctx["cue_time"].isoformat(),
            "query_time": ctx["query_time"].isoformat(),
            "cue_session_idx": ctx["cue_session_idx"],
            "speakers": [speaker_a, speaker_b],
        },
    )


def locomo_sample(locomo_path: Path, place: str, row: Any, categories: frozenset[int]) -> Sample:
    """A LoCoMo conversation as memplug's LoCoMo loader reads it, its questions in LoCoMo-Plus's
    categories with what LoCoMo-Plus's judge is shown."""
    sample = read_conversation(locomo_path, place, row, categories=categories)
    conversation, qa = row["conversation"], row["qa"]
    questions = []
    for q in sample.questions:
        raw = qa[int(q.id[1:])]  # read_conversation's ids are "q<index in qa>"
        number = int(q.meta["locomo_category"])
        questions.append(
            attrs.evolve(
                q,
                category=category_name(number),
                meta={
                    **q.meta,
                    "judge": "locomo-plus",
                    "locomo_plus_category": LOCOMO_CATEGORY_NAMES[number],
                    "evidence_text": locomo_evidence_text(conversation, raw.get("evidence") or []),
                    "ground_truth": ground_truth(raw),
                },
            )
        )
    return attrs.evolve(sample, questions=questions)


def load(plus_path: Path, locomo_path: Path, *, locomo_categories: frozenset[int], cognitive: bool) -> Iterator[Sample]:
    """The LoCoMo samples (questions of ``locomo_categories``; none when empty), then one
    cognitive sample per LoCoMo-Plus item (when ``cognitive``), as ``build_unified_samples``
    orders them."""
    items = read_plus_items(plus_path) if cognitive else []
    data = read_json(locomo_path)
    rows = data if isinstance(data, list) else [data]
    if not rows:
        raise DataError(locomo_path, "holds an empty list of conversations")
    places = [f"[{r}]" if isinstance(data, list) else "conversation" for r in range(len(rows))]
    if locomo_categories:
        for place, row in zip(places, rows):
            yield locomo_sample(locomo_path, place, row, locomo_categories)
    for i, item in enumerate(items):
        r = i % len(rows)  # _process_locomo_plus: locomo_list[i % len(locomo_list)]
        yield cognitive_sample(plus_path, i, item, locomo_path, places[r], rows[r])
