"""`mab`: MemoryAgentBench, any source of its four competencies, from the release or generated.

``memplug eval --dataset mab --data PATH -o source=NAME`` reads the release (see
:mod:`.release`) and keeps ``NAME``'s rows, as the official loader does; without ``-o
source`` a release holding one source runs that one. Without ``--data`` it generates
NIAH-MQ rows offline (:mod:`.generator`); another source without ``--data`` says where
its release file is. A sample is one row: its context cut into the official chunks, each
inside the source's memorize template, one message per chunk; its questions are the
official (question, answer) pairs. The protocol, metrics and competency are the source's
(:mod:`.sources`, :mod:`.protocol`), recorded in run.json.
"""

from __future__ import annotations

import logging
import random
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import attrs

from memplug.datasets.factcon.protocol import chunk_text_into_sentences
from memplug.datasets.mab import generator
from memplug.datasets.mab.protocol import OPTIONS as PROTOCOL_OPTIONS
from memplug.datasets.mab.protocol import JUDGED, memorize, official, protocol
from memplug.datasets.mab.release import Row, as_list, rows, sources_in, split_of
from memplug.datasets.mab.sources import GENERATED, RELEASE, SOURCES, Source, source_info
from memplug.errors import DataError, MemplugError
from memplug.models import DatasetInfo, Message, Question, Sample
from memplug.options import Option, resolve
from memplug.protocols import BuildOptions
from memplug.serialize import is_sample_file

log = logging.getLogger(__name__)
#: RULER's needle sentence, its value captured ("One of the special magic numbers for KEY is: VALUE.")
_NEEDLE = re.compile(r"special magic \w+ for \S+ is: ([\w-]+)")


class MABBuilder:
    """MemoryAgentBench: accurate retrieval, test-time learning, long-range understanding and
    conflict resolution, each source with its official protocol and metric."""

    info = DatasetInfo(
        name="mab",
        version="1.0",
        description="MemoryAgentBench (AR, TTL, LRU, CR): any source of the release (-o source=NAME) with its "
        "official chunking, templates and metric; offline: synthetic NIAH-MQ",
        language="en",
        capabilities=frozenset({"AR"}),
        default_chunk_size=4096,
        metrics=("ruler_recall",),
        protocol=official(GENERATED),
    )

    options = (
        Option(
            "source",
            str,
            "",
            "the release's metadata.source to run (e.g. ruler_qa1_197K, "
            "icl_banking77_5900shot_balance, factconsolidation_sh_6k); empty: the one the file holds, or "
            f"without --data the synthetic {GENERATED.name}",
        ),
        Option("entity_map", Path, None, "ReDial's entity2id.json (recsys sources; default: found beside --data)"),
        Option(
            "tokens",
            int,
            32000,
            "generator: haystack length in o200k tokens (the release's NIAH-MQ: 448K)",
            low=500,
            high=2_000_000,
        ),
        Option("questions", int, 20, "generator: questions per haystack, four keys each", low=1, high=200),
        Option("n", int, 1, "generator: haystacks (memplug generate --n)", low=1, high=1000),
        *PROTOCOL_OPTIONS,
    )

    def source_for(self, values: Mapping[str, Any], data: Path | None) -> Source:
        """The source these options and this release run (MemplugError when it cannot run)."""
        name = str(values.get("source") or "")
        if data is not None and is_sample_file(data):  # `memplug generate`'s file: the samples hold no source
            return source_info(name, None) if name and name != GENERATED.name else GENERATED
        if data is None:
            if name and name != GENERATED.name:
                known = SOURCES.get(name)
                where = known.file if known else "the split's parquet file"
                raise MemplugError(
                    f"source {name!r} needs MemoryAgentBench's release: download {where} from "
                    f"{RELEASE} and pass --data PATH"
                )
            return GENERATED
        if not name:
            found = sources_in(data)
            if len(found) != 1:
                raise MemplugError(
                    f"{data} holds {len(found)} sources; pick one with -o source=NAME: "
                    + ", ".join(f"{s} ({n})" for s, n in found.items())
                )
            name = next(iter(found))
        return source_info(name, None if name in SOURCES else split_of(data, name))

    def info_for(self, values: Mapping[str, Any], data: Path | None = None) -> DatasetInfo:
        """The source's competency, metrics and protocol, with the deviations ``values`` ask for."""
        source = self.source_for(values, data)
        chosen = protocol(source, values)
        return attrs.evolve(
            self.info,
            capabilities=frozenset({source.competency}),
            metrics=source.metrics,
            protocol=chosen,
            answer_prompt=chosen.user,
            answer_prompt_source=chosen.source,
            description=f"{self.info.description} -- source {source.name} ({source.competency})",
        )

    def build(self, options: BuildOptions) -> Iterable[Sample]:
        values = resolve(self.options, options.values, "dataset 'mab'")
        source = self.source_for(values, options.data)
        if options.data is None:
            raw = self._generate(values, options.seed)
        else:
            raw = rows(options.data, source.name)
        entity_map = self._entity_map(values, options.data) if source.scoring == "recsys" else None
        if source.family in JUDGED:
            # logged while the data loads (the builder cannot know whether the run has a judge)
            log.warning(
                "%s: the paper's metric is the %s judge: without --judge MODEL the run reports %s only",
                source.name,
                "longmemeval" if source.family == "longmemeval" else "infbench-sum",
                ", ".join(m for m in source.metrics if m != "judge"),
            )
        return (self._sample(source, row, i, len(raw), values, entity_map) for i, row in enumerate(raw))

    def _generate(self, values: Mapping[str, Any], seed: int) -> list[Row]:
        out = []
        for i in range(values["n"]):
            # a string seed is hashed with SHA-512 by random.Random: stable across runs and platforms
            rng = random.Random(f"mab-niah-mq:{seed}:{i}")
            raw = generator.niah_mq_row(values["tokens"], values["questions"], rng, f"niah_mq_seed{seed}_{i}")
            out.append(Row(Path("(generated)"), i, raw["context"], raw["questions"], raw["answers"], raw["metadata"]))
        return out

    @staticmethod
    def _entity_map(values: Mapping[str, Any], data: Path | None) -> Path:
        given = values.get("entity_map")
        if given is not None:
            if not Path(given).is_file():
                raise MemplugError(f"-o entity_map={given}: no such file")
            return Path(given)
        if data is not None:
            base = data if data.is_dir() else data.parent
            for folder in (base, *base.parents[:2]):
                for found in (folder / "entity2id.json", *folder.glob("*/entity2id.json")):
                    if found.is_file():
                        return found
        raise MemplugError(
            f"recsys sources need ReDial's entity2id.json (MemoryAgentBench README: download it with "
            f"the release from {RELEASE}); pass -o entity_map=PATH"
        )

    def _sample(
        self, source: Source, row: Row, index: int, count: int, values: Mapping[str, Any], entity_map: Path | None
    ) -> Sample:
        sample_id = source.name if count == 1 else f"{source.name}#{index}"
        chunks = chunk_text_into_sentences(row.context, values["chunk"])
        messages = [
            Message(f"chunk{i}", memorize(source, text) if values["wrap"] else text, meta={"chunk": i})
            for i, text in enumerate(chunks)
        ]
        where = needle_chunks(chunks) if source.family == "ruler_niah_mq" else {}
        questions = list(self._questions(source, row, sample_id, where, entity_map))
        meta = {
            "source": source.name,
            "competency": source.competency,
            "family": source.family,
            "file": str(row.file),
            "row": row.index,
            "chunk_size": values["chunk"],
            "n_chunks": len(chunks),
        }
        return Sample(sample_id, messages, questions, meta)

    def _questions(
        self, source: Source, row: Row, sample_id: str, where: Mapping[str, str], entity_map: Path | None
    ) -> Iterator[Question]:
        """``_create_query_answer_pairs``: pairs when there are several questions and answers,
        else one question whose gold is every answer."""
        qs, answers = row.questions, row.answers
        pairs = list(zip(qs, answers)) if len(qs) > 1 and len(answers) > 1 else [(qs[0] if qs else "", answers)]
        seen: set[str] = set()
        place = f"row {row.index}"
        for i, (text, answer) in enumerate(pairs):
            if not isinstance(text, str) or not text:
                raise DataError(row.file, "a question must be a non-empty string", f"{place}.questions[{i}]")
            golds = _flatten(answer)
            if not golds:
                raise DataError(row.file, "a question needs at least one answer", f"{place}.answers[{i}]")
            field = {
                f: _indexed(row.metadata, f, i)
                for f in ("qa_pair_ids", "question_ids", "question_types", "question_dates")
            }
            qid = str(field["qa_pair_ids"] or field["question_ids"] or f"{sample_id}_q{i}")
            if qid in seen:
                qid = f"{qid}#{i}"
            seen.add(qid)
            meta: dict[str, Any] = {"source": source.name, "competency": source.competency, "answer": answer}
            if field["question_ids"] is not None:
                meta["question_id"] = field["question_ids"]
            if field["question_types"] is not None:
                meta["question_type"] = field["question_types"]
            if "longmemeval" in source.name:
                meta["judge"] = "longmemeval"
            if source.family == "infbench_sum":
                meta["judge"] = "infbench-sum"
                meta["keypoints"] = as_list(row.metadata.get("keypoints"))
            if entity_map is not None:
                meta["entity_map"] = str(entity_map)
            yield Question(
                id=qid,
                text=text,
                answers=golds,
                category=str(field["question_types"] or source.name),
                targets=tuple(dict.fromkeys(where[g] for g in golds if g in where)),
                time=str(field["question_dates"]) if field["question_dates"] else None,
                meta=meta,
            )


def _indexed(metadata: Mapping[str, Any], field: str, index: int) -> Any:
    """``_get_field_value``: the field's item at ``index`` when it is a list that long, else
    the whole value; None when absent or empty."""
    value = metadata.get(field)
    if value is None or value == []:
        return None
    return value[index] if isinstance(value, list) and index < len(value) else value


def _flatten(answer: Any) -> tuple[str, ...]:
    """The gold answers as ``drqa_metric_max_over_ground_truths`` sees them: a string, a list,
    or a list of lists flattened."""
    if isinstance(answer, str):
        return (answer,)
    out: list[str] = []
    for item in as_list(answer):
        out.extend(_flatten(item) if isinstance(item, (list, tuple)) else [str(item)])
    return tuple(out)


def needle_chunks(chunks: list[str]) -> dict[str, str]:
    """Needle value -> id of the chunk that holds it (a needle is one sentence, never cut)."""
    return {value: f"chunk{i}" for i, text in enumerate(chunks) for value in _NEEDLE.findall(text)}
