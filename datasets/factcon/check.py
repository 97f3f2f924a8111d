"""`memplug generate --dataset factcon --check`: every answer re-read from the context's facts.

The validator reads the numbered facts back out of the message texts, as a reader of the
context would, and never trusts a stored answer: for a generated question it walks the
question's chain over those facts newest-wins (which must give the gold answer and the
targets) and oldest-wins (which must give the unedited answer, and a different one), and
finds the edit as a newer fact over an older one. Release rows (``--data``) carry no
chains, so for them it checks the numbering and reports the rest as counts: whether the
gold occurs in the context, and whether a single-hop gold is the newest fact (the release
has known exceptions, see ../shared/data/README.md).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any, Sequence

from memplug.datasets.factcon.generator import chain_question, walk
from memplug.datasets.factcon.relations import RELATIONS
from memplug.datasets.factcon.release import contiguous
from memplug.datasets.checks import CheckReport
from memplug.models import Question, Sample
from memplug.tokens import count_tokens

#: the generator fills the context up to its token budget by an estimate that over-counts
#: each fact's serial number (measured fill: 0.85 at 500 tokens, 0.90 at 6000, 0.98 at 262000)
MIN_FILL = 0.8
_NUMBERED = re.compile(r"^(\d+)\. (.*)$", re.DOTALL)


def _template(text: str, end: str) -> re.Pattern[str]:
    """A cloze or question template as a regex: [X] the (shortest) subject, __ the object."""
    pieces = re.split(r"(\[X\]|__)", text)
    body = "".join("(?P<s>.+?)" if p == "[X]" else "(?P<o>.+)" if p == "__" else re.escape(p) for p in pieces)
    return re.compile(f"^{body}{end}$", re.DOTALL)


def _by_literal(templates: dict[str, str], end: str) -> list[tuple[re.Pattern[str], tuple[str, ...]]]:
    """One regex per distinct template, the longest literal text first, with every relation it says.

    Longest first because a shorter template can match a longer one's sentences ("[X] is
    located in __" matches "Paris is located in the country of France."); relations whose
    templates are identical (P131 and P276, "[X] is located in __") share one regex, since
    such a sentence states either.
    """
    groups: dict[str, list[str]] = defaultdict(list)
    for pid, text in templates.items():
        groups[text].append(pid)
    ordered = sorted(groups, key=lambda t: len(t.replace("[X]", "").replace("__", "")), reverse=True)
    return [(_template(t, end), tuple(groups[t])) for t in ordered]


FACT_TEMPLATES = _by_literal({pid: r.cloze for pid, r in RELATIONS.items()}, r"\.")
QUESTION_TEMPLATES = _by_literal({pid: r.question for pid, r in RELATIONS.items()}, "")


def parse_fact(text: str) -> tuple[str, tuple[str, ...], str] | None:
    """(subject, relations, object) of a fact sentence; None when no template says it."""
    for pattern, pids in FACT_TEMPLATES:
        match = pattern.match(text)
        if match:
            return match["s"], pids, match["o"]
    return None


class FactPool:
    """The facts of one context by (subject, relation), each as (serial, object) in serial order."""

    def __init__(self, facts: Sequence[tuple[int, str]]) -> None:
        self.by_key: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
        self.unparsed: list[int] = []
        self.edits = 0
        for serial, text in sorted(facts):
            parsed = parse_fact(text)
            if parsed is None:
                self.unparsed.append(serial)
                continue
            subject, pids, obj = parsed
            self.edits += bool(self.by_key.get((subject, pids[0])))
            for pid in pids:
                self.by_key[(subject, pid)].append((serial, obj))

    def facts(self, subject: str, relation: str) -> list[tuple[int, str]]:
        return self.by_key.get((subject, relation), [])

    def newest(self, subject: str, relation: str) -> str | None:
        found = self.facts(subject, relation)
        return found[-1][1] if found else None

    def oldest(self, subject: str, relation: str) -> str | None:
        found = self.facts(subject, relation)
        return found[0][1] if found else None


def numbered_facts(sample: Sample, where: str, problems: list[str]) -> list[tuple[int, str]]:
    """(serial, sentence) of every message; a message id must be the serial its text starts with."""
    facts = []
    for m in sample.messages:
        match = _NUMBERED.match(m.text)
        if match is None:
            problems.append(f"{where}: message {m.id} does not start with its serial number 'N. '")
            continue
        serial = int(match[1])
        if m.id != str(serial):
            problems.append(f"{where}: message id {m.id!r} but its text numbers it {serial}")
        facts.append((serial, match[2]))
    serials = [n for n, _ in facts]
    if len(set(serials)) != len(serials):
        problems.append(f"{where}: serial numbers repeat")
    elif any(a >= b for a, b in zip(serials, serials[1:])):
        problems.append(f"{where}: serial numbers are not in increasing message order")
    return facts


def check_generated_question(q: Question, pool: FactPool, ids: set[str], where: str) -> list[str]:
    """Problems of one generated question, recomputed from the context's facts."""
    qwhere = f"{where} question {q.id}"
    meta = q.meta
    try:
        subject, relations, edit = meta["subject"], tuple(meta["relations"]), meta["edit"]
        original_answer, edited_hop = meta["original_answer"], meta["edited_hop"]
    except (KeyError, TypeError):
        return [f"{qwhere}: meta lacks the generator's subject, relations, edit or original_answer"]
    if not relations or any(r not in RELATIONS for r in relations):
        return [f"{qwhere}: unknown relations {list(relations)}"]
    problems: list[str] = []
    dangling = [t for t in q.targets if t not in ids]
    if dangling:
        problems.append(f"{qwhere}: targets {dangling} are not messages of the context")
    kind = "sh" if len(relations) == 1 else "mh"
    if q.category != kind or meta.get("hops") != len(relations):
        problems.append(f"{qwhere}: category {q.category} / hops {meta.get('hops')} for a {len(relations)}-hop chain")
    asked = RELATIONS[relations[0]].ask(subject) if kind == "sh" else chain_question(subject, relations)
    if q.text != asked:
        problems.append(f"{qwhere}: the question does not ask its chain ({asked!r})")
    newest = walk(pool.newest, subject, relations)
    if newest is None:
        return problems + [f"{qwhere}: the chain {subject} -> {'/'.join(relations)} breaks or loops in the context"]
    if tuple(q.answers[:1]) != (newest[-1],):
        problems.append(f"{qwhere}: gold {list(q.answers[:1])} but the newest facts give {newest[-1]!r}")
    oldest = walk(pool.oldest, subject, relations)
    if oldest is None or oldest[-1] != original_answer:
        problems.append(
            f"{qwhere}: original_answer {original_answer!r} but the oldest facts give "
            f"{None if oldest is None else oldest[-1]!r}"
        )
    elif oldest[-1] == newest[-1]:
        problems.append(f"{qwhere}: the edit does not change the answer ({newest[-1]!r})")
    chain = [pool.facts(s, r) for s, r in zip(newest, relations)]
    wanted = [str(found[-1][0]) for found in chain]
    if list(q.targets) != wanted:
        problems.append(f"{qwhere}: targets {list(q.targets)} but the newest facts of the chain are {wanted}")
    conflicts = [i for i, found in enumerate(chain) if len({o for _, o in found}) > 1]
    if conflicts != [edited_hop]:
        problems.append(
            f"{qwhere}: hops {conflicts} of the chain have conflicting facts, expected only hop {edited_hop}"
        )
    key = (newest[edited_hop], relations[edited_hop]) if 0 <= edited_hop < len(relations) else None
    if key != (edit.get("subject"), edit.get("relation")):
        problems.append(
            f"{qwhere}: the edit {edit.get('subject')}/{edit.get('relation')} is not hop {edited_hop} of the chain"
        )
        return problems
    found = pool.facts(*key)
    serial, new = found[-1]
    if new != edit.get("new") or meta.get("edit_serial") != serial:
        problems.append(
            f"{qwhere}: edit says {edit.get('new')!r} at {meta.get('edit_serial')}, "
            f"the newest fact says {new!r} at {serial}"
        )
    older = {o: n for n, o in found[:-1]}
    if edit.get("old") not in older:
        problems.append(f"{qwhere}: the edit's old value {edit.get('old')!r} is in no older fact")
    elif meta.get("original_serial") != older[edit["old"]]:
        problems.append(
            f"{qwhere}: original_serial {meta.get('original_serial')} but the old value is at {older[edit['old']]}"
        )
    return problems


def check_generated(sample: Sample, stats: Counter[str]) -> list[str]:
    where = f"sample {sample.id}"
    problems: list[str] = []
    facts = numbered_facts(sample, where, problems)
    if not contiguous(facts, 0):
        problems.append(f"{where}: serial numbers are not 0, 1, 2, ... without gaps")
    tokens = count_tokens("\n".join(m.text for m in sample.messages))
    budget = sample.meta["tokens_target"]
    if not MIN_FILL * budget <= tokens <= budget:
        problems.append(f"{where}: context has {tokens} tokens, outside [{MIN_FILL} x {budget}, {budget}]")
    if sample.meta.get("context_tokens") != tokens:
        problems.append(f"{where}: meta says {sample.meta.get('context_tokens')} context tokens, counted {tokens}")
    pool = FactPool(facts)
    if pool.unparsed:
        problems.append(f"{where}: facts {pool.unparsed[:5]} are no relation's sentence")
    ids = {m.id for m in sample.messages}
    for q in sample.questions:
        problems.extend(check_generated_question(q, pool, ids, where))
        stats[f"{q.category}_questions"] += 1
        stats[f"{len(q.meta.get('relations') or ())}_hop_questions"] += 1
    stats["edits"] += pool.edits
    stats["min_fill"] = min(stats.get("min_fill", 1.0), round(tokens / budget, 4))
    return problems


def check_release(sample: Sample, stats: Counter[str]) -> list[str]:
    """What a release row allows: numbering, targets, and counts of gold-in-context and SH newest-wins."""
    where = f"sample {sample.id}"
    problems: list[str] = []
    facts = numbered_facts(sample, where, problems)
    stats["release_non_contiguous_contexts"] += bool(facts) and not contiguous(facts, facts[0][0])
    pool = FactPool(facts)
    stats["edits"] += pool.edits
    stats["release_unparsed_facts"] += len(pool.unparsed)
    context = "\n".join(m.text for m in sample.messages).lower()
    ids = {m.id for m in sample.messages}
    for q in sample.questions:
        dangling = [t for t in q.targets if t not in ids]
        if dangling:
            problems.append(f"{where} question {q.id}: targets {dangling} are not messages of the context")
        stats[f"release_{q.category}_questions"] += 1
        stats["release_gold_not_in_context"] += not any(a.lower() in context for a in q.answers)
        if q.category == "sh":
            newest = _newest_for_question(pool, q.text)
            if newest is not None:
                stats["release_sh_parsed"] += 1
                stats["release_sh_gold_is_newest"] += newest in q.answers
    return problems


def _newest_for_question(pool: FactPool, text: str) -> str | None:
    """The newest object for a single-hop question in MQuAKE's wording; None if none is found."""
    for pattern, pids in QUESTION_TEMPLATES:
        match = pattern.match(text.strip())
        if match:
            found = sorted(f for pid in pids for f in pool.facts(match["s"], pid))
            if found:
                return found[-1][1]
    return None


def check(samples: Sequence[Sample]) -> CheckReport:
    """Generated contexts fully, release rows as far as they allow; stats count both.

    A sample cut into MemoryAgentBench's chunks (the default unit) is checked on the facts
    it was cut from (:func:`.chunks.unchunked`).
    """
    from memplug.datasets.factcon.chunks import unchunked

    samples = [unchunked(s) for s in samples]
    problems: list[str] = []
    stats: Counter[str] = Counter()
    generated = [s for s in samples if "tokens_target" in s.meta]
    for sample in samples:
        problems.extend(
            check_generated(sample, stats) if "tokens_target" in sample.meta else check_release(sample, stats)
        )
    report: dict[str, Any] = {
        "contexts": len(samples),
        "generated_contexts": len(generated),
        "release_contexts": len(samples) - len(generated),
        "facts": sum(len(s.messages) for s in samples),
        "questions": sum(len(s.questions) for s in samples),
        **dict(sorted(stats.items())),
        "problems": len(problems),
    }
    if len(generated) < len(samples):
        report["release_checked"] = (
            "numbering and targets; gold-in-context and single-hop newest-wins are counted, "
            "not failed (the release carries no chains and has known exceptions)"
        )
    return CheckReport(ok=not problems, problems=problems, stats=report)
