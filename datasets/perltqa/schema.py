"""The PerLTQA release schema (English v2), checked and turned into samples.

Memory file: ``{name: {"profile": {field: value}, "profile_description": str,
"social_relationship": {"C_R": {"Supporting Characters", "Description", "Relationship"}},
"events": {"C_R_E": {"content", "summary", "Characters", "Creation Time", ...}},
"dialogues": {"C_R_E#N": {"events": "C_R_E", "contents": {timestamp: [utterance]}}}}}``.

QA file: ``[{name: {"profile": [QA], "social_relationship": [{id: [QA]}], "events": [...],
"dialogues": [...]}}]`` with QA ``{"Question", "Answer", "Reference Memory",
"Memory Anchors": [{anchor: [start, end]}]}``; Reference Memory is a profile field name
(profile questions) or a stringified Python list of memory ids.

The generator writes the same structures, so both paths share this one converter.
Semantic memory = profile and social relationships; episodic = events and dialogues
(PerLTQA §3.4).
"""

from __future__ import annotations

import ast
import html
from pathlib import Path
from typing import Any, Mapping

from memplug.errors import DataError
from memplug.models import Message, Question, Sample

SECTIONS = ("profile", "social_relationship", "events", "dialogues")
MEMORY_TYPE = {"profile": "semantic", "social_relationship": "semantic", "events": "episodic", "dialogues": "episodic"}
CHARACTER_KEYS = ("profile", "profile_description", "social_relationship", "events", "dialogues")

#: the 14 profile fields of PerLTQA §3.1 as the English release names them
PROFILE_FIELDS = (
    "Protagonist",
    "Gender",
    "Nickname",
    "Title",
    "Age",
    "Occupation",
    "Nationality",
    "Physical Characteristics",
    "Hobbies",
    "Achievements",
    "Ethnic Background",
    "Education Background",
    "Employer",
    "Awards and Role Models",
)
_LABELS = {
    "en": {"Protagonist": "name", "Physical Characteristics": "physical characteristics"},
    "zh": dict(
        zip(
            PROFILE_FIELDS,
            (
                "姓名",
                "性别",
                "昵称",
                "头衔",
                "年龄",
                "职业",
                "国籍",
                "外貌特征",
                "爱好",
                "成就",
                "民族",
                "教育背景",
                "雇主",
                "奖项与榜样",
            ),
        )
    ),
}


PLACE_LIMIT = 200


class Checker:
    """Type checks that fail with the file and the key path of the bad part."""

    def __init__(self, path: Path | str) -> None:
        self.path = path

    def fail(self, place: str, problem: str) -> DataError:
        # names and keys come from the file: one a megabyte long must not make a megabyte error
        if len(place) > PLACE_LIMIT:
            half = PLACE_LIMIT // 2
            place = f"{place[:half]}...{place[-half:]}"
        return DataError(self.path, problem, place)

    def expect(self, value: Any, kind: type | tuple[type, ...], place: str) -> Any:
        if not isinstance(value, kind) or isinstance(value, bool):
            names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise self.fail(place, f"expected {names}, got {type(value).__name__}")
        return value

    def field(self, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], place: str) -> Any:
        if key not in obj:
            raise self.fail(place, f"missing key {key!r}")
        return self.expect(obj[key], kind, f"{place}.{key}")


def memory_messages(name: str, memory: Mapping[str, Any], check: Checker, lang: str) -> list[Message]:
    """One message per memory item: profile field, description, relationship, event, dialogue."""
    place = f"{name!r}"
    check.expect(memory, dict, place)
    for key in memory:
        if key not in CHARACTER_KEYS:
            raise check.fail(f"{place}.{key}", f"unknown section; expected one of {', '.join(CHARACTER_KEYS)}")
    zh = lang == "zh"
    labels = _LABELS[lang]
    out: list[Message] = []
    profile = check.field(memory, "profile", dict, place)
    for fld, value in profile.items():
        check.expect(value, (str, int, float), f"{place}.profile.{fld}")
        label = labels.get(fld, fld if zh else fld.lower())
        text = f"{name}的{label}：{str(value)}" if zh else f"{name}'s {label}: {str(value)}"
        out.append(Message(f"profile/{fld}", text, meta={"memory_type": "semantic", "kind": "profile", "field": fld}))
    if "profile_description" in memory:
        text = check.expect(memory["profile_description"], str, f"{place}.profile_description")
        out.append(Message("profile_description", text, meta={"memory_type": "semantic", "kind": "profile"}))
    for rid, rel in check.expect(memory.get("social_relationship", {}), dict, f"{place}.social_relationship").items():
        where = f"{place}.social_relationship.{rid}"
        check.expect(rel, dict, where)
        other = check.field(rel, "Supporting Characters", str, where)
        kind = check.field(rel, "Relationship", str, where)
        desc = check.field(rel, "Description", str, where)
        text = f"{other}是{name}的{kind}。{desc}" if zh else f"{other} is {name}'s {kind}. {desc}"
        out.append(
            Message(
                rid,
                text,
                meta={
                    "memory_type": "semantic",
                    "kind": "social_relationship",
                    "relationship": kind,
                    "supporting_character": other,
                },
            )
        )
    for eid, event in check.expect(memory.get("events", {}), dict, f"{place}.events").items():
        where = f"{place}.events.{eid}"
        check.expect(event, dict, where)
        content = check.field(event, "content", str, where)
        summary = str(event.get("summary", ""))
        when = event.get("Creation Time")
        if when is not None:
            check.expect(when, str, f"{where}.Creation Time")
        people = check.expect(event.get("Characters", []), list, f"{where}.Characters")
        head = summary + (f"（{when}）" if zh and when else f" ({when})" if when else "")
        text = f"{head}：{content}" if zh else f"{head}: {content}"
        out.append(
            Message(
                eid,
                text,
                time=when or None,
                shows=("time",) if when else (),
                meta={
                    "memory_type": "episodic",
                    "kind": "events",
                    "summary": summary,
                    "characters": [str(p) for p in people],
                },
            )
        )
    for did, dialogue in check.expect(memory.get("dialogues", {}), dict, f"{place}.dialogues").items():
        where = f"{place}.dialogues.{did}"
        check.expect(dialogue, dict, where)
        contents = check.field(dialogue, "contents", dict, where)
        lines: list[str] = []
        for stamp, utterances in contents.items():
            check.expect(utterances, list, f"{where}.contents.{stamp}")
            lines.append(f"[{stamp}]")
            lines.extend(check.expect(u, str, f"{where}.contents.{stamp}[{i}]") for i, u in enumerate(utterances))
        if not lines:
            raise check.fail(f"{where}.contents", "dialogue has no utterances")
        event_id = dialogue.get("events")
        out.append(
            Message(
                did,
                "\n".join(lines),
                time=next(iter(contents)),
                shows=("time",),
                meta={
                    "memory_type": "episodic",
                    "kind": "dialogues",
                    "event": None if event_id is None else str(event_id),
                },
            )
        )
    return out


def parse_reference(check: Checker, section: str, raw: Any, place: str) -> list[str]:
    """Memory ids a QA item refers to: a profile field, or a stringified list of ids."""
    if isinstance(raw, list):
        refs = raw
    else:
        text = check.expect(raw, str, place).strip()
        if section == "profile":
            return [f"profile/{text}"]
        if text.startswith("["):
            try:
                refs = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise check.fail(place, f"cannot parse reference list {text[:60]!r}") from None
        else:
            refs = [text]
    if not isinstance(refs, list) or not all(isinstance(r, (str, int)) for r in refs):
        raise check.fail(place, "expected a list of memory ids")
    return [str(r) for r in refs]


def parse_anchors(check: Checker, raw: Any, place: str) -> list[tuple[str, int, int]]:
    """(text, start, end) of each memory anchor; HTML entities in the text are decoded."""
    out = []
    for i, item in enumerate(check.expect(raw, list, place)):
        check.expect(item, dict, f"{place}[{i}]")
        for text, span in item.items():
            ok = isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) for x in span)
            if not ok:
                raise check.fail(f"{place}[{i}].{text}", "expected [start, end] integers")
            out.append((html.unescape(text), span[0], span[1]))
    return out


def qa_questions(name: str, sections: Mapping[str, Any], ids: set[str], check: Checker) -> list[Question]:
    """Questions of one character; targets are the referenced memory ids present in the memory."""
    place = f"[{name!r}]"
    check.expect(sections, dict, place)
    out: list[Question] = []
    for section, groups in sections.items():
        if section not in SECTIONS:
            raise check.fail(f"{place}.{section}", f"unknown section; expected one of {', '.join(SECTIONS)}")
        check.expect(groups, list, f"{place}.{section}")
        if section == "profile":
            keyed = [("", groups, f"{place}.profile")]
        else:
            keyed = []
            for g, group in enumerate(groups):
                check.expect(group, dict, f"{place}.{section}[{g}]")
                keyed += [(key, items, f"{place}.{section}[{g}].{key}") for key, items in group.items()]
        for key, items, where in keyed:
            for i, qa in enumerate(check.expect(items, list, where)):
                at = f"{where}[{i}]"
                check.expect(qa, dict, at)
                refs = parse_reference(
                    check, section, check.field(qa, "Reference Memory", (str, list), at), f"{at}.Reference Memory"
                )
                anchors = parse_anchors(check, check.field(qa, "Memory Anchors", list, at), f"{at}.Memory Anchors")
                meta: dict[str, Any] = {
                    "family": "perltqa",  # selects PerLTQA's judge prompt (memplug.judge)
                    "memory_type": MEMORY_TYPE[section],
                    "character": name,
                    "reference": refs,
                    "anchor_spans": [list(a) for a in anchors],
                }
                missing = [r for r in refs if r not in ids]
                if missing:  # kept, not fixed: the release has a few dangling references
                    meta["unresolved_references"] = missing
                out.append(
                    Question(
                        id=f"{name}/{section}/{key or 'profile'}/{i}",
                        text=check.field(qa, "Question", str, at),
                        answers=(check.field(qa, "Answer", str, at),),
                        category=section,
                        targets=tuple(r for r in refs if r in ids),
                        anchors=tuple(text for text, _, _ in anchors),
                        meta=meta,
                    )
                )
    return out


def character_sample(
    name: str, memory: Any, sections: Any, lang: str, memory_check: Checker, qa_check: Checker, source: str
) -> Sample:
    messages = memory_messages(name, memory, memory_check, lang)
    questions = qa_questions(name, sections, {m.id for m in messages}, qa_check)
    counts = {t: sum(m.meta["memory_type"] == t for m in messages) for t in ("semantic", "episodic")}
    return Sample(
        name,
        messages,
        questions,
        {
            "character": name,
            "source": source,
            "language": lang,
            "n_semantic": counts["semantic"],
            "n_episodic": counts["episodic"],
            "n_questions_by_type": {
                t: sum(q.meta["memory_type"] == t for q in questions) for t in ("semantic", "episodic")
            },
        },
    )
