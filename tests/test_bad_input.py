"""Malformed input for every built-in loader and the CLI: one line, exit 2, nothing else touched.

Each case writes a broken file (or passes a bad option) and runs `memplug eval` on it. It
must fail with exactly one line on stderr that names the file, the place in it and the
problem, exit code 2, no traceback, and leave the output directory (which holds an
earlier run) byte for byte as it was. The table runs in-process through click's runner,
which also fails on any Python warning or logged warning (what a fresh process would
add to stderr); the cases where the process boundary is the point run through
`python -m memplug.cli`: every 50 MB input (its peak memory is measured) and one case
of each loader that has none.
"""

from __future__ import annotations

import codecs
import copy
import json
import logging
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import attrs
import pytest
from click.testing import CliRunner

FIXTURES = Path(__file__).parent / "fixtures" / "perltqa"
BIG = 50 * 1024 * 1024  # the "50 MB single line"
MAX_LINE = 1000  # an error line quotes values, it never echoes a 50 MB one
BIG_RSS_MB = 400  # measured: ~80 MB for the interpreter with memplug, 180-285 MB with a 50 MB line

# --- well-formed inputs, each case breaks one thing -------------------------------------------

MEMDAILY = [
    {
        "tid": 0,
        "message_list": [
            {"mid": 0, "message": "我的上司就只有高中学历。", "time": "2024年04月01日 周一 08:39", "place": "广东深圳"},
            {"mid": 1, "message": "我表妹学历是硕士。", "time": "2024年04月04日 周四 07:08", "place": "广东深圳"},
        ],
        "question_list": [
            {
                "qid": 0,
                "question": "我的上司是哪个学校毕业的呢？",
                "answer": "高中",
                "target_step_id": [0],
                "choices": {"A": "本科", "B": "专科", "C": "硕士", "D": "高中"},
                "ground_truth": "D",
                "time": "2024年04月05日 周五 11:59",
            }
        ],
    }
]
MEMDAILY_FILE = "01_simple_roles.json"

FACTCON = {
    "context": "Here is a list of facts:\n0. Anna is married to Ben.\n1. Anna is married to Carl.\n",
    "questions": ["Who is Anna married to?"],
    "answers": [["Carl"]],
    "metadata": {"qa_pair_ids": ["factconsolidation_sh_6k_no0"], "source": "factconsolidation_sh_6k"},
}
FACTCON_FILE = "factconsolidation_sh_6k.json"

PERLTQA_MEMORY, PERLTQA_QA = "perltmem_en_v2.json", "perltqa_en_v2.json"

SAMPLE = {
    "id": "s0",
    "messages": [
        {"id": "m0", "text": "Item 0-0 is apple.", "time": None, "speaker": None, "meta": {}},
        {"id": "m1", "text": "Item 0-1 is river.", "time": None, "speaker": None, "meta": {}},
    ],
    "questions": [
        {
            "id": "q0",
            "text": "What is item 0-0?",
            "answers": ["apple"],
            "category": "even",
            "choices": None,
            "correct_choice": None,
            "targets": ["m0"],
            "anchors": [],
            "time": None,
            "meta": {},
        }
    ],
    "meta": {},
}
SAMPLES_FILE = "samples.jsonl"

LOCOMO = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "What is its name?"},
            ],
        },
        "qa": [{"question": "What did Ann adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 4}],
    }
]
LOCOMO_FILE = "locomo10.json"

LONGMEMEVAL = [
    {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "What degree did I graduate with?",
        "answer": "Business Administration",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_dates": ["2023/05/22 (Mon) 14:05"],
        "haystack_session_ids": ["answer_1"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I graduated in Business Administration.", "has_answer": True},
                {"role": "assistant", "content": "Great background!", "has_answer": False},
            ]
        ],
        "answer_session_ids": ["answer_1"],
    }
]
LONGMEMEVAL_FILE = "longmemeval_oracle.json"

CONVERSATION = {
    "id": "trip",
    "sessions": [
        {
            "id": "S1",
            "date": "2024-03-02T10:00",
            "turns": [
                {"speaker": "Ana", "text": "We land in Lisbon on Friday."},
                {"speaker": "Ben", "text": "I'll book a tour."},
            ],
        }
    ],
    "qa": [
        {
            "id": "q1",
            "question": "Which city do they fly to?",
            "answers": ["Lisbon"],
            "evidence": ["S1:1"],
            "category": "single-hop",
            "date": "2024-03-12",
        }
    ],
}
CONVERSATIONS_FILE = "conversations.jsonl"


def dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def edited(base: Any, change: Callable[[Any], Any]) -> Any:
    data = copy.deepcopy(base)
    change(data)
    return data


def perltqa(name: str, change: Callable[[Any], Any]) -> dict[str, bytes]:
    """The PerLTQA fixture pair with one of its files edited."""
    files = {n: (FIXTURES / n).read_bytes() for n in (PERLTQA_MEMORY, PERLTQA_QA)}
    files[name] = dump(edited(json.loads(files[name]), change))
    return files


def qa_item(data: Any) -> dict[str, Any]:
    item: dict[str, Any] = data[0]["Wang Xiaoming"]["events"][0]["1_0_0"][0]
    return item


def jsonl(*records: Any) -> bytes:
    return b"".join(dump(r) + b"\n" for r in records)


def big_text() -> str:
    return "a" * BIG


@attrs.frozen
class Case:
    """A broken input: the files to write, the --data path among them, extra args, and what the
    error line must contain (file, place, problem)."""

    id: str
    dataset: str
    files: Callable[[], dict[str, bytes]]
    needles: tuple[str, ...]
    data: str | None = None  # default: the first file
    args: tuple[str, ...] = ()
    big: bool = False

    def param(self) -> Any:
        return pytest.param(self, id=self.id)


def md(change: Callable[[Any], Any]) -> Callable[[], dict[str, bytes]]:
    return lambda: {MEMDAILY_FILE: dump(edited(MEMDAILY, change))}


def fc(change: Callable[[Any], Any]) -> Callable[[], dict[str, bytes]]:
    return lambda: {FACTCON_FILE: dump(edited(FACTCON, change))}


def sm(*records: Any) -> Callable[[], dict[str, bytes]]:
    return lambda: {SAMPLES_FILE: jsonl(*records)}


def question0(d: Any) -> dict[str, Any]:
    question: dict[str, Any] = d[0]["question_list"][0]
    return question


UTF16 = codecs.BOM_UTF16_LE  # what Windows tools write for "Unicode"

CASES = [
    # ---- memdaily (MemSim's release) ------------------------------------------------------
    Case(
        "memdaily-truncated",
        "memdaily",
        lambda: {MEMDAILY_FILE: dump(MEMDAILY)[:-40]},
        (MEMDAILY_FILE, "line 1 column", "invalid JSON"),
    ),
    Case(
        "memdaily-top-level-string",
        "memdaily",
        lambda: {MEMDAILY_FILE: b'"trajectories"'},
        (MEMDAILY_FILE, "expected a list of trajectories"),
    ),
    Case(
        "memdaily-message-not-text",
        "memdaily",
        md(lambda d: d[0]["message_list"][1].update(message=42)),
        (MEMDAILY_FILE, "[0].message_list[1]", "lacks its text"),
    ),
    Case(
        "memdaily-choices-a-list",
        "memdaily",
        md(lambda d: question0(d).update(choices=["本科", "高中"])),
        (MEMDAILY_FILE, "[0].question_list[0]", "choices must be an object"),
    ),
    Case(
        "memdaily-target-ids-a-number",
        "memdaily",
        md(lambda d: question0(d).update(target_step_id=0)),
        (MEMDAILY_FILE, "[0].question_list[0]", "target_step_id must be a list"),
    ),
    Case("memdaily-missing-tid", "memdaily", md(lambda d: d[0].pop("tid")), (MEMDAILY_FILE, "[0]", "lacks 'tid'")),
    Case(
        "memdaily-missing-ground-truth",
        "memdaily",
        md(lambda d: question0(d).pop("ground_truth")),
        (MEMDAILY_FILE, "[0].question_list[0]", "lacks 'ground_truth'"),
    ),
    Case(
        "memdaily-empty-file",
        "memdaily",
        lambda: {MEMDAILY_FILE: b""},
        (MEMDAILY_FILE, "line 1 column 1", "invalid JSON"),
    ),
    Case("memdaily-empty-list", "memdaily", lambda: {MEMDAILY_FILE: b"[]"}, (MEMDAILY_FILE, "no trajectories")),
    Case(
        "memdaily-target-resolves-to-nothing",
        "memdaily",
        md(lambda d: question0(d).update(target_step_id=[0, 42])),
        (MEMDAILY_FILE, "[0].question_list[0]", "target_step_id ['42'] names no message"),
    ),
    Case(
        "memdaily-ground-truth-not-a-choice",
        "memdaily",
        md(lambda d: question0(d).update(ground_truth="E")),
        (MEMDAILY_FILE, "[0].question_list[0]", "ground_truth 'E' is not one of the choices"),
    ),
    Case(
        "memdaily-repeated-question-id",
        "memdaily",
        md(lambda d: d[0]["question_list"].append(copy.deepcopy(question0(d)))),
        (MEMDAILY_FILE, "[0].question_list[1]", "question id", "repeats"),
    ),
    Case(
        "memdaily-repeated-tid",
        "memdaily",
        md(lambda d: d.append(copy.deepcopy(d[0]))),
        (MEMDAILY_FILE, "[1]", "tid 0", "repeats"),
    ),
    Case(
        "memdaily-utf16",
        "memdaily",
        lambda: {MEMDAILY_FILE: UTF16 + json.dumps(MEMDAILY).encode("utf-16-le")},
        (MEMDAILY_FILE, "UTF-16", "UTF-8"),
    ),
    Case(
        "memdaily-latin1",
        "memdaily",
        lambda: {
            MEMDAILY_FILE: json.dumps(  # ASCII but for one latin-1 byte
                edited(MEMDAILY, lambda d: d[0]["message_list"][1].update(message="J'ai visité le café."))
            )
            .replace("\\u00e9", "\xe9")
            .encode("latin-1")
        },
        (MEMDAILY_FILE, "line 1 column", "not UTF-8", "0xe9"),
    ),
    Case(
        "memdaily-scenario-with-no-trajectory",
        "memdaily",
        md(lambda d: None),
        (MEMDAILY_FILE, "no trajectories", "scenario 'places'"),
        args=("-o", "scenario=places"),
    ),
    Case(
        "memdaily-50MB-line-truncated",
        "memdaily",
        lambda: {
            MEMDAILY_FILE: (
                '[{"tid": 0, "message_list": [{"mid": 0, "message": "' + big_text() + '"}], "question_list": ['
            ).encode()
        },
        (MEMDAILY_FILE, f"line 1 column {BIG + 76}", "invalid JSON"),
        big=True,
    ),
    Case(
        "memdaily-50MB-value-in-the-error",
        "memdaily",
        md(lambda d: question0(d).update(ground_truth=big_text())),
        (MEMDAILY_FILE, "[0].question_list[0]", "is not one of the choices"),
        big=True,
    ),
    # ---- factcon (MemoryAgentBench release rows) -----------------------------------------
    Case(
        "factcon-truncated",
        "factcon",
        lambda: {FACTCON_FILE: dump(FACTCON)[:-10]},
        (FACTCON_FILE, "line 1 column", "invalid JSON"),
    ),
    Case(
        "factcon-questions-a-string",
        "factcon",
        fc(lambda d: d.update(questions="Who is Anna married to?")),
        (FACTCON_FILE, "row.questions", "expected list, got str"),
    ),
    Case(
        "factcon-answer-not-text",
        "factcon",
        fc(lambda d: d.update(answers=[[7]])),
        (FACTCON_FILE, "row.answers[0]", "answer strings"),
    ),
    Case(
        "factcon-missing-context",
        "factcon",
        fc(lambda d: d.pop("context")),
        (FACTCON_FILE, "row", "missing key 'context'"),
    ),
    Case(
        "factcon-row-not-an-object",
        "factcon",
        lambda: {FACTCON_FILE: dump([FACTCON, 3])},
        (FACTCON_FILE, "row 1", "expected an object, got int"),
    ),
    Case(
        "factcon-empty-file",
        "factcon",
        lambda: {FACTCON_FILE: b"  \n"},
        (FACTCON_FILE, "line 2 column 1", "invalid JSON"),
    ),
    Case("factcon-empty-list", "factcon", lambda: {FACTCON_FILE: b"[]"}, (FACTCON_FILE, "empty list of rows")),
    Case(
        "factcon-no-questions",
        "factcon",
        fc(
            lambda d: d.update(
                questions=[], answers=[], metadata={"qa_pair_ids": [], "source": "factconsolidation_sh_6k"}
            )
        ),
        (FACTCON_FILE, "row.questions", "no questions"),
    ),
    Case(
        "factcon-ids-do-not-match-questions",
        "factcon",
        fc(lambda d: d["metadata"]["qa_pair_ids"].append("factconsolidation_sh_6k_no1")),
        (FACTCON_FILE, "row.metadata", "one id per question"),
    ),
    Case(
        "factcon-fact-without-serial",
        "factcon",
        fc(lambda d: d.update(context=d["context"] + "Carl is tall.\n")),
        (FACTCON_FILE, "row.context line 4", "numbered fact"),
    ),
    Case(
        "factcon-utf16",
        "factcon",
        lambda: {FACTCON_FILE: codecs.BOM_UTF16_BE + json.dumps(FACTCON).encode("utf-16-be")},
        (FACTCON_FILE, "UTF-16", "UTF-8"),
    ),
    Case(
        "factcon-latin1",
        "factcon",
        lambda: {
            FACTCON_FILE: json.dumps(
                edited(FACTCON, lambda d: d.update(questions=["Who is Anna married to, señor?"])), ensure_ascii=False
            ).encode("latin-1")
        },
        (FACTCON_FILE, "line 1 column", "not UTF-8", "0xf1"),
    ),
    Case(
        "factcon-directory-without-files",
        "factcon",
        lambda: {"notes.txt": b"hello"},
        ("no *.json or *.parquet FactConsolidation files",),
        data=".",
    ),
    Case(
        "factcon-50MB-fact",
        "factcon",
        fc(
            lambda d: d.update(
                context=d["context"] + "2. " + big_text() + "\n",
                metadata={"qa_pair_ids": ["factconsolidation_no0"], "source": "x"},
            )
        ),
        (FACTCON_FILE, "row.metadata.qa_pair_ids[0]", "cannot tell single-hop from multi-hop"),
        big=True,
    ),
    Case(
        "factcon-50MB-id-in-the-error",
        "factcon",
        fc(lambda d: d["metadata"].update(qa_pair_ids=[big_text()], source="x")),
        (FACTCON_FILE, "qa_pair_ids[0]", "cannot tell"),
        big=True,
    ),
    # ---- perltqa (memory file + QA file) ---------------------------------------------------
    Case(
        "perltqa-truncated-memory",
        "perltqa",
        lambda: {
            PERLTQA_MEMORY: (FIXTURES / PERLTQA_MEMORY).read_bytes()[:500],
            PERLTQA_QA: (FIXTURES / PERLTQA_QA).read_bytes(),
        },
        (PERLTQA_MEMORY, "column", "invalid JSON"),
        data=".",
    ),
    Case(
        "perltqa-truncated-qa",
        "perltqa",
        lambda: {
            PERLTQA_MEMORY: (FIXTURES / PERLTQA_MEMORY).read_bytes(),
            PERLTQA_QA: (FIXTURES / PERLTQA_QA).read_bytes()[:-3],
        },
        (PERLTQA_QA, "column", "invalid JSON"),
        data=".",
    ),
    Case(
        "perltqa-qa-file-an-object",
        "perltqa",
        lambda: {PERLTQA_MEMORY: (FIXTURES / PERLTQA_MEMORY).read_bytes(), PERLTQA_QA: b"{}"},
        (PERLTQA_QA, "top level", "expected list, got dict"),
        data=".",
    ),
    Case(
        "perltqa-age-a-list",
        "perltqa",
        lambda: perltqa(PERLTQA_MEMORY, lambda d: d["Wang Xiaoming"]["profile"].update(Age=[28])),
        (PERLTQA_MEMORY, "'Wang Xiaoming'.profile.Age", "expected str or int or float, got list"),
        data=".",
    ),
    Case(
        "perltqa-missing-question",
        "perltqa",
        lambda: perltqa(PERLTQA_QA, lambda d: qa_item(d).pop("Question")),
        (PERLTQA_QA, ".events[0].1_0_0[0]", "missing key 'Question'"),
        data=".",
    ),
    Case(
        "perltqa-empty-qa-file",
        "perltqa",
        lambda: {PERLTQA_MEMORY: (FIXTURES / PERLTQA_MEMORY).read_bytes(), PERLTQA_QA: b""},
        (PERLTQA_QA, "line 1 column 1", "invalid JSON"),
        data=".",
    ),
    Case(
        "perltqa-no-questions",
        "perltqa",
        lambda: {PERLTQA_MEMORY: (FIXTURES / PERLTQA_MEMORY).read_bytes(), PERLTQA_QA: b"[]"},
        (PERLTQA_QA, "no questions"),
        data=".",
    ),
    Case(
        "perltqa-character-not-in-memory",
        "perltqa",
        lambda: perltqa(PERLTQA_QA, lambda d: d.append({"Ghost": {}})),
        (PERLTQA_QA, "[2].Ghost", "character not in the memory file"),
        data=".",
    ),
    Case(
        "perltqa-qa-file-missing",
        "perltqa",
        lambda: {PERLTQA_MEMORY: (FIXTURES / PERLTQA_MEMORY).read_bytes()},
        ("nowhere.json", "cannot read", "No such file"),
        data=PERLTQA_MEMORY,
        args=("-o", "qa=nowhere.json"),
    ),
    Case(
        "perltqa-utf16-memory",
        "perltqa",
        lambda: {
            PERLTQA_MEMORY: UTF16 + (FIXTURES / PERLTQA_MEMORY).read_text(encoding="utf-8").encode("utf-16-le"),
            PERLTQA_QA: (FIXTURES / PERLTQA_QA).read_bytes(),
        },
        (PERLTQA_MEMORY, "UTF-16"),
        data=".",
    ),
    Case(
        "perltqa-latin1-qa",
        "perltqa",
        lambda: {
            PERLTQA_MEMORY: (FIXTURES / PERLTQA_MEMORY).read_bytes(),
            PERLTQA_QA: (FIXTURES / PERLTQA_QA)
            .read_bytes()
            .replace(b"Grand Canyon", "Gran Cañón".encode("latin-1"), 1),
        },
        (PERLTQA_QA, "line ", "not UTF-8", "0xf1"),
        data=".",
    ),
    Case(
        "perltqa-50MB-answer-without-question",
        "perltqa",
        lambda: perltqa(PERLTQA_QA, lambda d: qa_item(d).update(Answer=big_text(), Question=None)),
        (PERLTQA_QA, ".events[0].1_0_0[0].Question", "expected str"),
        data=".",
        big=True,
    ),
    # ---- a samples .jsonl written by `memplug generate` ---------------------------------------
    Case(
        "samples-truncated-first-line",
        "counting",
        lambda: {SAMPLES_FILE: jsonl(SAMPLE)[:-30]},
        (SAMPLES_FILE, "line 1", "not JSON"),
    ),
    Case(
        "samples-truncated-later-line",
        "counting",
        lambda: {SAMPLES_FILE: jsonl(SAMPLE) + jsonl(dict(SAMPLE, id="s1"))[:-30]},
        (SAMPLES_FILE, "line 2", "not JSON"),
    ),
    Case(
        "samples-messages-a-string",
        "counting",
        sm(dict(SAMPLE, messages="Item 0-0 is apple.")),
        (SAMPLES_FILE, "line 1", "messages", "expected list, got str"),
    ),
    Case(
        "samples-text-a-number",
        "counting",
        sm(edited(SAMPLE, lambda d: d["messages"][1].update(text=5))),
        (SAMPLES_FILE, "line 1", "messages[1].text", "expected str, got int"),
    ),
    Case(
        "samples-answers-a-string",
        "counting",
        sm(edited(SAMPLE, lambda d: d["questions"][0].update(answers="apple"))),
        (SAMPLES_FILE, "line 1", "questions[0].answers", "expected list, got str"),
    ),
    Case(
        "samples-missing-questions",
        "counting",
        sm(SAMPLE, edited(SAMPLE, lambda d: (d.pop("questions"), d.update(id="s1")))),
        (SAMPLES_FILE, "line 2", "missing key 'questions'"),
    ),
    Case(
        "samples-unknown-key",
        "counting",
        sm(edited(SAMPLE, lambda d: d["questions"][0].update(answer="apple"))),
        (SAMPLES_FILE, "line 1", "questions[0]", "unknown key 'answer'"),
    ),
    Case("samples-not-an-object", "counting", sm(SAMPLE, ["s1"]), (SAMPLES_FILE, "line 2", "expected an object")),
    Case("samples-empty-file", "counting", lambda: {SAMPLES_FILE: b""}, (SAMPLES_FILE, "no samples")),
    Case("samples-blank-lines-only", "counting", lambda: {SAMPLES_FILE: b"\n\n  \n"}, (SAMPLES_FILE, "no samples")),
    Case(
        "samples-target-resolves-to-nothing",
        "counting",
        sm(edited(SAMPLE, lambda d: d["questions"][0].update(targets=["m0", "m9"]))),
        (SAMPLES_FILE, "line 1", "questions[0].targets", "'m9'", "no message"),
    ),
    Case(
        "samples-correct-choice-not-a-choice",
        "counting",
        sm(edited(SAMPLE, lambda d: d["questions"][0].update(choices={"A": "apple", "B": "pear"}, correct_choice="C"))),
        (SAMPLES_FILE, "line 1", "correct_choice 'C'"),
    ),
    Case(
        "samples-repeated-sample-id",
        "counting",
        sm(SAMPLE, SAMPLE),
        (SAMPLES_FILE, "line 2", "sample id 's0'", "repeats"),
    ),
    Case(
        "samples-repeated-question-id",
        "counting",
        sm(edited(SAMPLE, lambda d: d["questions"].append(copy.deepcopy(d["questions"][0])))),
        (SAMPLES_FILE, "line 1", "questions[1]", "question id 'q0' repeats"),
    ),
    Case(
        "samples-utf16",
        "counting",
        lambda: {SAMPLES_FILE: UTF16 + jsonl(SAMPLE).decode().encode("utf-16-le")},
        (SAMPLES_FILE, "UTF-16"),
    ),
    Case(
        "samples-latin1",
        "counting",
        lambda: {
            SAMPLES_FILE: jsonl(SAMPLE)
            + jsonl(edited(SAMPLE, lambda d: (d.update(id="s1"), d["messages"][0].update(text="Item 0-0 is café."))))[
                :-1
            ]
            .decode()
            .encode("latin-1")
            + b"\n"
        },
        (SAMPLES_FILE, "line 2 column", "not UTF-8", "0xe9"),
    ),
    Case(
        "samples-50MB-line-without-questions",
        "counting",
        sm(edited(SAMPLE, lambda d: (d.pop("questions"), d["messages"][0].update(text=big_text())))),
        (SAMPLES_FILE, "line 1", "missing key 'questions'"),
        big=True,
    ),
    Case(
        "samples-50MB-line-of-garbage",
        "counting",
        lambda: {SAMPLES_FILE: b"{" + b"x" * BIG + b"\n"},
        (SAMPLES_FILE, "line 1", "not JSON"),
        big=True,
    ),
    # ---- locomo (the LoCoMo release) -----------------------------------------------------------
    Case("locomo-truncated", "locomo", lambda: {LOCOMO_FILE: dump(LOCOMO)[:-30]}, (LOCOMO_FILE, "invalid JSON")),
    Case("locomo-empty-file", "locomo", lambda: {LOCOMO_FILE: b""}, (LOCOMO_FILE, "invalid JSON")),
    Case(
        "locomo-question-a-number",
        "locomo",
        lambda: {LOCOMO_FILE: dump(edited(LOCOMO, lambda d: d[0]["qa"][0].update(question=5)))},
        (LOCOMO_FILE, "[0].qa[0]", "'question' string"),
    ),
    Case(
        "locomo-session-a-string",
        "locomo",
        lambda: {LOCOMO_FILE: dump(edited(LOCOMO, lambda d: d[0]["conversation"].update(session_1="hello")))},
        (LOCOMO_FILE, "session_1", "expected a list of turns"),
    ),
    Case(
        "locomo-repeated-dia-id",
        "locomo",
        lambda: {
            LOCOMO_FILE: dump(edited(LOCOMO, lambda d: d[0]["conversation"]["session_1"][1].update(dia_id="D1:1")))
        },
        (LOCOMO_FILE, "two turns share a dia_id"),
    ),
    Case(
        "locomo-unknown-category",
        "locomo",
        lambda: {LOCOMO_FILE: dump(edited(LOCOMO, lambda d: d[0]["qa"][0].update(category=9)))},
        (LOCOMO_FILE, "[0].qa[0]", "category 9"),
    ),
    Case(
        "locomo-utf16",
        "locomo",
        lambda: {LOCOMO_FILE: UTF16 + json.dumps(LOCOMO).encode("utf-16-le")},
        (LOCOMO_FILE, "UTF-16"),
    ),
    Case(
        "locomo-nested-too-deeply",
        "locomo",
        lambda: {LOCOMO_FILE: b"[" * 100_000 + b"]" * 100_000},
        (LOCOMO_FILE, "nested too deeply"),
    ),
    # ---- longmemeval (the LongMemEval release layout) --------------------------------------------
    Case(
        "longmemeval-truncated",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: dump(LONGMEMEVAL)[:-30]},
        (LONGMEMEVAL_FILE, "line 1 column", "invalid JSON"),
    ),
    Case("longmemeval-empty-file", "longmemeval", lambda: {LONGMEMEVAL_FILE: b""}, (LONGMEMEVAL_FILE, "invalid JSON")),
    Case(
        "longmemeval-dates-fewer-than-sessions",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: dump(edited(LONGMEMEVAL, lambda d: d[0].update(haystack_dates=[])))},
        (LONGMEMEVAL_FILE, "[0] (q1)", "'haystack_dates' has 0"),
    ),
    Case(
        "longmemeval-turn-without-content",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: dump(edited(LONGMEMEVAL, lambda d: d[0]["haystack_sessions"][0][0].pop("content")))},
        (LONGMEMEVAL_FILE, "haystack_sessions[0][0]", "'content'"),
    ),
    Case(
        "longmemeval-question-a-number",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: dump(edited(LONGMEMEVAL, lambda d: d[0].update(question=5)))},
        (LONGMEMEVAL_FILE, "[0]", "'question'"),
    ),
    Case(
        "longmemeval-repeated-question-id",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: dump(LONGMEMEVAL * 2)},
        (LONGMEMEVAL_FILE, "[1]", "question_id q1 repeats"),
    ),
    Case(
        "longmemeval-unknown-question-type",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: dump(edited(LONGMEMEVAL, lambda d: d[0].update(question_type="weird")))},
        (LONGMEMEVAL_FILE, "question_type 'weird'"),
    ),
    Case(
        "longmemeval-utf16",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: UTF16 + json.dumps(LONGMEMEVAL).encode("utf-16-le")},
        (LONGMEMEVAL_FILE, "UTF-16"),
    ),
    Case(
        "longmemeval-nested-too-deeply",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: b"[" * 100_000 + b"]" * 100_000},
        (LONGMEMEVAL_FILE, "nested too deeply"),
    ),
    # ---- conversations (bring your own, JSON lines) -----------------------------------------------
    Case(
        "conversations-truncated-line",
        "conversations",
        lambda: {CONVERSATIONS_FILE: dump(CONVERSATION)[:-20] + b"\n"},
        (CONVERSATIONS_FILE, "line 1", "not JSON"),
    ),
    Case(
        "conversations-empty-file",
        "conversations",
        lambda: {CONVERSATIONS_FILE: b""},
        (CONVERSATIONS_FILE, "no samples"),
    ),
    Case(
        "conversations-line-a-list",
        "conversations",
        lambda: {CONVERSATIONS_FILE: b"[1, 2]\n"},
        (CONVERSATIONS_FILE, "line 1", "expected an object"),
    ),
    Case(
        "conversations-repeated-id",
        "conversations",
        lambda: {CONVERSATIONS_FILE: jsonl(CONVERSATION, CONVERSATION)},
        (CONVERSATIONS_FILE, "line 2", "'trip' is also the id of line 1"),
    ),
    Case(
        "conversations-turn-without-text",
        "conversations",
        lambda: {CONVERSATIONS_FILE: jsonl(edited(CONVERSATION, lambda d: d["sessions"][0]["turns"][0].pop("text")))},
        (CONVERSATIONS_FILE, "line 1", "sessions[0].turns[0]", "'text'"),
    ),
    Case(
        "conversations-answers-an-object",
        "conversations",
        lambda: {CONVERSATIONS_FILE: jsonl(edited(CONVERSATION, lambda d: d["qa"][0].update(answers={"a": 1})))},
        (CONVERSATIONS_FILE, "qa[0].answers"),
    ),
    Case(
        "conversations-unknown-field",
        "conversations",
        lambda: {CONVERSATIONS_FILE: jsonl(edited(CONVERSATION, lambda d: d.update(colour="red")))},
        (CONVERSATIONS_FILE, "line 1", "unknown key 'colour'"),
    ),
    Case(
        "conversations-utf16",
        "conversations",
        lambda: {CONVERSATIONS_FILE: UTF16 + json.dumps(CONVERSATION).encode("utf-16-le") + "\n".encode("utf-16-le")},
        (CONVERSATIONS_FILE, "UTF-16"),
    ),
    Case(
        "conversations-nested-too-deeply",
        "conversations",
        lambda: {CONVERSATIONS_FILE: b"[" * 100_000 + b"]" * 100_000 + b"\n"},
        (CONVERSATIONS_FILE, "nested too deeply"),
    ),
    # ---- numbers without a value: a 5,000-digit integer was a traceback (Python's int limit),
    # NaN and 1e999 were taken and scored as "nan" and "inf" (issue 26) ----------------------------
    Case(
        "locomo-integer-of-5000-digits",
        "locomo",
        lambda: {LOCOMO_FILE: dump(LOCOMO).replace(b'"category": 4', b'"category": ' + b"4" * 5000)},
        (LOCOMO_FILE, "line 1 column", "more than 4,300 digits"),
    ),
    Case(
        "longmemeval-integer-of-5000-digits",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: dump(LONGMEMEVAL).replace(b'"Business Administration"', b"7" * 5000)},
        (LONGMEMEVAL_FILE, "line 1 column", "more than 4,300 digits"),
    ),
    Case(
        "longmemeval-answer-nan",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: dump(edited(LONGMEMEVAL, lambda d: d[0].update(answer=float("nan"))))},
        (LONGMEMEVAL_FILE, "line 1 column", "NaN is not a number"),
    ),
    Case(
        "longmemeval-answer-1e999",
        "longmemeval",
        lambda: {LONGMEMEVAL_FILE: dump(LONGMEMEVAL).replace(b'"Business Administration"', b"1e999")},
        (LONGMEMEVAL_FILE, "line 1 column", "'1e999' is out of range"),
    ),
    Case(
        "memdaily-integer-of-5000-digits",
        "memdaily",
        lambda: {MEMDAILY_FILE: dump(MEMDAILY).replace(b'"tid": 0', b'"tid": ' + b"1" * 5000)},
        (MEMDAILY_FILE, "line 1 column 10", "more than 4,300 digits"),
    ),
    Case(
        "perltqa-integer-of-5000-digits",
        "perltqa",
        lambda: {
            PERLTQA_MEMORY: (FIXTURES / PERLTQA_MEMORY).read_bytes().replace(b'"Age": 28', b'"Age": ' + b"2" * 5000),
            PERLTQA_QA: (FIXTURES / PERLTQA_QA).read_bytes(),
        },
        (PERLTQA_MEMORY, "line 8 column 20", "more than 4,300 digits"),
        data=".",
    ),
    Case(
        "perltqa-answer-infinity",
        "perltqa",
        lambda: perltqa(PERLTQA_QA, lambda d: qa_item(d).update(Answer=float("inf"))),
        (PERLTQA_QA, "line 1 column", "Infinity is not a number"),
        data=".",
    ),
    Case(
        "conversations-answer-nan",
        "conversations",
        lambda: {CONVERSATIONS_FILE: jsonl(edited(CONVERSATION, lambda d: d["qa"][0].update(answers=[float("nan")])))},
        (CONVERSATIONS_FILE, "line 1", "NaN is not a number"),
    ),
    Case(
        "conversations-answer-1e999",
        "conversations",
        lambda: {CONVERSATIONS_FILE: jsonl(CONVERSATION).replace(b'["Lisbon"]', b"[1e999]")},
        (CONVERSATIONS_FILE, "line 1", "'1e999' is out of range"),
    ),
    # ---- -o values of the wrong type ----------------------------------------------------------
    Case(
        "option-int-given-text", "memdaily", md(lambda d: None), ("eta='two'", "expected int"), args=("-o", "eta=two")
    ),
    Case(
        "option-bool-given-text",
        "memdaily",
        md(lambda d: None),
        ("stamp='maybe'", "expected bool"),
        args=("-o", "stamp=maybe"),
    ),
    Case(
        "option-float-given-text", "counting", sm(SAMPLE), ("delay='soon'", "expected float"), args=("-o", "delay=soon")
    ),
    Case(
        "option-choice-not-allowed",
        "factcon",
        fc(lambda d: None),
        ("kind='both-ways'", "must be one of"),
        args=("-o", "kind=both-ways"),
    ),
    Case(
        "option-noise-file-missing",
        "memdaily",
        md(lambda d: None),
        ("nowhere.txt", "cannot read"),
        args=("-o", "eta=2", "-o", "noise=nowhere.txt"),
    ),
    Case(
        "option-key-without-value", "counting", sm(SAMPLE), ("-o 'delay'", "expected key=value"), args=("-o", "delay")
    ),
    Case(
        "option-beyond-what-the-machine-holds",
        "memdaily",
        md(lambda d: None),
        ("eta='100000'", "must be at most 1000"),
        args=("-o", "eta=100000"),
    ),
    # ---- nested past Python's recursion limit (json raised RecursionError: a traceback) ----------
    Case(
        "memdaily-nested-too-deeply",
        "memdaily",
        lambda: {MEMDAILY_FILE: b"[" * 100_000 + b"]" * 100_000},
        (MEMDAILY_FILE, "nested too deeply"),
    ),
    Case(
        "factcon-nested-too-deeply",
        "factcon",
        lambda: {FACTCON_FILE: b'{"context": ' * 20_000 + b"1" + b"}" * 20_000},
        (FACTCON_FILE, "nested too deeply"),
    ),
    Case(
        "samples-nested-too-deeply",
        "counting",
        lambda: {SAMPLES_FILE: b"[" * 50_000 + b"]" * 50_000 + b"\n"},
        (SAMPLES_FILE, "line 1", "nested too deeply"),
    ),
]


# --- running a case -----------------------------------------------------------------------------


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes), directories marked by a trailing /."""
    out: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        out[rel + "/" if path.is_dir() else rel] = b"" if path.is_dir() else path.read_bytes()
    return out


@pytest.fixture(scope="module")
def earlier_run_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the module's one finished run is made (by the first test that needs it)."""
    return tmp_path_factory.mktemp("earlier") / "runs"


@pytest.fixture
def earlier_run(testkit: ModuleType, earlier_run_template: Path, tmp_path: Path) -> Path:
    """An output folder holding one finished run, whose bytes a failing command must leave alone:
    a copy of the module's run, evaluated once (the tests change or resume their copy)."""
    from memplug.runner import Evaluation, RunSpec

    if not earlier_run_template.exists():
        Evaluation(RunSpec(agent="lookup", dataset="counting", dataset_options={"samples": "1"})).run(
            output=earlier_run_template
        )
    out = tmp_path / "runs"
    shutil.copytree(earlier_run_template, out)
    return out


def write_case(case: Case, folder: Path) -> Path:
    folder.mkdir()
    files = case.files()
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return folder / (case.data or next(iter(files)))


def eval_args(case: Case, data: Path, out: Path) -> list[str]:
    return [
        "eval",
        "--agent",
        "lookup",
        "--dataset",
        case.dataset,
        "--data",
        str(data),
        "--output",
        str(out),
        "--quiet",
        *case.args,
    ]


def check_error(code: int, stderr: str, case: Case, data: Path) -> str:
    assert code == 2, stderr[-3000:]
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr[-3000:]
    line = lines[0]
    assert len(line) < MAX_LINE, line[:300]
    assert line.startswith("memplug: error: ")
    for needle in case.needles:
        assert needle in line, line
    return line


#: cases that run through `python -m memplug.cli`, where the process boundary is the point: every
#: 50 MB input (peak memory is measured), and one case of each loader without one (a fresh
#: interpreter's whole stderr). The others run in-process, which fails on what a fresh process
#: would add to stderr (a Python warning, a logged warning).
SUBPROCESS = {c.id for c in CASES if c.big} | {
    "memdaily-utf16",
    "locomo-nested-too-deeply",
    "longmemeval-utf16",
    "conversations-nested-too-deeply",
}

#: warnings a fresh interpreter does not print (Python's default filters)
HIDDEN_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.id not in SUBPROCESS])
def test_bad_input_is_one_line_exit_2_and_touches_nothing(
    case: Case, earlier_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from memplug.cli import cli

    monkeypatch.chdir(tmp_path)  # relative option paths (qa=, noise=) resolve here
    monkeypatch.delenv("MEMPLUG_DEBUG", raising=False)
    data = write_case(case, tmp_path / "in")
    monkeypatch.chdir(data.parent if data.is_file() else data)
    before = snapshot(tmp_path)
    caplog.set_level(logging.WARNING)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        result = CliRunner().invoke(cli, eval_args(case, data, earlier_run))
    check_error(result.exit_code, result.stderr, case, data)
    assert snapshot(tmp_path) == before  # the earlier run and the input alike
    # in a process of its own these would be more lines on stderr (pytest holds them here)
    assert [str(w.message) for w in caught if not issubclass(w.category, HIDDEN_WARNINGS)] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


#: `python -m memplug.cli ARGS` that writes its peak resident memory (VmHWM, kB) to $MEMPLUG_TEST_PEAK on
#: exit. Read from /proc because getrusage's ru_maxrss also counts the forking parent's memory.
PEAK_WRAPPER = """
import atexit, os, re, runpy, sys
def peak():
    status = open("/proc/self/status").read()
    open(os.environ["MEMPLUG_TEST_PEAK"], "w").write(re.search(r"VmHWM:\\s+(\\d+)", status).group(1))
atexit.register(peak)
sys.argv[0] = "memplug"
runpy.run_module("memplug.cli", run_name="__main__", alter_sys=True)
"""


def run_cli(env: dict[str, str], args: list[str], cwd: Path, measure: bool = False) -> tuple[int, str, float | None]:
    """`python -m memplug.cli ARGS`: exit code, stderr and, with ``measure``, peak memory in MB."""
    peak_file = cwd.parent / ".peak"
    command = [sys.executable, "-c", PEAK_WRAPPER] if measure else [sys.executable, "-m", "memplug.cli"]
    result = subprocess.run(
        [*command, *args],
        env={**env, "MEMPLUG_TEST_PEAK": str(peak_file)},
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    peak = None
    if measure:
        peak = int(peak_file.read_text()) / 1024
        peak_file.unlink()
    return result.returncode, result.stderr, peak


def run_in_process(env: dict[str, str], args: list[str], cwd: Path) -> tuple[int, str, None]:
    """`memplug ARGS` in process, through the console script's entry (tests/inprocess.py)."""
    from inprocess import memplug_main

    result = memplug_main(args, env=env, cwd=cwd)
    return result.returncode, result.stderr, None


def run_in_subprocess(case: Case, testkit_env: dict[str, str], earlier_run: Path, tmp_path: Path) -> None:
    data = write_case(case, tmp_path / "in")
    cwd = data.parent if data.is_file() else data
    before = snapshot(tmp_path)
    code, stderr, peak_mb = run_cli(testkit_env, eval_args(case, data, earlier_run), cwd, measure=case.big)
    check_error(code, stderr, case, data)
    if case.big:  # a 50 MB line is read once, never held twice (time is bench/'s to measure, not a test's)
        assert peak_mb is not None and peak_mb < BIG_RSS_MB, f"{case.id}: peak memory {peak_mb:.0f} MB"
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.id in SUBPROCESS])
def test_bad_input_through_the_real_command(
    case: Case, testkit_env: dict[str, str], earlier_run: Path, tmp_path: Path
) -> None:
    run_in_subprocess(case, testkit_env, earlier_run, tmp_path)


# --- the output directory and resume ------------------------------------------------------------


def test_output_under_a_regular_file(testkit_env: dict[str, str], earlier_run: Path, tmp_path: Path) -> None:
    """Root can write anywhere, so "not writable" is a path that runs through a regular file."""
    blocker = earlier_run / "run.txt"
    blocker.write_text("a note beside the runs\n")
    before = snapshot(tmp_path)
    for target, says in ((blocker / "runs", "cannot create"), (blocker, "is a file, not a directory")):
        code, stderr, _ = run_in_process(
            testkit_env,
            ["eval", "--agent", "lookup", "--dataset", "counting", "--output", str(target), "--quiet"],
            tmp_path,
        )
        case = Case("output", "counting", dict, ("--output", str(target), says))
        check_error(code, stderr, case, target)
        assert snapshot(tmp_path) == before


def finished_run(earlier_run: Path) -> Path:
    (run,) = [p for p in earlier_run.iterdir() if p.is_dir()]
    return run


@pytest.mark.parametrize(
    ("name", "change", "needles"),
    [
        ("run.json", lambda b: b[: len(b) // 2], ("run.json", "invalid JSON")),
        ("run.json", lambda b: b"[1, 2]", ("run.json", "not a memplug run directory")),
        ("run.json", lambda b: json.dumps(dict(json.loads(b), spec=["lookup"])).encode(), ("run.json", "spec")),
        ("samples.jsonl", lambda b: b.replace(b"\n", b"\n{oops\n", 1), ("samples.jsonl", "line 2", "corrupt record")),
    ],
)
def test_resume_of_a_damaged_run_changes_nothing(
    testkit: ModuleType,
    earlier_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    change: Callable[[bytes], bytes],
    needles: tuple[str, ...],
) -> None:
    from memplug.cli import cli

    monkeypatch.delenv("MEMPLUG_DEBUG", raising=False)
    run = finished_run(earlier_run)
    (run / name).write_bytes(change((run / name).read_bytes()))
    before = snapshot(tmp_path)
    result = CliRunner().invoke(cli, ["eval", "--resume", str(run), "--quiet"])
    check_error(result.exit_code, result.stderr, Case("resume", "counting", dict, needles), run)
    assert snapshot(tmp_path) == before


def test_resume_of_a_folder_that_is_not_a_run(
    testkit: ModuleType, earlier_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memplug.cli import cli

    before = snapshot(tmp_path)
    result = CliRunner().invoke(cli, ["eval", "--resume", str(earlier_run), "--quiet"])
    check_error(result.exit_code, result.stderr, Case("resume", "counting", dict, ("not a memplug run",)), earlier_run)
    assert snapshot(tmp_path) == before


# --- nothing is written outside the output directory ------------------------------------------------


def outside(tmp_path: Path, out: Path) -> dict[str, bytes]:
    """The snapshot of everything but the output folder, its contents and its parents."""
    inside = out.resolve()
    return {
        k: v
        for k, v in snapshot(tmp_path).items()
        if not ((p := (tmp_path / k).resolve()).is_relative_to(inside) or inside.is_relative_to(p))
    }


def test_ids_with_dot_dot_stay_inside_the_run(testkit_env: dict[str, str], tmp_path: Path) -> None:
    """Sample and question ids from a data file name paths nowhere: a fresh run and its resume."""
    evil = edited(SAMPLE, lambda d: (d.update(id="../../../escape"), d["questions"][0].update(id="../q0")))
    evil2 = edited(SAMPLE, lambda d: d.update(id="/tmp/abs/../escape2"))
    data = tmp_path / "in" / SAMPLES_FILE
    data.parent.mkdir()
    data.write_bytes(jsonl(evil, evil2))
    out = tmp_path / "a" / "b" / "runs"
    before = outside(tmp_path, out)
    code, stderr, _ = run_in_process(
        testkit_env,
        ["eval", "--agent", "lookup", "--dataset", "counting", "--data", str(data), "--output", str(out), "--quiet"],
        tmp_path / "in",
    )
    assert code == 0, stderr
    assert outside(tmp_path, out) == before
    assert not Path("/tmp/abs").exists()
    (run,) = list(out.iterdir())
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert {r["sample_id"] for r in records} == {"../../../escape", "/tmp/abs/../escape2"}

    # a run.json whose run id climbs out: resuming writes only inside the run directory
    spec = json.loads((run / "run.json").read_text())
    spec.update(run_id="../../../../escape-run", status="interrupted")
    (run / "run.json").write_text(json.dumps(spec))
    (run / "summary.json").unlink()
    lines = (run / "samples.jsonl").read_text().splitlines(keepends=True)
    (run / "samples.jsonl").write_text(lines[0])  # the second sample is left to do
    before = outside(tmp_path, out)
    code, stderr, _ = run_in_process(
        testkit_env, ["eval", "--resume", str(run / ".." / run.name), "--quiet"], tmp_path / "in"
    )
    assert code == 0, stderr
    assert outside(tmp_path, out) == before
    assert json.loads((run / "summary.json").read_text())["n_questions"] == 2
    assert all(p.resolve().is_relative_to(run.resolve()) for p in run.rglob("*"))


def test_a_samples_file_bigger_than_the_sniffing_window_is_read_as_samples(testkit: ModuleType, tmp_path: Path) -> None:
    """A generated sample over 1 MB on one line is still a samples file (not handed to the loader)."""
    from memplug.runner import Evaluation, RunSpec

    sample = edited(
        SAMPLE,
        lambda d: d["messages"].append(
            {"id": "m2", "text": "padding " * 200_000, "time": None, "speaker": None, "meta": {}}
        ),
    )
    data = tmp_path / SAMPLES_FILE
    data.write_bytes(jsonl(sample))
    assert data.stat().st_size > 1 << 20
    spec = RunSpec(agent="lookup", dataset="counting", data=str(data), chunk_size=100_000)
    (loaded,) = Evaluation(spec).samples()
    assert loaded.id == "s0" and len(loaded.messages) == 3


def test_utf8_with_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    """Windows editors write UTF-8 with a BOM; that is still UTF-8."""
    from memplug.datasets.factcon.release import load_release
    from memplug.serialize import read_samples

    (tmp_path / FACTCON_FILE).write_bytes(codecs.BOM_UTF8 + dump(FACTCON))
    assert [s.id for s in load_release(tmp_path / FACTCON_FILE)] == ["factconsolidation_sh_6k"]
    (tmp_path / SAMPLES_FILE).write_bytes(codecs.BOM_UTF8 + jsonl(SAMPLE))
    assert [s.id for s in read_samples(tmp_path / SAMPLES_FILE)] == ["s0"]


def test_the_table_covers_every_loader_and_kind_of_fault():
    datasets = {c.dataset for c in CASES}
    assert datasets >= {"memdaily", "factcon", "perltqa", "counting"}
    for loader in ("memdaily", "factcon", "perltqa", "samples"):
        kinds = {c.id.removeprefix(loader + "-") for c in CASES if c.id.startswith(loader + "-")}
        for kind in ("truncated", "empty", "50MB", "utf16", "latin1"):
            assert any(k.startswith(kind) or kind in k for k in kinds), (loader, kind)


# --- the other commands that read or write files --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (
            ["generate", "--dataset", "factcon", "-o", "tokens=many", "--out", "{tmp}/f.jsonl"],
            ("tokens='many'", "expected int"),
        ),
        (
            ["generate", "--dataset", "factcon", "-o", "tokens=600", "-o", "questions=1", "--out", "{blocker}/f.jsonl"],
            ("--out", "cannot write"),
        ),
        (
            ["generate", "--dataset", "perltqa", "-o", "lang=fr", "--out", "{tmp}/p.jsonl"],
            ("lang='fr'", "must be one of"),
        ),
        (["report", "{run}"], ("summary.json", "invalid JSON")),
    ],
)
def test_other_commands_fail_in_one_line(
    testkit: ModuleType,
    earlier_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    needles: tuple[str, ...],
) -> None:
    from memplug.cli import cli

    monkeypatch.delenv("MEMPLUG_DEBUG", raising=False)
    run = finished_run(earlier_run)
    (run / "summary.json").write_bytes((run / "summary.json").read_bytes()[:40])
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    before = snapshot(tmp_path)
    filled = [a.format(tmp=tmp_path, blocker=blocker, run=run) for a in args]
    result = CliRunner().invoke(cli, filled)
    check_error(result.exit_code, result.stderr, Case("other", "-", dict, needles), tmp_path)
    assert snapshot(tmp_path) == before


def test_what_a_loader_skips_is_one_warning_line_and_counted_in_run_json(tmp_path, shared_data):
    release = json.loads((shared_data / "locomo" / "locomo_conv26.json").read_text(encoding="utf-8"))
    release[0]["qa"][0]["evidence"] = ["D99:1"]
    release[0]["qa"][1]["evidence"] = ["not an id"]
    data = tmp_path / "locomo_bad.json"
    data.write_text(json.dumps(release), encoding="utf-8")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplug.cli",
            "eval",
            "--agent",
            "bm25",
            "--dataset",
            "locomo",
            "--data",
            str(data),
            "--limit",
            "5",
            "--quiet",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    warning_lines = [line for line in res.stderr.splitlines() if "warning" in line]
    assert len(warning_lines) == 1 and "D99:1 matches no turn" in warning_lines[0] and "1 more" in warning_lines[0]
    run = json.loads((tmp_path / res.stdout.strip().splitlines()[-1] / "run.json").read_text())
    assert run["resolved"]["data_warnings"]["count"] == 2
