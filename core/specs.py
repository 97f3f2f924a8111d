"""What defines an evaluation: :class:`RunSpec` (what the user asked for, stored in run.json),
:class:`ResolvedSpec` (what it resolved to), and the one builder of a RunSpec from loose
fields: `memplug eval` and :func:`memplug.evaluate` (:func:`memplug.api.resolve_spec`), a
sweep's cells (:func:`memplug.sweep.plan_cells`) and `memplug reproduce`
(:func:`memplug.reproduce.stored_spec`) each give it their fields and ``-o`` pairs, and get
the same spec for the same input. Plain data, below the plan, the sample runner and the
driver that read it.

:func:`spec_fields` turns fields (``no_cache`` as the command line spells ``cache``), a stored
run's spec to start from and the ``-o KEY=VALUE`` pairs into RunSpec fields, the pairs split
between agent and dataset by what each declares; :func:`build` makes the RunSpec of them.
"""

from __future__ import annotations

import math
import os
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from memplug.errors import MemplugError
from memplug.secrets import scrub_all
from memplug.serialize import jsonable

if TYPE_CHECKING:
    from memplug.results import RunDir

#: seconds one agent call (set-up, the ingestion of a chunk, a recall, close) may take before
#: its sample is recorded as failed (--sample-timeout): far above any call that progresses
#: (each LLM call inside it is bounded by --llm-deadline, 600 s), far below "forever"
DEFAULT_SAMPLE_TIMEOUT_S = 1800.0

#: spec fields that change the numbers: a resume must not mix two of them
SCORED_FIELDS = (
    "agent",
    "dataset",
    "data",
    "seed",
    "llm",
    "api_base",
    "reader",
    "judge",
    "judge_prompt",
    "embedder",
    "chunk_size",
    "top_k",
    "limit",
    "agent_options",
    "dataset_options",
    "from_run",
    "limit_by",
    "context_tokens",
)
#: what a run checks of itself (memplug.gates), not what defines its numbers: a run made
#: ``--from`` another takes its source's spec without them (its own gates are given now)
GATE_FIELDS = ("max_errors", "fail_under")
#: what a run.json written before a spec field existed meant by its absence (for --resume and
#: `memplug reproduce`): a --limit then kept the first N questions
LEGACY_SPEC: dict[str, Any] = {"limit_by": "first"}


@attrs.frozen
class RunSpec:
    """Everything that defines an evaluation; stored in run.json."""

    agent: str
    dataset: str
    data: str | None = None
    seed: int = 0
    llm: str | None = None
    api_base: str | None = None
    reader: str | None = None
    judge: str | None = None
    #: the judge (``memplug list``: judges) that scores every question; None: the dataset's
    #: official judge where it has one (longmemeval; LoCoMo: locomo-j), else memplug's
    judge_prompt: str | None = None
    embedder: str = "wordllama"
    chunk_size: int | None = None
    #: items recalled per question; None: the protocol's official depth, else 5
    top_k: int | None = None
    limit: int | None = None
    concurrency: int = 4
    #: ``--concurrency auto``: ``concurrency`` samples side by side, and each model's calls in
    #: flight adaptive up to it (memplug.llm.adaptive; what they settled at is in run.json)
    concurrency_auto: bool = False
    cache: bool = True
    llm_timeout: float = 60.0
    llm_retries: int = 6
    llm_deadline: float = 600.0
    #: seconds one agent call may take before its sample is recorded as failed (a hung agent)
    sample_timeout: float = DEFAULT_SAMPLE_TIMEOUT_S
    agent_options: dict[str, str] = attrs.field(factory=dict)
    dataset_options: dict[str, str] = attrs.field(factory=dict)
    #: a finished run whose recalled items this run answers and scores again (no agent, no ingestion)
    from_run: str | None = None
    #: how --limit draws its questions: "stratified" by category and abstention, with the seed
    #: (memplug.sampling), or "first" (the first N in dataset order)
    limit_by: str = "stratified"
    #: tokens of recalled context the reader is handed (items kept whole, in rank order); None: all
    context_tokens: int | None = None
    #: failed questions (N, or "P%" of those asked) that stop the run (memplug.gates); None: never
    max_errors: str | None = None
    #: thresholds "METRIC=VALUE" / "METRIC[CATEGORY]=VALUE" checked after the run (memplug.gates)
    fail_under: list[str] = attrs.field(factory=list)
    #: seconds the agent's settle() may take after ingestion (protocols.Settles)
    settle_timeout: float = 600.0

    def differences(self, stored: dict[str, Any]) -> list[str]:
        """Fields that change results and differ from a stored spec (for --resume; give it
        :func:`stored_fields`, whose ``data`` is where the run read it). ``data`` is the same
        where both name the same file, however each spells it (relative here, absolute there)."""
        mine = scrub_all(attrs.asdict(self))  # run.json holds the spec scrubbed of secrets
        stored = {**LEGACY_SPEC, **stored}

        def same(key: str) -> bool:
            if key == "data" and stored.get(key) is not None and mine[key] is not None:
                return data_path(stored[key]) == data_path(mine[key])
            return bool(stored.get(key) == mine[key])

        return [f"{k}: {stored.get(k)!r} -> {mine[k]!r}" for k in SCORED_FIELDS if not same(k)]


#: how an error names the type a RunSpec field wants
TYPE_NAMES = {
    int: "a whole number",
    float: "a number",
    str: "a string",
    bool: "true or false",
    dict: "a table",
    list: "a list of strings",
}


def typed(
    fields: Mapping[str, Any], bounds: Mapping[str, tuple[float, float]] | None = None, sep: str = "="
) -> Mapping[str, Any]:
    """``fields``, each of the type its RunSpec field declares (an int is a number too, a
    bool is not; ``data`` may be a path) and within ``bounds``; MemplugError naming the first
    that is not (``name<sep>value``: a sweep file's ``limit = "x"``, the Python API's
    ``limit="x"``). Neither a TOML file nor a Python call has click's types, and a value of
    another type ran and was recorded in run.json as given (``seed="x"``, ``cache="no"``)."""
    hints = typing.get_type_hints(RunSpec)
    for name, value in fields.items():
        if name not in hints:
            continue  # unknown fields are spec_fields' to name
        union = isinstance(hints[name], types.UnionType)  # ``int | None``
        kinds = {typing.get_origin(t) or t for t in (typing.get_args(hints[name]) if union else (hints[name],))}
        if value is None and type(None) in kinds:
            continue
        kind = next(k for k in kinds if k is not type(None))
        if kind is bool:
            fits = isinstance(value, bool)
        elif name == "data":
            fits = isinstance(value, (str, os.PathLike))
        else:
            fits = isinstance(value, (int, float) if kind is float else kind) and not isinstance(value, bool)
        if fits and kind is list:
            fits = all(isinstance(v, str) for v in value)
        if not fits:
            raise MemplugError(f"{name}{sep}{value!r}: expected {TYPE_NAMES[kind]}")
        low, high = (bounds or {}).get(name, (-math.inf, math.inf))
        if kind in (int, float) and not low <= value <= high:
            from memplug.preflight import range_text

            raise MemplugError(f"{name}{sep}{value!r} is out of range: use a number from {range_text(low, high)}")
    return fields


@attrs.frozen
class ResolvedSpec:
    """What a :class:`RunSpec` resolved to: every value the runner derives from the spec, the
    plugins' declarations and the dataset's protocol. Resolved once, by the driver's
    :class:`~memplug.plan.Plan` (the agent's ``preflight`` included); the runner reads these values,
    run.json records them as they are (``resolved``), and an executor's workers are handed
    them rather than resolving the spec again."""

    #: the reader's name (``--reader``, else llm with ``--llm``, else extractive)
    reader: str
    #: the agent's option values after its declarations and its preflight (``config.options``)
    agent_options: dict[str, Any]
    #: the dataset's option values (``BuildOptions.values``)
    dataset_options: dict[str, Any]
    #: items recalled per question (``config.top_k``; K of recall@K)
    top_k: int
    #: tokens per ingestion chunk (``config.chunk_size``)
    chunk_size: int
    #: "message" (one whole message a chunk) or "<chunk_size> tokens"
    memory_unit: str
    #: what the agent's preflight chose for the user, e.g. mem0 without an LLM: infer=false
    agent_note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: jsonable(v) for k, v in attrs.asdict(self, recurse=False).items()}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "ResolvedSpec":
        """The resolved spec a run.json recorded (its ``resolved``; other keys there are ignored)."""
        return cls(**{f.name: obj[f.name] for f in attrs.fields(cls) if f.name in obj})


def field_names() -> set[str]:
    """The fields of a RunSpec."""
    return {a.name for a in RunSpec.__attrs_attrs__}


def data_path(data: str | Path) -> str:
    """``--data`` as an absolute path, from the working directory now: run.json records it
    beside the path as given (``resolved.data_path``), for a resume or a reproduction from
    another directory."""
    return str(Path(data).expanduser().resolve())


def stored_fields(run: RunDir) -> dict[str, Any]:
    """A stored run's spec, a field the run predates as what it meant then (``LEGACY_SPEC``),
    and ``data`` given relative to the directory it ran in as the absolute path it recorded
    (``resolved.data_path``), so that a resume or reproduction reads the same files from
    any directory. A run.json without it keeps its path as given (read from here)."""
    info = run.check().info()
    spec = {**LEGACY_SPEC, **info.spec}
    recorded = info.resolved.get("data_path")
    if isinstance(spec.get("data"), str) and not Path(spec["data"]).expanduser().is_absolute() and recorded:
        spec["data"] = recorded
    return spec


def spec_fields(
    fields: Mapping[str, Any],
    options: Mapping[str, str] | None = None,
    *,
    stored: Mapping[str, Any] | None = None,
    explicit: Iterable[str] | None = None,
) -> dict[str, Any]:
    """RunSpec fields: ``stored`` (a run's spec, :func:`stored_fields`) overridden by the
    ``explicit`` ones of ``fields`` (all of them without ``explicit``; with ``stored`` and no
    ``explicit``, none), then ``options``, the ``-o`` pairs, split between the agent and the
    dataset (None: the agent and dataset options stay as they are). A spec with ``from_run``
    builds no agent: its options are its source's, and the pairs given are its dataset's
    (added to the source's). An unknown field, agent, dataset or option is a MemplugError."""
    known = field_names()
    unknown = sorted(set(fields) - known - {"no_cache"})
    if unknown:
        raise MemplugError(
            f"unknown evaluation setting(s): {', '.join(unknown)} "
            f"(known: {', '.join(sorted(known - {'agent_options', 'dataset_options'}))})"
        )
    spec: dict[str, Any] = dict(stored or {})
    chosen = set(fields) if explicit is None else set(explicit)
    for key, value in fields.items():
        if stored is not None and key not in chosen:
            continue
        if key == "no_cache":
            spec["cache"] = not value
        else:
            spec[key] = str(value) if key == "data" and value is not None else value
    if not spec.get("agent") or not spec.get("dataset"):
        raise MemplugError("--agent and --dataset are required (or --resume RUN_DIR)")
    if options is not None:
        spec.update(split_options(spec, options))
    return spec


def split_options(spec: Mapping[str, Any], options: Mapping[str, str]) -> dict[str, Any]:
    """``agent_options`` and ``dataset_options`` of ``spec`` with the ``-o`` pairs given, each
    to the plugin that declares it (``agent.KEY`` / ``dataset.KEY`` where both do)."""
    from memplug.options import split_for
    from memplug.plugins import get_plugins
    from memplug.preflight import declared_options

    reg = get_plugins().registry
    # --from replays the stored recalls: no agent is built, and its options are the stored run's
    agent_opts = (
        ()
        if spec.get("from_run")
        else declared_options(reg("agents").get(spec["agent"]).load(), f"agent {spec['agent']!r}")
    )
    dataset_opts = declared_options(reg("datasets").get(spec["dataset"]).load(), f"dataset {spec['dataset']!r}")
    given_agent, given_dataset = split_for(dict(options), agent_opts, dataset_opts)
    if spec.get("from_run"):  # the same data as the stored run, with the protocol options given now
        return {"dataset_options": {**(spec.get("dataset_options") or {}), **given_dataset}}
    return {"agent_options": given_agent, "dataset_options": given_dataset}


def build(fields: Mapping[str, Any], where: object = "the spec") -> RunSpec:
    """The RunSpec of ``fields`` (:func:`spec_fields`), fields this memplug does not know
    (a newer run's) left out; MemplugError naming ``where`` when they are not a spec."""
    known = field_names()
    try:
        return RunSpec(**{k: v for k, v in fields.items() if k in known})
    except TypeError as exc:
        raise MemplugError(f"{where}: not a spec this memplug can run ({exc})") from None
