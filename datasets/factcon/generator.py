"""Offline FactConsolidation-style contexts: numbered facts, counterfactual edits, questions.

Follows MemoryAgentBench's construction (seed 002, §3.2 and App. A.4): facts and their
counterfactual edits (MQuAKE-style) are numbered and concatenated so that the outdated
fact has the smaller serial number and the edit the larger one; single-hop (SH) questions
ask about an edited fact, multi-hop (MH) questions chain 2-4 facts of which exactly one
was edited, so the answer under the edits differs from the answer the unedited facts give.
Facts about unrelated entities pad the context to the target token count.
"""

from __future__ import annotations

import random
from typing import Callable, Iterator, Sequence

import attrs

from memplug.datasets.factcon.filler import fictional_people
from memplug.datasets.factcon.knowledge import Fact, KnowledgeBase, knowledge_base
from memplug.datasets.factcon.relations import RELATIONS
from memplug.models import Message, Question, Sample
from memplug.tokens import count_tokens

Lookup = Callable[[str, str], "str | None"]
Key = tuple[str, str]

#: tokens a fact costs beyond its sentence: the serial number, ". " and the newline
SERIAL_COST = 3
#: share of padding facts that also get an (unasked) counterfactual edit, so that
#: "has a later duplicate" does not single out the facts questions ask about
DISTRACTOR_EDIT_RATE = 0.1
HEADER = "Here is a list of facts:"


def walk(lookup: Lookup, subject: str, relations: Sequence[str]) -> list[str] | None:
    """Entities visited from ``subject`` along ``relations``; None if a hop is missing or loops."""
    path = [subject]
    for relation in relations:
        nxt = lookup(path[-1], relation)
        if nxt is None or nxt in path:
            return None
        path.append(nxt)
    return path


def chain_question(subject: str, relations: Sequence[str]) -> str:
    """'What is the capital of the country of citizenship of the author of Hamlet?'"""
    inner = subject
    for relation in relations[:-1]:
        inner = RELATIONS[relation].describe(inner)
    return RELATIONS[relations[-1]].ask(inner)


@attrs.frozen
class Planned:
    """A question whose facts are settled: its chain, its edit, and the facts it needs."""

    kind: str  # "sh" or "mh"
    subject: str
    relations: tuple[str, ...]
    edited_hop: int
    edit: Fact
    original_path: tuple[str, ...]
    path: tuple[str, ...]

    @property
    def keys(self) -> list[Key]:
        """(subject, relation) of every hop of the answer chain (under the edits)."""
        return [(self.path[i], r) for i, r in enumerate(self.relations)]

    def originals(self, kb: KnowledgeBase) -> list[Fact]:
        """Unedited facts the context must hold: the original chain and the new chain's tail."""
        keys = [(self.original_path[i], r) for i, r in enumerate(self.relations)] + self.keys
        return [Fact(s, r, kb.facts[(s, r)]) for s, r in dict.fromkeys(keys) if (s, r) in kb.facts]


class Planner:
    """Picks questions and edits so that every accepted chain has exactly one edited hop."""

    def __init__(self, kb: KnowledgeBase, rng: random.Random) -> None:
        self.kb, self.rng = kb, rng
        self.edits: dict[Key, str] = {}
        self.protected: set[Key] = set()  # hops of accepted answer chains; never edited by others
        self.accepted: list[Planned] = []

    def lookup(self, subject: str, relation: str) -> str | None:
        return self.edits.get((subject, relation)) or self.kb.get(subject, relation)

    def alternatives(self, obj: str) -> list[str]:
        """Every other entity of the object's type: what a counterfactual edit may put in its place."""
        return [e for e in self.kb.of_type(self.kb.types[obj]) if e != obj]

    def try_single(self, fact: Fact) -> Planned | None:
        key = (fact.subject, fact.relation)
        if key in self.edits or key in self.protected:
            return None
        new = self.rng.choice(self.alternatives(fact.object))
        return Planned(
            "sh", fact.subject, (fact.relation,), 0, Fact(*key, new), (fact.subject, fact.object), (fact.subject, new)
        )

    def try_multi(self, subject: str, relations: tuple[str, ...]) -> Planned | None:
        original = walk(self.kb.get, subject, relations)
        if original is None:
            return None
        hops = list(range(len(relations)))
        self.rng.shuffle(hops)
        for hop in hops:
            key = (original[hop], relations[hop])
            if key in self.edits or key in self.protected:
                continue
            candidates = self.alternatives(original[hop + 1])
            self.rng.shuffle(candidates)
            for new in candidates[:8]:
                trial = {key: new}
                path = walk(lambda s, r: trial.get((s, r)) or self.lookup(s, r), subject, relations)
                if path is None or path[-1] == original[-1]:
                    continue
                keys = [(path[i], r) for i, r in enumerate(relations)]
                if any(k in self.edits for k in keys):  # another edit on the chain: not exactly one
                    continue
                return Planned("mh", subject, relations, hop, Fact(*key, new), tuple(original), tuple(path))
        return None

    def accept(self, planned: Planned) -> None:
        self.edits[(planned.edit.subject, planned.edit.relation)] = planned.edit.object
        self.protected.update(planned.keys)
        self.accepted.append(planned)


def multi_hop_chains(kb: KnowledgeBase, hops: int) -> list[tuple[str, tuple[str, ...]]]:
    """Every (subject, relations) chain of ``hops`` hops through the knowledge base."""
    out: list[tuple[str, tuple[str, ...]]] = []

    def extend(path: list[str], relations: tuple[str, ...]) -> None:
        if len(relations) == hops:
            out.append((path[0], relations))
            return
        for relation in kb.relations_of(path[-1]):
            nxt = kb.facts[(path[-1], relation)]
            if nxt not in path:
                extend(path + [nxt], relations + (relation,))

    for subject in sorted(kb.types):
        extend([subject], ())
    return out


class Context:
    """Facts gathered for one context, with a running token estimate."""

    def __init__(self) -> None:
        self.originals: dict[Key, Fact] = {}
        self.edits: list[Fact] = []
        self.tokens = 0

    def cost(self, originals: Sequence[Fact], edits: Sequence[Fact]) -> int:
        """Estimated tokens that adding these facts costs (originals already held are free)."""
        fresh = {(f.subject, f.relation): f for f in originals if (f.subject, f.relation) not in self.originals}
        # one text at a time: tiktoken's encode_batch starts a thread pool per call, which
        # cost more than the encoding itself for these few short sentences
        return sum(
            count_tokens(RELATIONS[f.relation].fact(f.subject, f.object)) + SERIAL_COST
            for f in [*fresh.values(), *edits]
        )

    def add(self, originals: Sequence[Fact], edits: Sequence[Fact], cost: int) -> None:
        for fact in originals:
            self.originals.setdefault((fact.subject, fact.relation), fact)
        self.edits.extend(edits)
        self.tokens += cost


@attrs.frozen
class GeneratorConfig:
    """One context's shape: its token budget, how many questions, and which kinds."""

    tokens: int
    questions: int
    kind: str  # "both", "sh" or "mh"


def _wanted(config: GeneratorConfig) -> dict[str, int]:
    if config.kind == "both":
        return {"sh": config.questions - config.questions // 2, "mh": config.questions // 2}
    return {config.kind: config.questions}


def generate_sample(sample_id: str, config: GeneratorConfig, rng: random.Random) -> Sample:
    """One context: questions planned while their facts fit the budget, then padding, then numbering."""
    kb = knowledge_base()
    planner = Planner(kb, rng)
    context = Context()
    wanted = _wanted(config)
    singles = kb.all_facts()
    rng.shuffle(singles)
    chains = {h: multi_hop_chains(kb, h) for h in (2, 3, 4)}
    for h in chains:
        rng.shuffle(chains[h])
    single_iter: Iterator[Fact] = iter(singles)
    made = {"sh": 0, "mh": 0}
    attempts = 0
    # alternate SH and MH so that a token budget too small for all questions keeps both kinds
    while any(made[k] < wanted.get(k, 0) for k in made) and attempts < 20 * config.questions + 1000:
        attempts += 1
        kind = min((k for k in wanted if made[k] < wanted[k]), key=lambda k: made[k] / max(wanted[k], 1))
        if kind == "sh":
            fact = next(single_iter, None)
            if fact is None:
                wanted["sh"] = made["sh"]
                continue
            planned = planner.try_single(fact)
        else:
            pool = chains[rng.choice([h for h in chains if chains[h]] or [2])]
            if not pool:
                wanted["mh"] = made["mh"]
                continue
            planned = planner.try_multi(*pool.pop())
        if planned is None:
            continue
        originals = planned.originals(kb)
        cost = context.cost(originals, [planned.edit])
        if context.tokens + cost > config.tokens:
            break
        planner.accept(planned)
        context.add(originals, [planned.edit], cost)
        made[kind] += 1
    _pad(context, kb, planner, config.tokens, rng)
    return _assemble(sample_id, context, planner, config, rng)


def _pad(context: Context, kb: KnowledgeBase, planner: Planner, budget: int, rng: random.Random) -> None:
    """Fill with unused knowledge-base facts, then invented people, up to the token budget."""
    blocked = set(context.originals) | set(planner.edits) | planner.protected
    spare = [f for f in kb.all_facts() if (f.subject, f.relation) not in blocked]
    rng.shuffle(spare)
    people = fictional_people(kb, rng)

    def groups() -> Iterator[list[Fact]]:
        for fact in spare:
            yield [fact]
        yield from people

    for group in groups():
        edits = []
        for fact in group:
            if rng.random() < DISTRACTOR_EDIT_RATE:
                edits.append(attrs.evolve(fact, object=rng.choice(planner.alternatives(fact.object))))
        cost = context.cost(group, edits)
        if context.tokens + cost > budget:
            return
        context.add(group, edits, cost)


def _assemble(
    sample_id: str, context: Context, planner: Planner, config: GeneratorConfig, rng: random.Random
) -> Sample:
    """Shuffle the originals, put each edit somewhere after its original, number them all."""
    originals = list(context.originals.values())
    rng.shuffle(originals)
    position = {(f.subject, f.relation): i for i, f in enumerate(originals)}
    keyed = [(float(i), f) for i, f in enumerate(originals)]
    for edit in context.edits:  # a uniform slot after its original; ties are measure-zero
        keyed.append((rng.uniform(position[(edit.subject, edit.relation)] + 0.5, len(originals)), edit))
    keyed.sort(key=lambda pair: pair[0])
    order = [f for _, f in keyed]
    serial = {fact: i for i, fact in enumerate(order)}
    messages = [
        Message(str(i), f"{i}. {RELATIONS[f.relation].fact(f.subject, f.object)}", meta={"serial": i})
        for i, f in enumerate(order)
    ]
    questions = []
    accepted = list(planner.accepted)
    rng.shuffle(accepted)
    for n, p in enumerate(accepted):
        chain = [Fact(s, r, planner.lookup(s, r) or "") for s, r in p.keys]
        text = RELATIONS[p.relations[0]].ask(p.subject) if p.kind == "sh" else chain_question(p.subject, p.relations)
        questions.append(
            Question(
                id=f"{sample_id}_{p.kind}{n}",
                text=text,
                answers=(p.path[-1],),
                category=p.kind,
                targets=tuple(str(serial[f]) for f in chain),
                meta={
                    "hops": len(p.relations),
                    "subject": p.subject,
                    "relations": list(p.relations),
                    "path": list(p.path),
                    "original_path": list(p.original_path),
                    "original_answer": p.original_path[-1],
                    "edited_hop": p.edited_hop,
                    "edit": {
                        "subject": p.edit.subject,
                        "relation": p.edit.relation,
                        "old": p.original_path[p.edited_hop + 1],
                        "new": p.edit.object,
                    },
                    "edit_serial": serial[p.edit],
                    "original_serial": serial[context.originals[(p.edit.subject, p.edit.relation)]],
                },
            )
        )
    text = "\n".join(m.text for m in messages)
    meta = {
        "header": HEADER,
        "tokens_target": config.tokens,
        "context_tokens": count_tokens(text),
        "n_facts": len(messages),
        "n_edits": len(context.edits),
        "n_sh": sum(q.category == "sh" for q in questions),
        "n_mh": sum(q.category == "mh" for q in questions),
        # the final value of each subject and relation: the gold memory points a store is
        # measured against (memplug.diagnosis.sample_points); an edited fact's older value is not one
        "memory_points": [
            {"text": RELATIONS[f.relation].fact(f.subject, f.object), "message_ids": [str(serial[f])]}
            for f in {(f.subject, f.relation): f for f in order}.values()
        ],
    }
    return Sample(sample_id, messages, questions, meta)
