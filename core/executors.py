"""Where the samples of a run, and the runs of a sweep, are executed.

Two executors share one interface:

* :class:`LocalExecutor` (``local``, the default): a run's samples in this process
  (:func:`memplug.samplerun.run_here`, ``--concurrency`` wide); the cells of a sweep one after
  another, or in a pool of ``workers`` processes.
* :class:`RayExecutor` (``ray``, extra ``memplug[ray]``): a run's samples spread over a pool
  of Ray actors; a sweep's cells one after another, each spread over the same pool.
  Without an address, Ray starts on this machine, bound to loopback; with ``--address``
  or ``RAY_ADDRESS`` it joins a cluster (docs/scale.md).

Both run each sample with the sample runner (:meth:`SampleRunner.run_sample
<memplug.samplerun.SampleRunner.run_sample>`) and hand what it gives to the driver's
:class:`~memplug.samplerun.RunResults` (:mod:`memplug.driver`), which holds the run's lock
and is the only writer of samples.jsonl and stored.jsonl: locally each record as it is
made, from Ray each sample's :class:`~memplug.samplerun.SampleResult` as a worker returns it.
Workers rebuild everything from a plain spec: the :class:`~memplug.specs.RunSpec`'s fields,
the driver's :class:`~memplug.specs.ResolvedSpec` (used as it is: a worker resolves no
option and runs no agent preflight again) and the samples pickle, the plan and its LLM
client (thread locals, an I/O thread, SQLite connections) do not. So a sharded run
directory is the same as a local one (records, summary, ``--resume``), a worker that dies
has its samples run again on a fresh worker, and no record is written twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

import attrs

from memplug import ray_reaper
from memplug.errors import MemplugError
from memplug.record import QuestionRecord

if TYPE_CHECKING:
    from memplug.models import Sample
    from memplug.samplerun import AgentThreads, RunResults, SampleResult, SampleRunner
    from memplug.specs import ResolvedSpec

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
#: times a sample is sent again after its worker died, before its questions are recorded as failed
SAMPLE_RETRIES = 3
#: seconds the workers of a Ray executor may take to start
START_TIMEOUT_S = float(os.environ.get("MEMPLUG_RAY_START_TIMEOUT", "180"))
#: what the driver hands to workers through Ray's runtime environment: memplug's own
#: settings (plugins to load, cache folder, default model) and the providers' keys
FORWARDED_PREFIXES = ("MEMPLUG_",)
FORWARDED_KEYS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "HOSTED_VLLM_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "TOGETHER_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "HF_TOKEN",
    "NO_PROXY",
    "no_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
)


def forwarded_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a worker needs from the driver's environment (see FORWARDED_*)."""
    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIXES) or k in FORWARDED_KEYS}
    env.update(extra or {})
    return env


def parse_llm_limit(text: Any, source: str = "--llm-limit") -> dict[str, int]:
    """``--llm-limit``: ``16`` (every model) or ``openai/gpt-4o-mini=8,*=16``; a sweep file may
    give an int or a table. Returns {model or "*": concurrent calls}. ``source`` (the option,
    or the file and its key) begins each error."""
    return parse_per_model(text, source, "a number of calls (e.g. 16 or openai/gpt-4o=8)", "call")


def parse_llm_tpm(text: Any, source: str = "--llm-tpm") -> dict[str, int]:
    """``--llm-tpm``: tokens per minute (prompt and completion), ``200000`` (each model) or
    ``openai/gpt-4o-mini=200000,*=30000``; a sweep file may give an int or a table.
    Returns {model or "*": tokens a minute}."""
    return parse_per_model(
        text, source, "a number of tokens a minute (e.g. 200000 or openai/gpt-4o=30000)", "token a minute"
    )


def parse_per_model(text: Any, source: str, what: str, unit: str) -> dict[str, int]:
    """The one reader of ``N`` / ``MODEL=N,...`` (``*``: each model not named) specs, from the
    command line (a string) or a sweep file (a string, an integer or a table). None: no limit.
    An empty spec or entry, an empty model or value, a second ``=``, a value that is not a
    whole number of at least 1 (booleans included) and a model given twice are one-line errors
    that begin with ``source``."""
    if text is None:
        return {}
    items: list[tuple[str, Any, str]] = []  # (model, value, the entry as given)
    if isinstance(text, bool) or not isinstance(text, (str, int, Mapping)):
        raise MemplugError(f"{source}: {_shown(text)} is not {what}")
    if isinstance(text, int):
        items.append(("*", text, str(text)))
    elif isinstance(text, Mapping):
        items.extend((str(k).strip(), v, f"{k}={_shown(v)}") for k, v in text.items())
        if not items:
            raise MemplugError(f"{source}: an empty table; give {what}")
    else:
        if not text.strip():
            raise MemplugError(f"{source}: empty; give {what}")
        for part in text.split(","):
            if not part.strip():
                raise MemplugError(f"{source}: an empty entry in {text!r}")
            if part.count("=") > 1:
                raise MemplugError(f"{source}: {part.strip()!r} has more than one '=' (MODEL=N)")
            model, eq, value = part.partition("=")
            items.append((model.strip() if eq else "*", value.strip() if eq else model.strip(), part.strip()))
    out: dict[str, int] = {}
    for model, value, given in items:
        if not model:
            raise MemplugError(f"{source}: {given!r} has no model before '=' (MODEL=N, or N for every model)")
        if isinstance(value, str) and not value:
            raise MemplugError(f"{source}: {given!r} has no number after '='")
        if isinstance(value, bool) or not (
            isinstance(value, int) or (isinstance(value, str) and value.isdigit() and value.isascii())
        ):
            raise MemplugError(f"{source}: {_shown(value)} is not {what}")
        n = int(value)
        if n < 1:
            raise MemplugError(f"{source}: {model}={n}: at least 1 {unit}")
        if model in out:
            raise MemplugError(f"{source}: {'every model (N or *=N)' if model == '*' else model} is given twice")
        out[model] = n
    return out


def _shown(value: Any) -> str:
    """A value as an error shows it: TOML's true/false for booleans, repr otherwise."""
    return str(value).lower() if isinstance(value, bool) else repr(value)


# -- the interface ---------------------------------------------------------------------


class Executor:
    """Runs the samples of one run (:meth:`run_samples`) and the cells of a sweep (:meth:`map_cells`)."""

    name = "executor"

    def run_samples(self, runner: SampleRunner, samples: list[Sample], results: RunResults) -> None:
        """Run ``samples`` with ``runner`` and hand each record, stored line and sample's end to
        ``results`` (the driver's: :meth:`memplug.driver.Driver.run` calls this)."""
        raise NotImplementedError

    def map_cells(
        self, cells: list[Any], run_cell: Callable[[Any, "Executor | None"], Any], on_done: Callable[[Any, Any], None]
    ) -> None:
        """Run ``run_cell(cell, executor)`` for each cell, calling ``on_done(cell, result)``
        in this process as each finishes."""
        for cell in cells:
            on_done(cell, run_cell(cell, self))

    def close(self, now: bool = False) -> None:
        """Release what the executor holds (workers, a cluster connection). ``now``: the
        process ends next (a Ctrl-C at the command line): release at once only what would
        outlive it."""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalExecutor(Executor):
    """This process: the sample runner on an event loop for a run; a process pool for several runs."""

    name = "local"

    def __init__(self, workers: int = 1, llm_tpm: Mapping[str, int] | None = None) -> None:
        self.workers = max(int(workers or 1), 1)
        #: tokens a minute per model (--llm-tpm), for every LLM of this process
        self.llm_tpm = dict(llm_tpm or {})

    @contextlib.contextmanager
    def _token_budgets(self) -> Iterator[None]:
        """The --llm-tpm budgets installed for the LLMs of this process while samples run."""
        if not self.llm_tpm:
            yield
            return
        from memplug.llm import TokenLimiter, set_token_limiter

        set_token_limiter(TokenLimiter(self.llm_tpm))
        try:
            yield
        finally:
            set_token_limiter(None)

    def run_samples(self, runner: SampleRunner, samples: list[Sample], results: RunResults) -> None:
        from memplug.samplerun import run_here

        with self._token_budgets():
            run_here(runner, samples, results)

    def map_cells(
        self, cells: list[Any], run_cell: Callable[[Any, Executor | None], Any], on_done: Callable[[Any, Any], None]
    ) -> None:
        if self.workers <= 1 or len(cells) <= 1:
            with self._token_budgets():  # one budget for the cells one after another
                for cell in cells:
                    on_done(cell, run_cell(cell, None))
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # spawn, not fork: the parent may hold threads (an LLM's I/O loop) that a fork would copy mid-state
        processes = min(self.workers, len(cells))
        # --llm-tpm: each process spends its share of the budget
        share = {model: max(n // processes, 1) for model, n in self.llm_tpm.items()}
        pool = ProcessPoolExecutor(
            max_workers=processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_pool_process,
            initargs=(share, os.getpid()),
        )
        try:
            futures = {pool.submit(_pool_cell, run_cell, cell): cell for cell in cells}
            for future in as_completed(futures):
                on_done(futures[future], future.result())
        except BaseException:
            # a Ctrl-C (or a failure here): the pool's exit would have run every cell left
            _stop_pool(pool)
            # freed now, its queues' semaphores are released: a process that then ends at once
            # (memplug.cli) made the resource tracker warn of "leaked semaphore objects"
            del pool
            gc.collect()
            raise
        pool.shutdown()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "workers": self.workers, **({"llm_tpm": self.llm_tpm} if self.llm_tpm else {})}


#: seconds the cells of a pool's processes have, after a Ctrl-C, to write their files
POOL_STOP_GRACE_S = 1.0
#: in a process of the pool: whether a Ctrl-C would stop a cell, and whether one came
#: (see _on_interrupt)
_cell_running = [False]
_interrupted = [False]


def _start_pool_process(budgets: Mapping[str, int], parent: int) -> None:
    """In a process of the pool, first: it dies with the sweep's process (Linux: a sweep
    killed, or ended by a second Ctrl-C, left its processes running their cells); a
    Ctrl-C stops the cell it runs, once (see :func:`_on_interrupt`); its share of the
    --llm-tpm budgets."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl: no signal will come
            os._exit(1)
    signal.signal(signal.SIGINT, _on_interrupt)
    if budgets:
        from memplug.llm import TokenLimiter, set_token_limiter

        set_token_limiter(TokenLimiter(budgets))


def _on_interrupt(signum: int, frame: Any) -> None:
    """A Ctrl-C in a process of the pool (from the terminal, to every process of the
    command, and from the sweep's process): the cell it runs ends as a Ctrl-C ends a run,
    its records and summary written; no cell starts after it (the pool had already handed
    this process its next one). Between cells, or a second time, it raises nothing: raised
    there, it was a traceback from the pool's loop."""
    _interrupted[0] = True
    if _cell_running[0]:
        _cell_running[0] = False
        raise KeyboardInterrupt


def _pool_cell(run_cell: Callable[[Any, Executor | None], Any], cell: Any) -> Any:
    """``run_cell(cell)`` in a process of the pool, which a Ctrl-C stops."""
    if _interrupted[0]:
        raise KeyboardInterrupt
    _cell_running[0] = True
    try:
        return run_cell(cell, None)
    finally:
        _cell_running[0] = False


def _stop_pool(pool: Any) -> None:
    """After a Ctrl-C: no cell starts, the running ones are interrupted (their records and
    summaries written, as an interrupted run's), and a process not gone within
    :data:`POOL_STOP_GRACE_S` (an agent's hung thread holds it) is killed: no process
    outlives the command, and ``--resume`` finishes what any of them left."""
    from multiprocessing.connection import wait

    # the pool gives no other way to its processes
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError):
            os.kill(process.pid, signal.SIGINT)
    deadline = time.monotonic() + POOL_STOP_GRACE_S
    alive = {p.sentinel: p for p in processes}  # ready once its process has ended
    while alive and time.monotonic() < deadline:
        for ended in wait(list(alive), timeout=max(deadline - time.monotonic(), 0)):
            del alive[ended]
    for process in alive.values():
        with contextlib.suppress(OSError):
            process.kill()
    pool.shutdown(wait=True)  # its processes ended: the pool's own thread ends at once


def make_executor(
    name: str | None,
    address: str | None = None,
    workers: int | None = None,
    llm_limit: Mapping[str, int] | None = None,
    runtime_env: Mapping[str, Any] | None = None,
    num_cpus: int | None = None,
    llm_tpm: Mapping[str, int] | None = None,
) -> Executor:
    """The executor called ``name`` (``local`` or ``ray``)."""
    name = name or "local"
    if name == "local":
        if address or llm_limit:
            raise MemplugError(
                "--address and --llm-limit are for --executor ray (locally, --concurrency bounds the LLM calls)"
            )
        return LocalExecutor(workers or 1, llm_tpm=llm_tpm)
    if name == "ray":
        return RayExecutor(
            address=address,
            workers=workers,
            llm_limit=llm_limit,
            runtime_env=runtime_env,
            num_cpus=num_cpus,
            llm_tpm=llm_tpm,
        )
    raise MemplugError(f"unknown executor {name!r}: choose one of {', '.join(EXECUTORS)}")


# -- Ray ---------------------------------------------------------------------------------


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MemplugError("--executor ray needs Ray: pip install 'memplug[ray]'") from None
    return ray


def ray_init(
    address: str | None = None, num_cpus: int | None = None, runtime_env: Mapping[str, Any] | None = None
) -> Any:
    """Connect to Ray: the cluster at ``address`` (or ``RAY_ADDRESS``), else a local instance
    on loopback only (no dashboard, ``num_cpus`` CPUs), whose processes end with this one
    even if it is killed (:mod:`memplug.ray_reaper`). An instance already started in this
    process (a test's, a notebook's) is used as it is."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    local = address is None or _is_loopback(address)
    if local and "ray" not in sys.modules:
        # read when ray is imported: without it Ray's servers listen on every interface
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray = _ray()
    ray_logs_to_memplug_log()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": bool(os.environ.get("MEMPLUG_RAY_LOGS")),
        "configure_logging": False,
    }
    if runtime_env:
        kwargs["runtime_env"] = dict(runtime_env)
    if local:  # (a `ray start` on this machine's loopback too: Ray would turn 127.0.0.1 into the host's address)
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        with contextlib.suppress(ImportError, AttributeError):
            from ray._private import ray_constants

            ray_constants.ENABLE_RAY_CLUSTER = False
    if address is None:
        # on one machine nothing listens beyond loopback (checked by tests/integration/test_ray.py):
        # the variable above, or where ray was imported before it, the constant it sets
        # address "local": a Ray of this process's own, even where a `ray start` cluster runs
        # here (ray.init() would join that one); --address auto joins it
        kwargs.update(address="local", num_cpus=num_cpus, _node_ip_address="127.0.0.1")
    else:
        kwargs["address"] = address
    # a session of this process's own: its processes are reaped if this process is killed
    before = _ray_children(ray) if address is None else None
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise MemplugError(f"cannot start or reach {where}: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    if before is not None:
        _start_reaper(sorted(_ray_children(ray) - before))
    return ray


#: the reaper of the local Ray session this process started, and the write end of its pipe
_reaper: tuple[subprocess.Popen[bytes], int] | None = None


def _ray_children(ray: Any) -> set[int]:
    """The processes of Ray's (by their command line) that this process started; none
    where /proc cannot be read (not Linux)."""
    if not os.path.isdir("/proc/self/task"):
        return set()
    found = set()
    package = os.path.dirname(ray.__file__)
    for pid, (ppid, _) in ray_reaper.processes().items():
        if ppid == os.getpid():
            with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as fh:
                if package.encode() in fh.read():
                    found.add(pid)
    return found


def _start_reaper(roots: list[int]) -> None:
    """Start :mod:`memplug.ray_reaper` for the Ray processes ``roots`` that ``ray.init``
    started: should this process die, even by SIGKILL, they and their children end
    within seconds instead of minutes."""
    global _reaper
    stop_ray_reaper()
    if not roots:
        return
    read, write = os.pipe()  # neither end is inherited by processes started later
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", ray_reaper.__file__, *map(str, roots)],
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # (a Ctrl-C at the terminal does not reach it)
    except OSError as exc:
        os.close(write)
        log.warning(
            "the reaper of the local Ray session did not start (%s): if this process is killed, "
            "Ray's agents may outlive it by minutes",
            exc,
        )
        return
    finally:
        os.close(read)
    _reaper = (process, write)


def stop_ray_reaper() -> None:
    """After ``ray.shutdown()``: the reaper ends what is left of the session and exits."""
    global _reaper
    if _reaper is None:
        return
    process, write = _reaper
    _reaper = None
    os.close(write)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=ray_reaper.GRACE_S + 2)


def ray_logs_to_memplug_log() -> None:
    """Ray's own log lines go where every library's go: memplug.log (the terminal too with
    --verbose), not straight to the terminal. On import Ray gives its ``ray`` logger a
    stderr handler of its own that does not propagate, so every Ray run printed "Token
    authentication is enabled for this Ray cluster..." on the terminal. A NullHandler
    stands in for it, so that before the run directory exists nothing falls through to
    Python's last-resort handler either. ``MEMPLUG_RAY_LOGS=1`` leaves Ray's as they are."""
    if os.environ.get("MEMPLUG_RAY_LOGS"):
        return
    ray_logger = logging.getLogger("ray")
    ray_logger.handlers = [logging.NullHandler()]
    ray_logger.propagate = True
    # ray.init(configure_logging=False) clears the handlers of ``ray`` and then warns (the
    # token line above comes from ray._private.authentication): one level down holds
    logging.getLogger("ray._private").handlers = [logging.NullHandler()]


def _is_loopback(address: str) -> bool:
    """Whether a Ray address names this machine's loopback (127.x, localhost, ::1)."""
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host == "localhost" or host.startswith("127.") or host == "::1"


class _Limiter:
    """Ray actor: per model, at most N LLM calls in flight across every worker of the cluster
    (--llm-limit), and a budget of tokens a minute that all workers take from (--llm-tpm).

    Permits are held per worker (``holder``), so that the permits of a worker that died are
    given back when the driver replaces it (:meth:`forget`). Tokens are taken before an
    attempt (the caller waits here while the budget is spent) and settled after it."""

    def __init__(self, limits: Mapping[str, int], tpm: Mapping[str, int] | None = None) -> None:
        from memplug.llm import TokenLimiter

        self.limits = dict(limits)
        self.semaphores: dict[str, asyncio.Semaphore] = {}
        self.held: dict[tuple[str, str], int] = {}
        self.peak: dict[str, int] = {}
        self.tokens = TokenLimiter(tpm or {})

    async def take_tokens(self, model: str, tokens: int) -> None:
        await self.tokens.acquire(model, tokens)

    def settle_tokens(self, model: str, estimated: int, used: int) -> None:
        self.tokens.settle(model, estimated, used)

    def _semaphore(self, model: str) -> asyncio.Semaphore | None:
        n = self.limits.get(model, self.limits.get("*"))
        if n is None:
            return None
        if model not in self.semaphores:
            self.semaphores[model] = asyncio.Semaphore(n)
        return self.semaphores[model]

    async def acquire(self, model: str, holder: str) -> None:
        semaphore = self._semaphore(model)
        if semaphore is None:
            return
        await semaphore.acquire()
        self.held[(model, holder)] = self.held.get((model, holder), 0) + 1
        busy = sum(n for (m, _), n in self.held.items() if m == model)
        self.peak[model] = max(self.peak.get(model, 0), busy)

    def release(self, model: str, holder: str) -> None:
        semaphore = self.semaphores.get(model)
        if semaphore is None or self.held.get((model, holder), 0) <= 0:
            return
        self.held[(model, holder)] -= 1
        semaphore.release()

    def forget(self, holder: str) -> None:
        for (model, who), n in list(self.held.items()):
            if who == holder:
                for _ in range(n):
                    self.semaphores[model].release()
                self.held[(model, who)] = 0

    def stats(self) -> dict[str, Any]:
        return {
            "limits": self.limits,
            "peak": self.peak,
            "tpm": self.tokens.budgets,
            "tokens_used": self.tokens.used,
            "tokens_waited_s": self.tokens.waited,
        }


class _RemoteLimit:
    """In a worker: the async context of one LLM attempt, holding a permit of the limiter actor."""

    def __init__(self, actor: Any, holder: str) -> None:
        self.actor, self.holder = actor, holder

    @contextlib.asynccontextmanager
    async def __call__(self, model: str) -> Any:
        await self.actor.acquire.remote(model, self.holder)
        try:
            yield
        finally:
            self.actor.release.remote(model, self.holder)


class _RemoteTokens:
    """In a worker: the token budgets of the limiter actor, in the shape of
    :class:`memplug.llm.TokenLimiter` (set with ``set_token_limiter``)."""

    def __init__(self, actor: Any, budgets: Mapping[str, int]) -> None:
        self.actor, self.budgets = actor, dict(budgets)

    def applies(self, model: str) -> bool:
        return model in self.budgets or "*" in self.budgets

    async def acquire(self, model: str, tokens: int) -> None:
        await self.actor.take_tokens.remote(model, tokens)

    def settle(self, model: str, estimated: int, used: int) -> None:
        self.actor.settle_tokens.remote(model, estimated, used)


class _Returned:
    """The sink a worker hands to ``run_sample``: it keeps nothing, the sample's result goes
    back to the driver whole."""

    def write(self, record: QuestionRecord) -> None:
        pass

    def stored(self, line: dict[str, Any]) -> None:
        pass


class _SampleWorker:
    """Ray actor: runs samples of any spec with the sample runner.

    Plans (and their runners) are built from the spec's fields on first use and kept (a
    sweep sends the cells one after another to the same workers); the results go back to
    the driver."""

    KEEP = 4  # runners kept per worker

    def __init__(self, holder: str, limiter: Any = None, llm_tpm: Mapping[str, int] | None = None) -> None:
        self.holder = holder
        import memplug.samplerun  # noqa: F401  (the imports while the pool starts, not in a run's time)

        self.runners: dict[str, tuple[SampleRunner, AgentThreads]] = {}  # key -> (runner, its threads)
        self.building: asyncio.Lock | None = None
        if limiter is not None:
            from memplug import llm

            llm.set_call_limiter(_RemoteLimit(limiter, holder))
            if llm_tpm:
                llm.set_token_limiter(_RemoteTokens(limiter, llm_tpm))

    async def _runner(self, spec_fields: dict[str, Any], resolved: ResolvedSpec) -> tuple[SampleRunner, AgentThreads]:
        import orjson

        key = orjson.dumps({"spec": spec_fields, "resolved": resolved.to_json()}, option=orjson.OPT_SORT_KEYS).decode()
        if key in self.runners:
            return self.runners[key]
        if self.building is None:
            self.building = asyncio.Lock()
        async with self.building:
            if key not in self.runners:
                from memplug.plan import Plan
                from memplug.samplerun import AgentThreads, SampleRunner
                from memplug.specs import RunSpec

                def build() -> Plan:
                    # check=False: the driver checked models, keys and endpoint before the first sample;
                    # resolved: the driver's resolution (options, the agent's preflight), never redone here
                    return Plan(RunSpec(**spec_fields), check=False, resolved=resolved)

                plan = await asyncio.get_running_loop().run_in_executor(None, build)
                while len(self.runners) >= self.KEEP:
                    self._drop(next(iter(self.runners)))
                self.runners[key] = (SampleRunner(plan), AgentThreads(max(plan.spec.concurrency, 1)))
        return self.runners[key]

    def _drop(self, key: str) -> None:
        runner, pool = self.runners.pop(key)
        pool.shutdown()
        runner.plan.close()
        with contextlib.suppress(Exception):
            runner.plan.token_counts.save()

    async def run_sample(
        self, spec_fields: dict[str, Any], resolved: ResolvedSpec, work: str, sample: Sample
    ) -> SampleResult:
        """The sample's records and its line of stored.jsonl. ``resolved``: the driver's
        :class:`memplug.specs.ResolvedSpec`, which the worker uses as it is."""
        runner, pool = await self._runner(spec_fields, resolved)
        return await runner.run_sample(_work_dir(work), sample, pool, _Returned())

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        for key in list(self.runners):
            self._drop(key)


def _work_dir(work: str) -> Path:
    """The agents' folder of a run: the run directory's ``work`` where this node can write it
    (one machine, or a shared filesystem), else one under this node's temporary folder."""
    path = Path(work)
    if os.access(path.parent, os.W_OK):  # made by the agents that store something (as locally)
        return path
    import tempfile

    return Path(tempfile.gettempdir()) / "memplug-work" / path.parent.name / path.name


class RayExecutor(Executor):
    """A pool of Ray actors, each running up to ``--concurrency`` samples side by side."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        llm_limit: Mapping[str, int] | None = None,
        runtime_env: Mapping[str, Any] | None = None,
        num_cpus: int | None = None,
        sample_retries: int = SAMPLE_RETRIES,
        llm_tpm: Mapping[str, int] | None = None,
    ) -> None:
        self.address = address
        self.workers = workers
        self.llm_limit = dict(llm_limit or {})
        self.llm_tpm = dict(llm_tpm or {})
        self.runtime_env = dict(runtime_env or {})
        self.num_cpus = num_cpus
        self.sample_retries = sample_retries
        self.ray: Any = None
        self.actors: list[Any] = []
        self.holders: list[str] = []
        self.limiter: Any = None
        self._started_ray = False
        #: the workers killed by a Ctrl-C, replaced when the pool is next used
        self._stale: set[int] = set()
        #: per run: samples sent again after their worker died
        self.retried: int = 0

    def __enter__(self) -> "RayExecutor":
        self.start()  # the cluster's start-up is not counted in the first run's wall time
        return self

    # -- the pool ----------------------------------------------------------------------
    def start(self) -> None:
        if self.actors:
            return
        already = False
        try:
            import ray as _r

            already = _r.is_initialized()
        except ImportError:
            pass
        self.ray = ray_init(self.address, self.num_cpus)
        self._started_ray = not already
        ray = self.ray
        cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
        n = self.workers or cpus
        env = dict(self.runtime_env)
        env["env_vars"] = forwarded_env(self.runtime_env.get("env_vars"))
        self._env = env
        if self.llm_limit or self.llm_tpm:
            self.limiter = (
                ray.remote(_Limiter).options(max_concurrency=100_000, num_cpus=0).remote(self.llm_limit, self.llm_tpm)
            )
        self._actor_cls = ray.remote(_SampleWorker)
        for _ in range(n):
            self._add_actor()
        # wait for them here: a cluster whose CPUs other jobs hold would leave them pending forever
        try:
            ray.get([a.pid.remote() for a in self.actors], timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            free = ray.available_resources().get("CPU", 0)
            self.close()
            raise MemplugError(
                f"Ray could not start {n} workers in {START_TIMEOUT_S:g} s ({free:g} of {cpus} CPUs "
                "free: other jobs may hold them); try fewer --workers"
            ) from None
        log.info("ray executor: %d workers on %d CPUs", n, cpus)

    def _add_actor(self, index: int | None = None) -> None:
        holder = uuid.uuid4().hex[:12]
        # max_concurrency: the asyncio tasks of one actor; the spec's --concurrency bounds them per run below
        actor = self._actor_cls.options(num_cpus=1, max_concurrency=1024, max_restarts=0, runtime_env=self._env).remote(
            holder, self.limiter, self.llm_tpm
        )
        if index is None:
            self.actors.append(actor)
            self.holders.append(holder)
        else:
            self.actors[index], self.holders[index] = actor, holder

    def _replace(self, index: int) -> None:
        with contextlib.suppress(Exception):
            self.ray.kill(self.actors[index], no_restart=True)
        if self.limiter is not None:
            self.limiter.forget.remote(self.holders[index])
        self._add_actor(index)

    def worker_pids(self) -> list[int]:
        """The process id of each worker (tests kill one)."""
        self.start()
        pids: list[int] = self.ray.get([a.pid.remote() for a in self.actors])
        return pids

    def limiter_stats(self) -> dict[str, Any] | None:
        return None if self.limiter is None else self.ray.get(self.limiter.stats.remote())

    def close(self, now: bool = False) -> None:
        """Close the workers (each its agents and LLM clients), kill them and shut down the
        Ray this executor started. ``now``: the process ends next (a Ctrl-C at the command
        line): the workers are killed without closing, and the local session is left to end
        with this process (its head processes with it, by the kernel; its agents and workers
        by :mod:`memplug.ray_reaper`): ``ray.shutdown()`` alone took over a second."""
        if self.ray is None:
            return
        ray = self.ray
        if not now:
            with contextlib.suppress(Exception):
                ray.get([a.close.remote() for i, a in enumerate(self.actors) if i not in self._stale], timeout=30)
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        if self.limiter is not None:
            with contextlib.suppress(Exception):
                ray.kill(self.limiter, no_restart=True)
        self.actors, self.holders, self.limiter = [], [], None
        self._stale.clear()
        if self._started_ray and not now:
            with contextlib.suppress(Exception):
                ray.shutdown()
            stop_ray_reaper()
        self.ray = None

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "address": self.address or os.environ.get("RAY_ADDRESS") or "local",
            "workers": len(self.actors) or self.workers,
            "llm_limit": self.llm_limit,
            **({"llm_tpm": self.llm_tpm} if self.llm_tpm else {}),
        }

    # -- a sharded run ------------------------------------------------------------------
    def run_samples(self, runner: SampleRunner, samples: list[Sample], results: RunResults) -> None:
        self.start()
        for i in sorted(self._stale):  # killed by a Ctrl-C of an earlier run
            self._replace(i)
        self._stale.clear()
        ray = self.ray
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError, WorkerCrashedError

        from memplug.samplerun import SampleResult, deliver

        spec = runner.plan.spec
        fields, resolved = attrs.asdict(spec), runner.plan.resolved
        work = str(results.work)
        per_worker = max(spec.concurrency, 1)
        pending = deque(samples)
        load = [0] * len(self.actors)
        inflight: dict[Any, tuple[int, Any, Any]] = {}  # ref -> (worker index, its actor then, sample)
        deaths: dict[str, int] = {}
        self.retried = 0
        order = {s.id: i for i, s in enumerate(samples)}

        def submit() -> None:
            for i in range(len(self.actors)):
                while load[i] < per_worker and pending:
                    sample = pending.popleft()
                    ref = self.actors[i].run_sample.remote(fields, resolved, work, sample)
                    inflight[ref] = (i, self.actors[i], sample)
                    load[i] += 1

        try:
            submit()
            while inflight:
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)
                for ref in ready:
                    i, actor, sample = inflight.pop(ref)
                    load[i] -= 1
                    try:
                        result: SampleResult = ray.get(ref)
                    except (RayActorError, WorkerCrashedError) as exc:
                        if self.actors[i] is actor:  # the first of its samples to tell: a fresh worker
                            log.warning("worker %d died (%s); its samples are sent again", i, type(exc).__name__)
                            self._replace(i)
                        deaths[sample.id] = deaths.get(sample.id, 0) + 1
                        if deaths[sample.id] <= self.sample_retries:
                            self.retried += 1
                            # back to the front, in dataset order
                            pending.appendleft(sample)
                            pending = deque(sorted(pending, key=lambda s: order[s.id]))
                            continue
                        result = SampleResult(
                            runner.failed_records(
                                sample,
                                f"worker died {deaths[sample.id]} times running this sample ({type(exc).__name__})",
                            )
                        )
                    except RayTaskError as exc:  # the run's own stop (a bad key, a set-up failure): as locally
                        cause = getattr(exc, "cause", None)
                        raise (cause if isinstance(cause, Exception) else exc) from None
                    deliver(results, sample, result)  # written by the driver, as a local run's
                submit()
        except KeyboardInterrupt:
            # Ctrl-C: the run stops now, as a local one does; the workers busy with its samples
            # are killed, not waited for (that took up to 5 s), and replaced when next used
            busy = {i for i, _, _ in inflight.values()}
            for i in busy:
                with contextlib.suppress(Exception):
                    ray.kill(self.actors[i], no_restart=True)
            self._stale |= busy
            inflight.clear()
            raise
        finally:
            for ref in inflight:  # stopped or interrupted: the samples still running are not wanted
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
            if inflight:
                with contextlib.suppress(GetTimeoutError, Exception):
                    ray.wait(list(inflight), num_returns=len(inflight), timeout=5)
                    # a worker cancelled mid-sample may hold agents open: start fresh next time
                    for i in {i for i, _, _ in inflight.values()}:
                        self._replace(i)

    # -- a sweep -------------------------------------------------------------------------
    def map_cells(
        self, cells: list[Any], run_cell: Callable[[Any, Executor | None], Any], on_done: Callable[[Any, Any], None]
    ) -> None:
        """One cell after another, each spread over the whole pool (the driver writes every
        record, so the sweep directory needs no filesystem shared with the workers)."""
        self.start()
        for cell in cells:
            on_done(cell, run_cell(cell, self))
