"""Reads BEAM's release folders (``chats/<size>/<n>/``) into samples.

Layout (github mohammadtavakoli78/BEAM @ b2a3ee8, ``src/beam/download_dataset.py``, which
writes the folders from the Hugging Face release, and
``src/answer_probing_questions/answer_generation.py``, which reads them):

- ``chats/<size>/<n>/chat.json``, or ``chat_trunecated.json`` where it exists (the official
  answer generation prefers it): a list of batches ``{batch_number, turns, time_anchor}``,
  each turn a list of messages ``{role, id, content[, time_anchor, index, question_type]}``.
  The 10M tier's chat.json is a list of plans ``{"plan-<k>": [batches]}`` whose message ids
  ``combine_10m_chats`` has made unique across plans; the reader tells the two apart by
  their shape, as ``long_term_memory_methods.py`` does by the size.
- ``chats/<size>/<n>/probing_questions/probing_questions.json``: the ten abilities, each a
  list of questions with a ``rubric`` (a list of strings) and, for most, ``source_chat_ids``
  (the ids of the messages the question was written from).
- ``topic.json``: the conversation's seed (title, category), kept in the sample's meta.

One sample per conversation, one message per chat message (id = the release's message id,
so that ``source_chat_ids`` are retrieval targets), every probing question asked after
the whole conversation (as the official answer generation asks them). A user message's
time is its ``time_anchor`` ("March-15-2024", written ISO); an assistant reply takes the
time of the last message that has one.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, cast

from memplug.errors import DataError, MemplugError
from memplug.files import read_json, short
from memplug.models import Message, Question, Sample

log = logging.getLogger(__name__)

#: the ten abilities, in the order of probing_questions.json and report_results.py's columns
ABILITIES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
#: the release's size folders (the README's 128K tier is the folder "100K")
SIZES = ("100K", "500K", "1M", "10M")
#: the reference answer's field, by ability (the rubric is what the judge reads; this text is
#: kept as the question's gold answer for offline metrics a user asks for by name)
REFERENCE_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")
CHAT_FILES = ("chat_trunecated.json", "chat.json")
QUESTIONS_FILE = Path("probing_questions") / "probing_questions.json"
_ANCHOR = re.compile(r"^[A-Za-z]+-\d{1,2}-\d{4}$")


def parse_anchor(anchor: str) -> str | None:
    """ISO date of a time anchor ("March-15-2024" -> "2024-03-15"); None when it is not one."""
    if not _ANCHOR.match(anchor.strip()):
        return None
    for fmt in ("%B-%d-%Y", "%b-%d-%Y"):
        try:
            return datetime.strptime(anchor.strip(), fmt).date().isoformat()
        except ValueError:
            continue
    return None


def is_conversation(folder: Path) -> bool:
    return (folder / QUESTIONS_FILE).is_file() and any((folder / name).is_file() for name in CHAT_FILES)


def _numbered(folder: Path) -> list[Path]:
    """The numbered sub-folders, in the official order (``sorted(..., key=int)``)."""
    return sorted((p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))


def conversation_folders(data: Path) -> list[Path]:
    """The conversations under ``--data``: one conversation folder (``chats/100K/1``), a size
    folder (``chats/100K``) or the ``chats`` folder (every size, in SIZES order)."""
    if not data.is_dir():
        raise MemplugError(
            f"--data {data}: expected a BEAM folder (chats, chats/<size> or chats/<size>/<n>), not a file"
        )
    if is_conversation(data):
        return [data]
    found = [p for p in _numbered(data) if is_conversation(p)]
    if not found:
        found = [p for size in SIZES if (data / size).is_dir() for p in _numbered(data / size) if is_conversation(p)]
    if not found:
        raise MemplugError(
            f"--data {data}: no BEAM conversation (a folder with chat.json and "
            f"{QUESTIONS_FILE.as_posix()}) in it, in its numbered folders or in its size folders"
        )
    return found


def _batches(path: Path, chat: Any) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(plan, batch number, batch) of a chat.json in either layout."""
    if not isinstance(chat, list) or not chat:
        raise DataError(path, "expected a non-empty JSON list of batches (or of plans, 10M)")
    for i, entry in enumerate(chat):
        if not isinstance(entry, dict):
            raise DataError(path, f"expected an object, got {type(entry).__name__}", f"[{i}]")
        if "turns" in entry:
            yield "", i + 1, entry
            continue
        # 10M: {"plan-<k>": [batches]}; fix_10m_chats keeps the one key with a value
        plans = [(k, v) for k, v in entry.items() if isinstance(v, list)]
        if len(plans) != 1:
            raise DataError(path, "expected a batch (with 'turns') or a 10M plan {\"plan-<k>\": [batches]}", f"[{i}]")
        plan, batches = plans[0]
        for j, batch in enumerate(batches):
            if not isinstance(batch, dict) or "turns" not in batch:
                raise DataError(path, "a batch needs 'turns'", f"[{i}].{plan}[{j}]")
            yield plan, j + 1, batch


def read_messages(path: Path) -> list[Message]:
    """Every message of a chat file, in order (batches, turns, messages)."""
    messages: list[Message] = []
    seen: set[str] = set()
    time: str | None = None
    for plan, number, batch in _batches(path, read_json(path)):
        turns = batch["turns"]
        where = f"{plan + '.' if plan else ''}batch {number}"
        if not isinstance(turns, list):
            raise DataError(path, "'turns' must be a list of turns", where)
        batch_time = parse_anchor(str(batch.get("time_anchor") or ""))
        for t, turn in enumerate(turns):
            if not isinstance(turn, list):
                raise DataError(path, f"a turn is a list of messages, got {type(turn).__name__}", f"{where} turn {t}")
            for m in turn:
                place = f"{where} turn {t}"
                if (
                    not isinstance(m, dict)
                    or not isinstance(m.get("role"), str)
                    or not isinstance(m.get("content"), str)
                    or isinstance(m.get("id"), bool)
                    or not isinstance(m.get("id"), (int, str))
                ):
                    raise DataError(path, "a message needs 'role', 'content' (strings) and 'id'", place)
                mid = str(m["id"])
                if mid in seen:
                    raise DataError(path, f"message id {mid} repeats", place)
                seen.add(mid)
                # a message without an anchor (replies, follow-ups) is at the time of the last one
                time = parse_anchor(str(m.get("time_anchor") or "")) or time or batch_time
                meta: dict[str, Any] = {"batch": number, "turn": t + 1}
                if plan:
                    meta["plan"] = plan
                if "index" in m:
                    meta["index"] = m["index"]
                messages.append(Message(mid, m["content"], time=time, speaker=m["role"], meta=meta))
    if not messages:
        raise DataError(path, "the chat has no messages")
    return messages


def source_ids(raw: Any) -> list[str]:
    """The message ids of ``source_chat_ids``, in order, once each: a list of ids, or (for
    contradiction resolution, knowledge update and temporal reasoning) an object of lists
    such as ``{"original_info": [86], "updated_info": [114]}``."""
    values = raw.values() if isinstance(raw, dict) else [raw]
    flat: list[str] = []
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, (int, str)) and not isinstance(item, bool) and str(item) not in flat:
                flat.append(str(item))
    return flat


def reference(row: dict[str, Any]) -> str:
    for key in REFERENCE_FIELDS:
        if isinstance(row.get(key), str) and row[key].strip():
            return cast(str, row[key])
    return ""


def read_questions(
    path: Path, conversation: str, ids: set[str], *, abilities: tuple[str, ...] = ABILITIES, judge: str = "beam"
) -> list[Question]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(path, f"expected an object keyed by ability, got {type(data).__name__}")
    unknown = [k for k in data if k not in ABILITIES]
    if unknown:
        raise DataError(path, f"ability {short(unknown[0])} is not one of {', '.join(ABILITIES)}")
    questions: list[Question] = []
    for ability in (a for a in ABILITIES if a in abilities and a in data):
        rows = data[ability]
        if not isinstance(rows, list):
            raise DataError(path, "expected a list of questions", ability)
        for i, row in enumerate(rows):
            where = f"{ability}[{i}]"
            if not isinstance(row, dict) or not isinstance(row.get("question"), str) or not row["question"].strip():
                raise DataError(path, "missing 'question' (a string)", where)
            rubric = row.get("rubric")
            if not isinstance(rubric, list) or not rubric or not all(isinstance(r, str) for r in rubric):
                raise DataError(path, "missing 'rubric' (a non-empty list of strings)", where)
            sources = source_ids(row.get("source_chat_ids"))
            missing = [s for s in sources if s not in ids]
            if missing:
                log.warning(
                    "%s: %s: source_chat_ids %s are not message ids of the chat; not targets",
                    path,
                    where,
                    ", ".join(missing),
                )
            gold = reference(row)
            questions.append(
                Question(
                    id=f"{conversation}:{ability}:{i}",
                    text=row["question"],
                    answers=(gold,) if gold else (),
                    category=ability,
                    targets=[s for s in sources if s in ids],
                    meta={
                        "ability": ability,
                        "index": i,
                        "rubric": list(rubric),
                        "judge": judge,
                        "family": "beam",
                        "difficulty": row.get("difficulty"),
                        "source_chat_ids": row.get("source_chat_ids"),
                    },
                )
            )
    return questions


def load_conversation(folder: Path, *, abilities: tuple[str, ...] = ABILITIES, judge: str = "beam") -> Sample:
    """One conversation folder as a sample; its id is ``<size>/<n>`` (``<n>`` outside a size folder)."""
    chat = next(folder / name for name in CHAT_FILES if (folder / name).is_file())
    messages = read_messages(chat)
    size = folder.parent.name if folder.parent.name in SIZES else None
    sid = f"{size}/{folder.name}" if size else folder.name
    questions = read_questions(folder / QUESTIONS_FILE, sid, {m.id for m in messages}, abilities=abilities, judge=judge)
    topic = read_json(folder / "topic.json") if (folder / "topic.json").is_file() else {}
    meta = {"folder": str(folder), "chat_file": chat.name, "size": size, "messages": len(messages)}
    if isinstance(topic, dict):
        meta.update({k: topic[k] for k in ("title", "category") if k in topic})
    return Sample(sid, messages, questions, meta)


def load_release(data: Path, *, abilities: tuple[str, ...] = ABILITIES, judge: str = "beam") -> Iterator[Sample]:
    """A sample per conversation under ``data``, in the official order."""
    for folder in conversation_folders(data):
        yield load_conversation(folder, abilities=abilities, judge=judge)
