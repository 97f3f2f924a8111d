"""`memsim`: MemSim's generator (seed 000) — BRNet profiles, causal QAs, MemDaily-η noise.

No LLM is needed: messages come from templates (several phrasings per attribute) and
every answer, choice and retrieval target is derived from the hints. With an LLM the
wording of messages and questions may be rewritten, nothing else. The output is a
pure function of the seed and the options.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from pathlib import Path
from typing import Any, Iterator, Mapping

from memplug.datasets.checks import CheckReport
from memplug.errors import MemplugError
from memplug.models import DatasetInfo, Message, Question, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions

from . import values_en, values_zh
from .language import Language
from .languages import LANGUAGES
from .network import ENTITIES, build_network
from .noise import NoiseMessage, interleave, pick_noise, read_noise_file
from .prompts import OPTIONS as PROTOCOL_OPTIONS
from .prompts import answer_prompt, info_for_language, protocol
from .questions import CATEGORIES, GROUP, Draft, Hint, Maker
from .rewrite import Rewriter
from .validator import check
from .values import ValueSpace

LETTERS = ("A", "B", "C", "D")
_START = dt.datetime(2024, 4, 1, 7, 0)

_PROMPT_EN, _SOURCE_EN = answer_prompt("en")
INFO = DatasetInfo(
    name="memsim",
    version="1.0",
    description="MemSim generator: BRNet user profiles, six kinds of single-choice QAs from shared hints (seed 000)",
    language="en",
    capabilities={"AR"},
    default_chunk_size=64,
    metrics=("accuracy", "recall@K"),
    answer_prompt=_PROMPT_EN,
    answer_prompt_source=_SOURCE_EN,
    protocol=protocol("en", {}),
    needs={"aggregative": "counting"},
)


def category_counts(values: Mapping[str, Any]) -> dict[str, int]:
    """Per-category counts: an explicit ``-o simple=N`` wins, the rest share ``n`` evenly."""
    n = int(values.get("n") or 0)
    counts = {}
    for i, cat in enumerate(CATEGORIES):
        given = values.get(cat)
        counts[cat] = int(given) if given is not None else n // len(CATEGORIES) + (1 if i < n % len(CATEGORIES) else 0)
        if counts[cat] < 0:
            raise MemplugError(f"option {cat}={given}: must be >= 0")
    return counts


def plan(counts: Mapping[str, int]) -> list[str]:
    """Categories interleaved round-robin, so that the first questions cover every category."""
    left = dict(counts)
    order: list[str] = []
    while any(left.values()):
        for cat in CATEGORIES:
            if left.get(cat, 0) > 0:
                order.append(cat)
                left[cat] -= 1
    return order


class MemSimBuilder:
    """MemSim's simulator as a dataset builder: ``memplug generate --dataset memsim``."""

    info = INFO
    options = (
        Option("n", int, 300, "number of trajectories (split evenly over the six categories)", low=1, high=100_000),
        *(
            Option(cat, int, None, f"number of {cat} trajectories (overrides the even share of n)", low=0, high=100_000)
            for cat in CATEGORIES
        ),
        Option("lang", str, "en", "language of messages and questions", choices=("en", "zh")),
        Option("eta", int, 1, "MemDaily-η: real messages are 1/eta of each trajectory (1 = vanilla)", high=1000),
        Option(
            "noise",
            Path,
            None,
            "file of irrelevant messages, one per line, for eta > 1 (default: other generated users)",
        ),
        Option("profile", Path, None, "zh only: MemSim's meta_profile.csv to take value spaces from"),
        Option("stamp", bool, True, "append '(place, time)' to each message text, as MemSim's benchmark does"),
        *PROTOCOL_OPTIONS,
    )

    def info_for(self, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo:
        return info_for_language(self.info, str(values.get("lang") or "en"), values)

    def check(self, samples: list[Sample]) -> CheckReport:
        """Recompute every answer from its trajectory's hints (``memplug generate --check``)."""
        return check(samples)

    # ------------------------------------------------------------------ build
    def build(self, options: BuildOptions) -> Iterator[Sample]:
        if options.data is not None:  # silently ignoring it would evaluate other data than asked
            raise MemplugError(
                f"dataset 'memsim' generates its trajectories and reads no --data ({options.data}); "
                "MemSim's released MemDaily is dataset 'memdaily', and a generated .jsonl "
                "is read by --data with any dataset"
            )
        values = resolve(self.options, options.values, "dataset 'memsim'")  # lang is checked against its choices
        lang_code, eta = values["lang"], values["eta"]
        if eta < 1:
            raise MemplugError(f"option eta={eta}: must be >= 1")
        if values["noise"] is not None and eta == 1:
            raise MemplugError("option noise: noise messages are only used with eta > 1")
        if values["profile"] is not None and lang_code != "zh":
            raise MemplugError("option profile: MemSim's meta_profile.csv is Chinese; use it with lang=zh")
        space = self.space(lang_code, values["profile"])
        lang = LANGUAGES[lang_code]
        counts = category_counts(values)
        noise_file = read_noise_file(values["noise"]) if values["noise"] is not None else None
        if noise_file is not None:
            random.Random(f"memsim-noise:{options.seed}").shuffle(noise_file)
        return self._generate(
            space,
            lang,
            plan(counts),
            options.seed,
            eta,
            noise_file,
            values["stamp"],
            Rewriter(options.llm, lang.rewrite_prompt) if options.llm is not None else None,
        )

    @staticmethod
    def space(lang_code: str, profile: Path | None) -> ValueSpace:
        if lang_code == "en":
            return values_en.SPACE
        return values_zh.space_from_profile(profile) if profile is not None else values_zh.SPACE

    def _generate(
        self,
        space: ValueSpace,
        lang: Language,
        categories: list[str],
        seed: int,
        eta: int,
        noise_file: list[NoiseMessage] | None,
        stamp: bool,
        rewriter: Rewriter | None,
    ) -> Iterator[Sample]:
        net = build_network(space)
        maker = Maker(space, lang)
        pool: list[NoiseMessage] | None = noise_file
        if eta > 1 and pool is None:
            pool = other_users(net, maker, lang, seed, users=max(20, math.ceil((eta - 1) * 8 * 2 / 80)))
        for index, category in enumerate(categories):
            rng = random.Random(f"memsim:{lang.code}:{seed}:{index}")
            profile = net.sample(rng)
            draft = maker.make(category, rng, profile)
            yield assemble(
                f"memsim-{lang.code}-{seed}-{index:05d}",
                draft,
                profile,
                maker,
                lang,
                rng,
                eta,
                pool,
                stamp,
                rewriter,
                {"seed": seed, "index": index, "eta": eta},
            )


# ---------------------------------------------------------------------- assembly
def hint_refs(maker: Maker, profile: Mapping[str, dict[str, Any]], entity: str, style: str) -> list[str]:
    """Surface keys naming the entity in a message; two facts about one key must agree."""
    kind = ENTITIES[entity]
    if kind == "user":
        return ["self"]
    label = "label:" + maker.ref_text(profile, entity, "label")
    if kind not in ("relative", "colleague"):
        return [label]
    name = "name:" + str(profile[entity]["name"])
    return {"label": [label], "full": [label, name], "name": [name]}[style]


def message_text(
    maker: Maker, lang: Language, rng: random.Random, profile: Mapping[str, dict[str, Any]], hint: Hint
) -> str:
    template = rng.choice(lang.messages[GROUP[ENTITIES[hint.entity]]][hint.attribute])
    return lang.fill(template, maker.ref_text(profile, hint.entity, hint.ref), lang.render(hint.attribute, hint.value))


def question_keys(draft: Draft, lang: Language, entities: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Strings a rewritten question must keep: the condition value, the names compared, the threshold."""
    spec = draft.spec
    if spec["op"] in ("lookup_by", "derive"):
        return [lang.render(spec["cond"][0], spec["cond"][1])]
    if spec["op"] == "compare":
        return [str(entities[e]["display"]) for e in spec["entities"]]
    if spec["op"] == "count":
        return [str(spec["pred"][1])]
    if spec["entity"] == "user":  # "my passport number": the attribute is what singles the fact out
        return [lang.labels[spec["attribute"]]]
    return [str(entities[spec["entity"]]["label"])]


def assemble(
    sample_id: str,
    draft: Draft,
    profile: Mapping[str, dict[str, Any]],
    maker: Maker,
    lang: Language,
    rng: random.Random,
    eta: int,
    pool: list[NoiseMessage] | None,
    stamp: bool,
    rewriter: Rewriter | None,
    provenance: dict[str, Any],
) -> Sample:
    hints = list(draft.hints)
    rng.shuffle(hints)
    texts = [message_text(maker, lang, rng, profile, h) for h in hints]
    refs = [hint_refs(maker, profile, h.entity, h.ref) for h in hints]
    entities: dict[str, dict[str, Any]] = {}
    for entity in dict.fromkeys(h.entity for h in hints):  # each entity once, in hint order
        kind, facts = ENTITIES[entity], profile[entity]
        display = facts["title"] if GROUP[kind] == "event" else lang.name_ref(kind, facts)
        entities[entity] = {
            "kind": kind,
            "group": GROUP[kind],
            "display": display,
            "label": lang.label_ref(kind, facts),
        }
    question = draft.question
    if rewriter is not None:
        texts = [
            rewriter(t, [lang.render(h.attribute, h.value), maker.ref_text(profile, h.entity, h.ref)])
            for t, h in zip(texts, hints)
        ]
        question = rewriter(question, question_keys(draft, lang, entities))

    # MemDaily-η: real messages at sorted random positions among eta * n
    n_real = len(hints)
    positions = interleave(rng, n_real, eta) if eta > 1 else list(range(n_real))
    noise: list[NoiseMessage] = []
    if eta > 1 and pool is not None:
        noise = pick_noise(rng, pool, (eta - 1) * n_real, {h.attribute for h in hints}, {r for rs in refs for r in rs})
    slots: list[tuple[str, Any]] = []
    real_at = dict(zip(positions, range(n_real)))
    noise_iter = iter(noise)
    for pos in range(eta * n_real):
        slots.append(("real", real_at[pos]) if pos in real_at else ("noise", next(noise_iter)))

    place = str(profile["user"]["workplace"])
    moment = _START + dt.timedelta(minutes=rng.randint(0, 120))
    step_hi = max(2, 720 // eta)
    messages: list[Message] = []
    hint_meta: list[dict[str, Any]] = []
    for mid, (what, item) in enumerate(slots):
        moment += dt.timedelta(minutes=rng.randint(1, step_hi))
        if what == "real":
            h = hints[item]
            text, role = texts[item], h.role
            hint_meta.append(
                {
                    "entity": h.entity,
                    "attribute": h.attribute,
                    "value": h.value,
                    "message": str(mid),
                    "role": h.role,
                    "refs": refs[item],
                }
            )
        else:
            text, role = item.text, "eta_noise"
            if item.hint is not None:
                hint_meta.append({**item.hint, "message": str(mid), "role": role})
        when = lang.when(moment)
        shown = lang.stamp.format(text=text, place=place, time=when) if stamp else text
        messages.append(
            Message(
                str(mid),
                shown,
                time=f"{moment:%Y-%m-%dT%H:%M}",
                speaker="user",
                meta={"role": role, "place": place, "time_text": when},
                shows=("time",) if stamp else (),
            )
        )
    moment += dt.timedelta(minutes=rng.randint(30, 600))

    options = [draft.answer, *draft.distractors[:3]]
    rng.shuffle(options)
    choices = dict(zip(LETTERS, options))
    correct = LETTERS[options.index(draft.answer)]
    used = {h["message"] for h in hint_meta if h["role"] == "target"}
    targets = tuple(m.id for m in messages if m.id in used)
    q = Question(
        f"{sample_id}-q",
        question,
        (draft.answer,),
        draft.category,
        choices,
        correct,
        targets,
        time=f"{moment:%Y-%m-%dT%H:%M}",
        meta={"spec": draft.spec, "time_text": lang.when(moment), "scenario": draft.scenario},
    )
    meta = {
        "generator": "memsim",
        "lang": lang.code,
        "category": draft.category,
        "scenario": draft.scenario,
        "hints": hint_meta,
        "entities": entities,
        **provenance,
        # the facts behind the user's messages: the gold memory points a store is measured
        # against (memplug.diagnosis.sample_points); the noise of MemDaily-η is not one
        "memory_points": [
            {
                "text": f"{(entities.get(h['entity']) or {}).get('label') or h['entity']} "
                f"{h['attribute']}: {h['value']}",
                "message_ids": [h["message"]],
            }
            for h in hint_meta
            if h["role"] != "eta_noise"
        ],
    }
    return Sample(sample_id, messages, (q,), meta)


def other_users(net: Any, maker: Maker, lang: Language, seed: int, users: int) -> list[NoiseMessage]:
    """Messages about the relatives, colleagues, events, places and items of other simulated users."""
    rng = random.Random(f"memsim-noise:{lang.code}:{seed}")
    pool: list[NoiseMessage] = []
    for u in range(users):
        profile = net.sample(rng)
        for entity, kind in ENTITIES.items():
            if kind == "user":
                continue  # facts about "me" from someone else would be about this user
            for attr in maker.attrs_of(entity):
                person = kind in ("relative", "colleague")
                style = "label" if attr == "name" or not person else rng.choice(("label", "full", "name"))
                hint = Hint(entity, attr, profile[entity][attr], "eta_noise", style)
                refs = hint_refs(maker, profile, entity, style)
                pool.append(
                    NoiseMessage(
                        message_text(maker, lang, rng, profile, hint),
                        {
                            "entity": f"other{u}:{entity}",
                            "attribute": attr,
                            "value": profile[entity][attr],
                            "refs": refs,
                        },
                    )
                )
    rng.shuffle(pool)
    return pool
