"""The plan of a run: a :class:`~memplug.specs.RunSpec` resolved, once, into what runs it.

:class:`Plan` loads the agent, dataset, reader and metric plugins the spec names, resolves
their options, the dataset's answer protocol, the depth and the chunk size into a
:class:`~memplug.specs.ResolvedSpec`, makes the LLM clients, and runs the preflight of
:mod:`memplug.preflight` (models, keys, endpoint, embedder, the agent's own needs), so that
bad configuration fails here, as one line, before the first question. It also loads the
samples (:meth:`Plan.samples`). It runs nothing and writes no file: the sample runner
(:mod:`memplug.samplerun`) reads it to run a sample, the driver (:mod:`memplug.driver`) to
run, record and resume a run, and an executor's worker builds its own from the driver's
resolved spec (resolving nothing again).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import platform
from pathlib import Path
from typing import Any, Iterable, Iterator

import attrs

import memplug
from memplug import options as opts
from memplug import preflight, sampling
from memplug.answering import protocol_of
from memplug.chunking import TokenCounts
from memplug.errors import MemplugError
from memplug.llm import LLM
from memplug.models import DEFAULT_TOP_K, DatasetInfo, Sample
from memplug.plugins import Plugins, get_plugins
from memplug.protocols import (
    BuildOptions,
    MetricConfig,
    ReaderConfig,
    dataset_info,
    default_chunk_size,
    is_blocking,
    options_of,
)
from memplug.record import QuestionRecord
from memplug.results import RunDir
from memplug.secrets import scrub
from memplug.serialize import is_sample_file, read_samples
from memplug.specs import ResolvedSpec, RunSpec
from memplug.text import detect_language
from memplug.tokens import encoding


class Plan:
    """A spec resolved: its plugins loaded, its options and protocol resolved, its LLMs made."""

    def __init__(
        self, spec: RunSpec, plugins: Plugins | None = None, check: bool = True, resolved: ResolvedSpec | None = None
    ) -> None:
        """Resolve every name and option of ``spec`` into :attr:`resolved` (or take ``resolved``
        as given: an executor's worker gets the driver's, and resolves nothing again); with
        ``check``, also the preflight of :mod:`memplug.preflight` (models, keys, endpoint,
        embedder), so that bad configuration fails here, before the first question, as one line."""
        self.spec = spec
        if check:  # a missing provider key: one line now, not after seconds of importing litellm
            preflight.check_keys(spec)
        self.plugins = plugins or get_plugins()
        reg = self.plugins.registry
        self.agent_entry = reg("agents").get(spec.agent)
        self.dataset_entry = reg("datasets").get(spec.dataset)
        reader_name = resolved.reader if resolved else spec.reader or ("llm" if spec.llm else "extractive")
        self.reader_entry = reg("readers").get(reader_name)
        #: the stored recalls of --from RUN, by (sample id, question id); None: a live agent
        self.replayed: dict[tuple[str, str], QuestionRecord] | None = None
        self.agent_factory = self.agent_entry.load() if spec.from_run is None else None
        builder_cls = self.dataset_entry.load()
        self.builder = builder_cls()
        if self.agent_factory is not None:  # capabilities it declares but malformed: one line now, not mid-run
            preflight.plugin(self.agent_factory, f"agent {spec.agent!r}")
        preflight.plugin(self.builder, f"dataset {spec.dataset!r}")
        if resolved is None:
            agent_values = (
                opts.resolve(options_of(self.agent_factory), spec.agent_options, f"agent {spec.agent!r}")
                if spec.from_run is None
                else dict(spec.agent_options)
            )
            dataset_values = opts.resolve(options_of(self.builder), spec.dataset_options, f"dataset {spec.dataset!r}")
        else:
            agent_values, dataset_values = dict(resolved.agent_options), dict(resolved.dataset_options)
        preflight.check_spec(spec)
        preflight.check_judge(spec.judge, spec.judge_prompt, self.plugins)
        self.data = Path(spec.data).expanduser() if spec.data else None
        self._data_sha256: dict[str, str] | None = None
        #: warnings the loader logged (see :meth:`samples`)
        self.data_warnings: list[str] = []
        self._loaded: list[Sample] | None = None
        #: what --limit drew (memplug.sampling), for run.json's resolved.limit; None: no --limit
        self.drawn: dict[str, Any] | None = None
        self.info: DatasetInfo = dataset_info(self.builder, dataset_values, self.data)
        #: the dataset's answer protocol: prompt, reply parsing, memory unit, depth (memplug.answering)
        self.protocol = protocol_of(self.info)
        top_k = spec.top_k or self.protocol.top_k or DEFAULT_TOP_K
        chunk_size = (
            spec.chunk_size
            or self.protocol.chunk_size
            or default_chunk_size(self.agent_factory)
            or self.info.default_chunk_size
        )
        # one whole message per chunk, as the benchmark's official code feeds its memories
        per_message = spec.chunk_size is None and self.protocol.unit == "message"
        memory_unit = "message" if per_message else f"{chunk_size} tokens"
        encoding()  # load the tokenizer now (set-up), not inside the first sample's timings
        self.llm = self._make_llm(spec.llm) if spec.llm else None
        self.judge_llm = self._make_llm(spec.judge) if spec.judge else None
        if reader_name == "llm" and self.llm is None:
            raise MemplugError("the llm reader needs a model: pass --llm MODEL or set MEMPLUG_LLM")
        if resolved is None:
            agent_note = None
            if spec.from_run is None:  # the agent's preflight may change its values and say so
                agent_values, agent_note = preflight.agent(
                    self.agent_factory, spec.agent, agent_values, spec.agent_options, self.llm
                )
            resolved = ResolvedSpec(
                reader_name, agent_values, dataset_values, top_k, chunk_size, memory_unit, agent_note
            )
        #: the spec resolved, once: what the runner uses and run.json records as is
        self.resolved: ResolvedSpec = resolved
        if spec.from_run is not None:
            self.replayed = _stored_recalls(Path(spec.from_run), self.top_k)
        if check:
            for role, llm in (("--llm", self.llm), ("--judge", self.judge_llm)):
                if llm is not None:
                    preflight.check_llm(llm, role)
            preflight.check_embedder(spec.embedder, self.llm)
        self.token_counts = TokenCounts.on_disk(spec.cache)
        reader_factory = self.reader_entry.load()
        preflight.plugin(reader_factory, f"reader {self.reader_name!r}")
        self.reader = reader_factory(ReaderConfig(llm=self.llm, language=self.info.language))
        metric_names = list(dict.fromkeys([*self.info.metrics, "recall@K", *(["judge"] if spec.judge else [])]))
        mconfig = MetricConfig(
            top_k=self.top_k,
            language=self.info.language,
            judge=self.judge_llm,
            judge_name=spec.judge_prompt,
            choices=self.protocol.choices,
        )
        entries = [reg("metrics").get(n) for n in metric_names]
        self.metric_entries = [e for e in entries if spec.judge or not e.info.get("needs_judge")]
        self.metrics = [e.load()(mconfig) for e in self.metric_entries]
        for entry, metric in zip(self.metric_entries, self.metrics):
            preflight.plugin(metric, f"metric {entry.name!r}")

    # -- the resolved spec, by the names the runner reads ------------------------
    @property
    def reader_name(self) -> str:
        return self.resolved.reader

    @property
    def agent_values(self) -> dict[str, Any]:
        return self.resolved.agent_options

    @property
    def dataset_values(self) -> dict[str, Any]:
        return self.resolved.dataset_options

    @property
    def top_k(self) -> int:
        return self.resolved.top_k

    @property
    def chunk_size(self) -> int:
        return self.resolved.chunk_size

    @property
    def per_message(self) -> bool:
        return self.resolved.memory_unit == "message"

    @property
    def agent_note(self) -> str | None:
        return self.resolved.agent_note

    @property
    def blocking(self) -> bool:
        """Whether building an agent may block (see :meth:`memplug.samplerun.SampleRunner.method`)."""
        return is_blocking(self.agent_factory)

    def _make_llm(self, model: str) -> LLM:
        return LLM(
            model,
            api_base=self.spec.api_base,
            use_cache=self.spec.cache,
            concurrency=max(self.spec.concurrency, 1),
            timeout=self.spec.llm_timeout,
            max_retries=self.spec.llm_retries,
            deadline=self.spec.llm_deadline,
            adaptive=self.spec.concurrency_auto,
        )

    def metrics_by_name(self) -> dict[str, Any]:
        return {e.name: m for e, m in zip(self.metric_entries, self.metrics)}

    @property
    def llms(self) -> list[LLM]:
        """The run's LLM clients: the reader's and agent's (``--llm``), the judge's."""
        return [llm for llm in (self.llm, self.judge_llm) if llm is not None]

    def close(self) -> None:
        """Close the LLM clients (their I/O threads and connections); the plan runs nothing more."""
        for llm in self.llms:
            llm.close()

    # -- data -----------------------------------------------------------------
    def samples(self) -> list[Sample]:
        """The samples to run: a samples .jsonl at --data, or the builder's, cut to --limit.

        What a loader logs as a warning while it reads (a thing it could skip safely, e.g.
        an evidence id that names no turn) is collected into :attr:`data_warnings`, for
        run.json and one line on stderr, instead of one line per occurrence.
        """
        if self._loaded is None:
            with _collect_warnings() as self.data_warnings:
                self._loaded = self._samples()
        return self._loaded

    def _samples(self) -> list[Sample]:
        data = self.data
        if data is not None and not data.exists():
            raise MemplugError(f"--data {data}: no such file or directory")
        if data is not None and is_sample_file(data):
            built: Iterable[Sample] = self._same_language(list(read_samples(data)))
        else:
            # No LLM here: --llm answers questions. Rewording generated data is `memplug generate
            # --llm`'s job, so that evaluated data is fixed and reusable.
            built = self.builder.build(BuildOptions(values=self.dataset_values, data=data, seed=self.spec.seed))
        if self.spec.limit is not None and self.spec.limit_by == "stratified":
            built, self.drawn = sampling.stratified(built, self.spec.limit, self.spec.seed)
        elif self.spec.limit is not None:
            self.drawn = {"by": "first", "n": self.spec.limit}
        chosen = select_questions(built, self.spec.limit)
        if self.replayed is not None:
            self._check_replayed(chosen)
        elif self.agent_entry.info.get("reference") and not any(q.targets for s in chosen for q in s.questions):
            # oracle and noisy choose by the questions' target messages: with none, oracle
            # recalled nothing and its "ceiling" read 0 (FactConsolidation, MemoryAgentBench)
            raise MemplugError(
                f"agent {self.spec.agent!r} recalls by each question's target messages, and no question "
                f"of {self.spec.dataset!r} here names any: it would recall nothing"
            )
        return chosen

    def _same_language(self, samples: list[Sample]) -> list[Sample]:
        """A samples file (`memplug generate`'s) in the language the dataset's options say.

        The file holds the samples only, not the options that made them: a Chinese MemSim
        or PerLTQA file run without ``-o lang=zh`` was read with the English prompts and
        scored with the English rules (F1 0.000 on answers in Chinese), with exit 0."""
        declared = (self.info.language or "").lower()
        if declared not in ("en", "zh"):
            return samples
        texts = [q.text for s in samples[:50] for q in s.questions] + [
            m.text for s in samples[:5] for m in s.messages[:20]
        ]
        found = detect_language(" ".join(texts))
        if found != declared:
            declared_options = getattr(self.dataset_entry.load(), "options", ())
            option = next((o.name for o in declared_options if o.name in ("lang", "language")), None)
            fix = f"-o {option}={found}" if option else f"a dataset for {found} text"
            names = {"en": "English", "zh": "Chinese"}
            raise MemplugError(
                f"--data {self.data}: its text is {names[found]}, but {self.spec.dataset!r} is set for "
                f"{names[declared]} (its prompts and scoring rules): give {fix}"
            )
        return samples

    def _check_replayed(self, samples: list[Sample]) -> None:
        """``--from RUN``: every question to answer was asked by RUN (its recalls are what is
        answered). One that was not failed at run time, question by question, and the resume
        the last line advised failed the same way for ever."""
        assert self.replayed is not None
        keys = [(s.id, q.id) for s in samples for q in s.questions]
        missing = [k for k in keys if k not in self.replayed]
        if missing:
            raise MemplugError(
                f"--from {self.spec.from_run}: {len(missing)} of {len(keys)} questions were not asked "
                f"by that run (the first: {missing[0][0]}/{missing[0][1]}); ask its questions "
                "(its -o options and --limit, or fewer), or run an agent"
            )

    # -- what run.json records of the plan --------------------------------------
    def versions(self) -> dict[str, Any]:
        """For run.json: memplug, Python, each plugin used, the dataset and every metric version."""
        plugins: dict[str, str | None] = {}
        for e in (self.agent_entry, self.dataset_entry, self.reader_entry, *self.metric_entries):
            plugins[e.plugin] = e.version
        return {
            "memplug": memplug.__version__,
            "python": platform.python_version(),
            "plugins": plugins,
            "dataset": {"name": self.info.name, "version": self.info.version},
            "metrics": {m.name: m.version for m in self.metrics},
            # a reader's answers change with its rules (the extractive reader's version 2 keeps
            # a message's framing out of its answers): None for a reader that declares none
            "reader": {"name": self.reader_name, "version": getattr(self.reader, "version", None)},
            "chunk_size": self.chunk_size,
        }

    def data_sha256(self) -> dict[str, str] | None:
        """sha256 of each file the run read from ``--data`` (relative to it; a single file
        under its own name), so that a run can be checked against its inputs later (`memplug
        reproduce`); None for generated data, which its version, options and seed define."""
        if self._data_sha256 is None and self.data is not None and self.data.exists():
            self._data_sha256 = files_sha256(self.data)
        return self._data_sha256


def select_questions(samples: Iterable[Sample], limit: int | None) -> list[Sample]:
    """Keep the first ``limit`` questions in dataset order; drop samples left without one."""
    out: list[Sample] = []
    left = limit
    for sample in samples:
        questions = sample.questions if left is None else sample.questions[:left]
        if left is not None:
            left -= len(questions)
        if questions:
            out.append(attrs.evolve(sample, questions=questions))
        if left is not None and left <= 0:
            break
    if not out:
        raise MemplugError("the dataset has no questions to ask (check --data, its options and --limit)")
    seen: set[str] = set()
    for s in out:
        if s.id in seen:
            raise MemplugError(f"dataset has two samples with id {s.id!r}")
        seen.add(s.id)
        qids = [q.id for q in s.questions]
        if len(set(qids)) != len(qids):
            twice = next(q for q in qids if qids.count(q) > 1)
            raise MemplugError(f"sample {s.id!r} has two questions with id {twice!r}")
    return out


def files_sha256(path: Path) -> dict[str, str]:
    """sha256 of a file, or of every file under a folder (hidden ones left out), by name."""

    def visible(p: Path) -> bool:
        return p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)

    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if visible(p))
    out: dict[str, str] = {}
    for file in files:
        digest = hashlib.sha256()
        with file.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        out[file.name if file == path else file.relative_to(path).as_posix()] = digest.hexdigest()
    return out


def _stored_recalls(path: Path, top_k: int) -> dict[tuple[str, str], QuestionRecord]:
    """The records of a finished run, by (sample id, question id), for ``eval --from``."""
    run = RunDir(path).check()
    stored = run.info()
    if stored.status not in ("finished", "partial"):
        raise MemplugError(
            f"--from {path}: the run is {stored.status!r}; finish it first (memplug eval --resume {path})"
        )
    recalled = stored.top_k
    if top_k > recalled:
        raise MemplugError(
            f"--from {path}: it recalled {recalled} items per question; --top-k {top_k} cannot be answered from them"
        )
    return {r.key: r for r in run.records()}


class _WarningList(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(scrub(record.getMessage()))


@contextlib.contextmanager
def _collect_warnings() -> Iterator[list[str]]:
    """Warnings logged meanwhile (by any logger), into the list yielded."""
    found: list[str] = []
    handler = _WarningList(found)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield found
    finally:
        root.removeHandler(handler)
