"""`memdaily`: the loader of MemSim's official release (``--data PATH``).

Two layouts exist: the per-type files ``NN_<type>_<scenario>.json`` (each a list of
``{tid, message_list, question_list}``) and the merged ``memdaily.json``
(``{type: {scenario: [{tid, message_list, QA}]}}``) that the release's
``post_process.py`` writes. Items whose question is ``[ERRORQ]`` or answer ``[ERRORA]``
are dropped, as that script does. Quirks of the files are kept, not fixed: message
order is the file's even where timestamps go backwards; a doubled "。。" at the end of
a message is shown once.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, Iterator, Mapping

import attrs

from memplug.errors import DataError, MemplugError
from memplug.models import DatasetInfo, Message, Question, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions
from memplug.files import read_json, short

from .noise import NoiseMessage, interleave, pick_noise, read_noise_file
from .languages import LANGUAGES
from .prompts import OPTIONS as PROTOCOL_OPTIONS
from .prompts import PROTOCOL, answer_prompt, info_for_language

PER_TYPE = re.compile(r"^(\d\d)_([a-z_]+)_([a-z]+)\.json$")
MERGED = "memdaily.json"
_TIME = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日(?:\s*周.)?\s*(\d{1,2}):(\d{2})")
_CJK = re.compile(r"[\u4e00-\u9fff]")

_PROMPT, _SOURCE = answer_prompt("zh")
INFO = DatasetInfo(
    name="memdaily",
    version="1.0",
    description="MemDaily, MemSim's released dataset (seed 000): six kinds of single-choice questions on user messages",
    language="zh",
    capabilities={"AR"},
    default_chunk_size=64,
    metrics=("accuracy", "recall@K"),
    answer_prompt=_PROMPT,
    answer_prompt_source=_SOURCE,
    protocol=PROTOCOL,
    # "How many of my relatives ...": a count over several messages
    needs={"aggregative": "counting"},
)


def iso_time(text: Any) -> str | None:
    """ "2024年04月01日 周一 08:39" -> "2024-04-01T08:39"; other text is kept as it is."""
    if not isinstance(text, str) or not text.strip():
        return None
    m = _TIME.search(text)
    if not m:
        return text
    y, mo, d, h, mi = (int(g) for g in m.groups())
    return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}"


def release_files(data: Path) -> list[Path]:
    """The per-type files of a directory (sorted), else its memdaily.json, else the file itself."""
    if data.is_dir():
        per_type = sorted(p for p in data.iterdir() if PER_TYPE.match(p.name))
        if per_type:
            return per_type
        if (data / MERGED).is_file():
            return [data / MERGED]
        raise DataError(data, f"no MemDaily files here (expected NN_<type>_<scenario>.json or {MERGED})")
    if not data.is_file():
        raise DataError(data, "no such file or directory")
    return [data]


def detect_language(data: Path | None) -> str:
    """ "zh" when the release's first messages are Chinese (the official one), else "en"."""
    if data is None:
        return "zh"
    try:
        first = release_files(Path(data))[0]
        with first.open(encoding="utf-8") as fh:
            head = fh.read(4000)
    except (DataError, OSError, UnicodeDecodeError):
        return "zh"
    return "zh" if _CJK.search(head) else "en"


@attrs.frozen
class _Item:
    path: Path
    place: str
    qtype: str
    scenario: str
    raw: Mapping[str, Any]


class MemDailyLoader:
    """MemSim's MemDaily release, per-type files or the merged memdaily.json."""

    info = INFO
    options = (
        Option(
            "stamp", bool, True, "append '(消息地点 place, 消息时间 time)' to each message, as MemSim's benchmark does"
        ),
        Option("scenario", str, None, "keep only this scenario (roles, events, items, places, hybrid)"),
        Option("eta", int, 1, "MemDaily-η: real messages are 1/eta of each trajectory (needs noise=PATH)", high=1000),
        Option("noise", Path, None, "file of irrelevant messages, one per line, mixed in when eta > 1"),
        *PROTOCOL_OPTIONS,
    )

    def info_for(self, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo:
        """The info with the language of the release at ``data`` (Chinese unless it reads otherwise)."""
        return info_for_language(self.info, detect_language(data), values)

    def build(self, options: BuildOptions) -> Iterator[Sample]:
        if options.data is None:
            raise DataError(
                "memdaily", "needs the release: --data PATH (a folder of NN_<type>_<scenario>.json or memdaily.json)"
            )
        values = resolve(self.options, options.values, "dataset 'memdaily'")
        eta = values["eta"]
        if eta < 1:  # as memsim: 0 is not "no noise", it is no trajectory at all
            raise MemplugError(f"option eta={eta}: must be >= 1")
        if (eta > 1) != (values["noise"] is not None):
            raise MemplugError("options eta and noise go together: MemDaily-η mixes in messages from noise=PATH")
        pool = read_noise_file(values["noise"]) if eta > 1 else []
        items = [it for path in release_files(Path(options.data)) for it in self._items(path)]
        samples = self._samples(Path(options.data), items, values["stamp"], values["scenario"])
        if eta == 1:
            return samples
        rng = random.Random(f"memdaily-eta:{options.seed}")
        rng.shuffle(pool)
        return (with_noise(s, eta, pool, random.Random(f"memdaily-eta:{options.seed}:{s.id}")) for s in samples)

    # ------------------------------------------------------------------ parsing
    def _samples(self, data: Path, items: list[_Item], stamp: bool, only: str | None) -> Iterator[Sample]:
        """Samples of the items of scenario ``only`` (all when None); a tid may not repeat, and
        a release (or scenario) without one usable trajectory is an error, not an empty run."""
        first: dict[str, _Item] = {}
        for item in items:
            if only not in (None, item.scenario):
                continue
            sample = self._sample(item, stamp)
            if sample is None:
                continue
            if sample.id in first:
                was = first[sample.id]
                raise DataError(
                    item.path,
                    f"tid {short(item.raw['tid'])} repeats ({item.qtype}/{item.scenario}, "
                    f"first at {was.path.name} {was.place})",
                    item.place,
                )
            first[sample.id] = item
            yield sample
        if not first:
            found = ", ".join(sorted({it.scenario for it in items})) or "none"
            which = f" of scenario {only!r}" if only else ""
            raise DataError(data, f"no trajectories{which} with a usable question (scenarios here: {found})")

    def _items(self, path: Path) -> Iterator[_Item]:
        data = read_json(path)
        if not data and isinstance(data, (list, dict)):
            raise DataError(path, "holds no trajectories (an empty list or object)")
        match = PER_TYPE.match(path.name)
        if match and isinstance(data, list):
            for i, raw in enumerate(data):
                yield _Item(path, f"[{i}]", match.group(2), match.group(3), _mapping(raw, path, f"[{i}]"))
        elif isinstance(data, dict):
            for qtype, scenarios in data.items():
                if scenarios is None:
                    continue
                for scenario, trajectories in _mapping(scenarios, path, f"[{qtype!r}]").items():
                    if trajectories is None:  # post_process.py leaves absent scenarios as null
                        continue
                    if not isinstance(trajectories, list):
                        raise DataError(path, "expected a list of trajectories", f"[{qtype!r}][{scenario!r}]")
                    for i, raw in enumerate(trajectories):
                        place = f"[{qtype!r}][{scenario!r}][{i}]"
                        yield _Item(path, place, qtype, scenario, _mapping(raw, path, place))
        else:
            raise DataError(
                path,
                "expected a list of trajectories (NN_<type>_<scenario>.json) "
                f"or a {{type: {{scenario: [...]}}}} object ({MERGED})",
            )

    def _sample(self, item: _Item, stamp: bool) -> Sample | None:
        path, place, raw = item.path, item.place, item.raw
        for key in ("tid", "message_list"):
            if key not in raw:
                raise DataError(path, f"trajectory lacks {key!r}", place)
        if "question_list" in raw:
            qas = raw["question_list"]
            if not isinstance(qas, list):
                raise DataError(path, "question_list must be a list", place)
        elif "QA" in raw:
            qas = [raw["QA"]]
        else:
            raise DataError(path, "trajectory lacks 'question_list' (or 'QA')", place)
        messages = self._messages(raw["message_list"], path, place, stamp)
        text_lang = "zh" if any(_CJK.search(m.text) for m in messages) else "en"
        sample_id = f"memdaily-{item.qtype}-{item.scenario}-{raw['tid']}"
        ids = {m.id for m in messages}
        questions: list[Question] = []
        for j, qa in enumerate(qas):
            qplace = f"{place}.question_list[{j}]" if "question_list" in raw else f"{place}.QA"
            qa = _mapping(qa, path, qplace)
            if qa.get("question") == "[ERRORQ]" or qa.get("answer") == "[ERRORA]":
                continue  # the release's own post_process.py drops these
            question = self._question(qa, sample_id, j, item, ids, path, qplace)
            if any(q.id == question.id for q in questions):
                raise DataError(path, f"question id {short(qa.get('qid', j))} repeats in the trajectory", qplace)
            questions.append(question)
        if not questions:
            return None
        meta = {"type": item.qtype, "scenario": item.scenario, "tid": raw["tid"], "file": path.name, "lang": text_lang}
        return Sample(sample_id, messages, questions, meta)

    @staticmethod
    def _messages(raw: Any, path: Path, place: str, stamp: bool) -> list[Message]:
        if not isinstance(raw, list):
            raise DataError(path, "message_list must be a list", place)
        out = []
        for k, m in enumerate(raw):
            where = f"{place}.message_list[{k}]"
            if isinstance(m, str):  # the noisy layouts keep messages as plain strings
                out.append(Message(str(k), m, speaker="user"))
                continue
            m = _mapping(m, path, where)
            if not isinstance(m.get("message"), str):
                raise DataError(path, "message lacks its text ('message')", where)
            time_text, spot = m.get("time"), m.get("place")
            lang = "zh" if _CJK.search(m["message"]) else "en"
            if stamp and time_text:  # as MemSim's rawdata/infuse_noise.py writes it: the message as it is
                shown = LANGUAGES[lang].stamp.format(text=m["message"], place=spot, time=time_text)
            else:
                shown = re.sub(r"。{2,}$", "。", m["message"].strip())
            meta = {"place": spot, "time_text": time_text}
            out.append(
                Message(
                    str(m.get("mid", k)),
                    shown,
                    time=iso_time(time_text),
                    speaker="user",
                    meta=meta,
                    shows=("time",) if stamp and time_text else (),
                )
            )
        if len({m.id for m in out}) != len(out):
            raise DataError(path, "message ids (mid) repeat", place)
        return out

    @staticmethod
    def _question(
        qa: Mapping[str, Any], sample_id: str, j: int, item: _Item, ids: set[str], path: Path, place: str
    ) -> Question:
        for key in ("question", "answer", "choices", "ground_truth", "target_step_id"):
            if key not in qa:
                raise DataError(path, f"question lacks {key!r}", place)
        choices = qa["choices"]
        if not isinstance(choices, dict) or not choices:
            raise DataError(path, "choices must be an object of lettered options", place)
        # the letters are keys (trimmed); the texts as the release has them: MemSim's prompt shows
        # "B: <text>" with the text's trailing spaces (114 of its 2,954 prompts have some)
        choices = {str(k).strip(): str(v) for k, v in choices.items()}
        correct = str(qa["ground_truth"]).strip()
        if correct not in choices:
            raise DataError(
                path, f"ground_truth {short(correct)} is not one of the choices {short(sorted(choices))}", place
            )
        targets = qa["target_step_id"]
        if not isinstance(targets, list):
            raise DataError(path, "target_step_id must be a list of message ids", place)
        targets = [str(t) for t in targets]
        missing = [t for t in targets if t not in ids]
        if missing:
            raise DataError(path, f"target_step_id {short(missing)} names no message of the trajectory", place)
        return Question(
            f"{sample_id}-q{qa.get('qid', j)}",
            str(qa["question"]),
            (str(qa["answer"]),),
            item.qtype,
            choices,
            correct,
            targets,
            time=iso_time(qa.get("time")),
            meta={"scenario": item.scenario, "time_text": qa.get("time")},
        )


def _mapping(value: Any, path: Path, place: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise DataError(path, f"expected an object, got {type(value).__name__}", place)
    return value


def with_noise(sample: Sample, eta: int, pool: list[NoiseMessage], rng: random.Random) -> Sample:
    """MemDaily-η as MemSim's ``infuse_noise.py``: ids become positions, targets are remapped."""
    real = list(sample.messages)
    positions = interleave(rng, len(real), eta)
    noise = iter(pick_noise(rng, pool, (eta - 1) * len(real), set(), set()))
    new_id = {m.id: str(p) for m, p in zip(real, positions)}
    at = dict(zip(positions, real))
    messages = [
        attrs.evolve(at[p], id=str(p))
        if p in at
        else Message(str(p), next(noise).text, speaker="user", meta={"role": "eta_noise"})
        for p in range(eta * len(real))
    ]
    questions = [attrs.evolve(q, targets=tuple(new_id[t] for t in q.targets)) for q in sample.questions]
    return attrs.evolve(sample, messages=messages, questions=questions, meta={**sample.meta, "eta": eta})
