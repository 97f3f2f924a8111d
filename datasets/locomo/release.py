"""Reads LoCoMo's release (``data/locomo10.json`` of snap-research/LoCoMo) into samples.

A conversation is ``{sample_id, conversation, qa, event_summary, observation,
session_summary}``; ``conversation`` holds ``speaker_a``, ``speaker_b`` and, for N = 1, 2,
..., ``session_N`` (a list of turns ``{speaker, dia_id, text[, blip_caption, img_url,
query]}``) with its ``session_N_date_time`` ("1:56 pm on 8 May, 2023"). A question is
``{question, answer | adversarial_answer, evidence, category}``.

One sample per conversation; one message per turn, in session order, written as the
official RAG context writes it ('1:56 pm on 8 May, 2023: Caroline said, "..." and shared
<image caption>'), with the turn's ``dia_id`` ("D3:5" = session 3, turn 5) as message id, so that the evidence ids are the
question's targets (turn recall@K) and the part before ":" names the session (session
hit@K). Quirks of the release handled here (all seen in locomo10.json at 3eb6f2c):

- evidence strings holding several ids ("D8:6; D9:17", "D9:1 D4:4 D4:6"), a stray colon
  ("D:11:26"), a zero-padded turn ("D30:05") and brackets are normalised to "D<s>:<t>";
- an evidence id that matches no turn ("D10:19" in conv-42, "D4:36" in conv-47, "D")
  is dropped from that question's targets with a warning, recorded in the question's
  ``meta["unknown_evidence"]``; the file and the other questions are unaffected;
- integer answers (2022, 2) are read as text;
- category 5 (adversarial) carries ``adversarial_answer`` (a plausible answer that the
  conversation does not support) instead of ``answer``: its gold answer is "Not
  mentioned in the conversation", the correct option of the official two-way choice.
  With ``choice_seed``, each such question gets the two options in ``meta["slots"]``
  (``option_a``, ``option_b``) in an order drawn from the seed, the sample and the
  question, where the official script draws ``random.random() < 0.5`` unseeded.
"""

from __future__ import annotations

import logging
import random
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from memplug.errors import DataError
from memplug.files import read_json, short
from memplug.models import Message, Question, Sample

log = logging.getLogger(__name__)

#: the official category numbers (snap-research/LoCoMo task_eval/evaluation.py,
#: eval_question_answering, and the LoCoMo paper): other harnesses swap 1 and 4
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
#: the correct option of the official category-5 choice (task_eval/gpt_utils.py, get_gpt_answers)
NOT_MENTIONED = "Not mentioned in the conversation"

_SESSION_KEY = re.compile(r"^session_(\d+)$")
#: one evidence id inside an evidence string: "D8:6", "D:11:26", "D30:05", "(D4:4)"
_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s;,()\[\]]+")


def category_name(number: int) -> str:
    """ "1-multi-hop", ... "5-adversarial": the number first, so that tables sort by it."""
    return f"{number}-{CATEGORIES[number]}"


def parse_evidence(values: Any) -> tuple[list[str], list[str]]:
    """(normalised ids in order without repeats, pieces that are no id at all) of an evidence list."""
    ids: list[str] = []
    bad: list[str] = []
    for value in values if isinstance(values, list) else [values]:
        text = str(value)
        for match in _EVIDENCE_ID.finditer(text):
            ids.append(f"D{int(match.group(1))}:{int(match.group(2))}")
        rest = _SEPARATORS.sub(" ", _EVIDENCE_ID.sub(" ", text)).strip()
        if rest:
            bad.append(rest)
    return list(dict.fromkeys(ids)), bad


def session_time(raw: str) -> str:
    """ISO 8601 for the release's "1:56 pm on 8 May, 2023"; the text as it is otherwise."""
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").isoformat()
    except ValueError:
        return raw


def turn_text(turn: dict[str, Any], date_time: str | None) -> str:
    """The turn as the official RAG database writes it (task_eval/gpt_utils.py,
    prepare_for_rag, rag_mode "dialog"): 'Speaker said, "text"', then ' and shared
    <blip_caption>' for a shared image; get_rag_context puts '<date_time>: ' before it in the
    prompt, and so does memplug, in the text, when ``date_time`` is given."""
    text = turn["speaker"] + ' said, "' + turn["text"] + '"'
    if turn.get("blip_caption"):
        text += " and shared " + turn["blip_caption"]
    return f"{date_time}: {text}" if date_time else text


def sessions(path: Path, place: str, conversation: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """(number, date_time, turns) of every session, in number order."""
    found = []
    for key, turns in conversation.items():
        match = _SESSION_KEY.match(key)
        if match is None:
            continue
        number = int(match.group(1))
        if not isinstance(turns, list):
            raise DataError(path, f"expected a list of turns, got {type(turns).__name__}", f"{place}.{key}")
        date_time = conversation.get(f"{key}_date_time")
        if not isinstance(date_time, str):
            raise DataError(path, f"missing {key}_date_time", f"{place}")
        found.append((number, date_time, turns))
    if not found:
        raise DataError(path, "the conversation has no session_N", place)
    return sorted(found, key=lambda s: s[0])


def read_conversation(
    path: Path,
    place: str,
    row: Any,
    *,
    dates_in_text: bool = True,
    categories: frozenset[int] | None = None,
    choice_seed: int | None = None,
) -> Sample:
    if not isinstance(row, dict):
        raise DataError(path, f"expected an object, got {type(row).__name__}", place)
    for key, kind in (("conversation", dict), ("qa", list)):
        if not isinstance(row.get(key), kind):
            raise DataError(path, f"missing {key!r} ({kind.__name__})", place)
    sample_id = str(row.get("sample_id") or place)
    conversation = row["conversation"]
    messages: list[Message] = []
    for number, date_time, turns in sessions(path, f"{place}.conversation", conversation):
        time = session_time(date_time)
        for t, turn in enumerate(turns):
            where = f"{place}.conversation.session_{number}[{t}]"
            if not isinstance(turn, dict) or not all(
                isinstance(turn.get(k), str) for k in ("speaker", "dia_id", "text")
            ):
                raise DataError(path, "a turn needs string speaker, dia_id and text", where)
            ids, bad = parse_evidence(turn["dia_id"])
            if len(ids) != 1 or bad:
                raise DataError(path, f"dia_id {short(turn['dia_id'])} is not D<session>:<turn>", where)
            meta = {"session": f"D{number}", "date_time": date_time, "dia_id": turn["dia_id"]}
            if turn.get("blip_caption"):
                meta["blip_caption"] = turn["blip_caption"]
            if turn.get("img_url"):
                meta["img_url"] = turn["img_url"]
            messages.append(
                Message(
                    ids[0],
                    turn_text(turn, date_time if dates_in_text else None),
                    time=time,
                    speaker=turn["speaker"],
                    meta=meta,
                    shows=("time", "speaker") if dates_in_text else ("speaker",),
                )
            )
    turn_ids = {m.id for m in messages}
    if len(turn_ids) != len(messages):
        raise DataError(path, "two turns share a dia_id", f"{place}.conversation")
    questions = []
    for i, qa in enumerate(row["qa"]):
        where = f"{place}.qa[{i}]"
        if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
            raise DataError(path, "a question needs a 'question' string", where)
        category = qa.get("category")
        if category not in CATEGORIES:
            raise DataError(path, f"category {short(category)} is not one of 1-5", where)
        if categories is not None and category not in categories:
            continue
        qmeta: dict[str, Any] = {"locomo_category": category, "evidence": qa.get("evidence", [])}
        if category == 5:
            if "adversarial_answer" in qa:
                qmeta["adversarial_answer"] = str(qa["adversarial_answer"])
            if "answer" in qa:
                qmeta["answer"] = str(qa["answer"])
            if choice_seed is not None:
                qmeta["slots"] = two_way_options(qa, f"{choice_seed}:{sample_id}:q{i}", path, where)
            answers: tuple[str, ...] = (NOT_MENTIONED,)
        else:
            if qa.get("answer") is None or isinstance(qa["answer"], (dict, list)):
                raise DataError(path, "a question of categories 1-4 needs an answer", where)
            answers = (str(qa["answer"]),)
        ids, bad = parse_evidence(qa.get("evidence", []))
        unknown = [e for e in ids if e not in turn_ids] + bad
        if unknown:
            log.warning(
                "%s: %s (%s): evidence %s matches no turn; left out of its targets",
                path,
                where,
                sample_id,
                ", ".join(unknown),
            )
            qmeta["unknown_evidence"] = unknown
        questions.append(
            Question(
                id=f"q{i}",
                text=qa["question"],
                answers=answers,
                category=category_name(category),
                targets=[e for e in ids if e in turn_ids],
                meta=qmeta,
            )
        )
    return Sample(
        sample_id,
        messages,
        questions,
        {
            "file": str(path),
            "speakers": [conversation.get("speaker_a"), conversation.get("speaker_b")],
            "sessions": len({m.meta["session"] for m in messages}),
            # the gold memory points a store is measured against (memplug.diagnosis.sample_points)
            "memory_points": observations(row.get("observation"), turn_ids),
        },
    )


def observations(value: Any, turn_ids: set[str]) -> list[dict[str, Any]]:
    """The release's per-session ``observation`` lists as memory points: each observation's
    text and the turns it cites (``[text, "D1:3"]`` or ``[text, ["D1:3", "D1:5"]]``; ids
    matching no turn left out). A release without observations has none."""
    points: list[dict[str, Any]] = []
    for by_speaker in (value or {}).values() if isinstance(value, dict) else ():
        for items in (by_speaker or {}).values() if isinstance(by_speaker, dict) else ():
            for item in items if isinstance(items, list) else ():
                if not isinstance(item, list) or not item or not isinstance(item[0], str):
                    continue
                cited = item[1] if len(item) > 1 else []
                ids = [cited] if isinstance(cited, str) else [c for c in cited if isinstance(c, str)]
                points.append({"text": item[0], "message_ids": [i for i in ids if i in turn_ids]})
    return points


def two_way_options(qa: dict[str, Any], draw: str, path: Path, where: str) -> dict[str, str]:
    """The options of the official category-5 question, ``option_a`` and ``option_b``: "Not
    mentioned in the conversation" and the question's ``answer`` (what get_gpt_answers
    reads), else its ``adversarial_answer`` (what the release holds), in an order drawn
    from ``draw`` (the official script: ``random.random() < 0.5`` puts "Not mentioned"
    first)."""
    shown = qa.get("answer", qa.get("adversarial_answer"))
    if shown is None or isinstance(shown, (dict, list)):
        raise DataError(
            path,
            "a category-5 question needs an 'adversarial_answer' (the other option of the official two-way choice)",
            where,
        )
    first = random.Random(draw).random() < 0.5
    a, b = (NOT_MENTIONED, str(shown)) if first else (str(shown), NOT_MENTIONED)
    return {"option_a": a, "option_b": b}


def load_release(
    path: Path, *, dates_in_text: bool = True, categories: frozenset[int] | None = None, choice_seed: int | None = None
) -> Iterator[Sample]:
    """Samples of every conversation in the file (a list of them, or one object)."""
    data = read_json(path)
    rows = data if isinstance(data, list) else [data]
    if not rows:
        raise DataError(path, "holds an empty list of conversations")
    for r, row in enumerate(rows):
        yield read_conversation(
            path,
            f"[{r}]" if isinstance(data, list) else "conversation",
            row,
            dates_in_text=dates_in_text,
            categories=categories,
            choice_seed=choice_seed,
        )
