"""Checks made before the first question, so that bad configuration costs seconds, not a run.

A benchmark run that fails on its first LLM call after minutes of data loading and
ingestion, or worse, fails on every question and still prints a table, is the most
common way a harness wastes a user's day. Everything that can be known up front is
checked here, each failure one :class:`MemplugError` line naming the problem and the
fix (the CLI exits 2):

- settings: finite, positive, bounded numbers (:data:`LIMITS`);
- ``--llm local`` (or ``--judge local``): llama.cpp's server starts, loads the model and
  is timed (:mod:`memplug.llm.local`);
- each model named (``--llm``, ``--judge``, ``--embedder litellm:<model>``): litellm
  knows its provider, the provider's key is in the environment (unless an
  ``--api-base`` is given: a local server may need none), and an ``--api-base``
  answers one cheap request (``GET /models``) within :data:`PROBE_TIMEOUT_S`, as an
  API does (JSON, not a web page); an Ollama model (:data:`KEYLESS`) needs no key, and
  its server, at litellm's default address unless told another, must answer;
- ``--judge-prompt NAME`` names an installed judge, and ``--judge MODEL`` is given with it;
- the embedder can be built;
- the agent's own needs, through its optional ``preflight`` (see :func:`agent`);
- the optional capabilities each plugin declares are well formed (see :func:`plugin`).
"""

from __future__ import annotations

import functools
import json
import math
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, Callable, Mapping

import attrs

from memplug.errors import MemplugError
from memplug.secrets import redact_url, scrub

if TYPE_CHECKING:
    from memplug.llm import LLM
    from memplug.options import Option
    from memplug.plugins import Plugins
    from memplug.specs import RunSpec

#: seconds an --api-base has to answer the probe (MEMPLUG_PROBE_TIMEOUT overrides)
PROBE_TIMEOUT_S = 5.0
#: providers whose server needs no key, and the address litellm calls when neither
#: ``--api-base`` nor the variable is set (litellm/llms/ollama/common_utils.py)
KEYLESS: Mapping[str, tuple[str, str]] = {
    "ollama": ("OLLAMA_API_BASE", "http://localhost:11434"),
    "ollama_chat": ("OLLAMA_API_BASE", "http://localhost:11434"),
}
#: hosted providers whose endpoint a run without --api-base checks first: the variables
#: that move it (as litellm reads them), its default, and the variable of its key. Offline
#: (memplug's default machine), every call of a run would otherwise retry a connection
#: error for its whole deadline: 20 s a question, hours for a benchmark.
HOSTED: Mapping[str, tuple[tuple[str, ...], str, str]] = {
    "openai": (("OPENAI_BASE_URL", "OPENAI_API_BASE"), "https://api.openai.com/v1", "OPENAI_API_KEY"),
}
#: the other hosted providers a run without --api-base checks first, for the same reason:
#: the variables that move their endpoint and its default, as litellm reads them
#: (litellm/main.py and its providers' modules). Their APIs are not OpenAI's (a different
#: path lists models, a different header carries the key), so only their reach is checked
#: (:func:`reach`): any HTTP answer means the server is there
REACHED: Mapping[str, tuple[tuple[str, ...], str]] = {
    "anthropic": (("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"), "https://api.anthropic.com"),
    "gemini": (("GEMINI_API_BASE",), "https://generativelanguage.googleapis.com"),
    "mistral": (("MISTRAL_API_BASE",), "https://api.mistral.ai"),
    "groq": (("GROQ_API_BASE",), "https://api.groq.com"),
    "together_ai": (("TOGETHER_AI_API_BASE",), "https://api.together.xyz"),
    "openrouter": (("OPENROUTER_API_BASE",), "https://openrouter.ai"),
    "deepseek": (("DEEPSEEK_API_BASE",), "https://api.deepseek.com"),
    "xai": (("XAI_API_BASE",), "https://api.x.ai"),
    "cohere": (("COHERE_API_BASE",), "https://api.cohere.ai"),
    "cohere_chat": (("COHERE_API_BASE",), "https://api.cohere.ai"),
    "fireworks_ai": (("FIREWORKS_API_BASE", "FIREWORKS_AI_API_BASE"), "https://api.fireworks.ai"),
    "perplexity": (("PERPLEXITY_API_BASE",), "https://api.perplexity.ai"),
}
#: the end of the line when a hosted provider cannot be reached
OFFLINE_HINT = "memplug runs offline by default: give --api-base URL of a local server, or --llm local"
#: (low, high) for the spec's numbers: past these a run cannot finish or exhausts the machine
LIMITS: Mapping[str, tuple[float, float]] = {
    "llm_timeout": (0.1, 3600.0),
    "llm_deadline": (1.0, 86400.0),
    "llm_retries": (0, 20),
    "concurrency": (1, 512),
    "top_k": (1, 10_000),
    "chunk_size": (1, 1_000_000),
    "context_tokens": (1, 10_000_000),
    "settle_timeout": (1.0, 7 * 86400.0),
    # the command line and a sweep file give 1 s at least; the Python API less (a test times
    # a hung agent out in half a second), but not nothing: -1 ran as if no agent could hang
    "sample_timeout": (0.01, 7 * 86400.0),
    "limit": (1, math.inf),
}


@attrs.frozen
class AgentPlan:
    """What an agent's ``preflight`` decided: the option values to run with, and one line
    for the user when it chose a mode for them (recorded in run.json as ``agent_note``)."""

    values: Mapping[str, Any]
    note: str | None = None


def range_text(low: float, high: float) -> str:
    """``"1 to 604800"``, or ``"1 or more"`` for a range with no top. Whole numbers whole:
    ``:g`` wrote --context-tokens' top as "1e+07"."""

    def shown(value: float) -> str:
        return str(int(value)) if float(value).is_integer() else f"{value:g}"

    return f"{shown(low)} to {shown(high)}" if math.isfinite(high) else f"{shown(low)} or more"


def check_spec(spec: "RunSpec") -> None:
    """Every number of the spec finite and within :data:`LIMITS`."""
    for name, (low, high) in LIMITS.items():
        value = getattr(spec, name)
        if value is None:
            continue
        if not isinstance(value, (int, float)) or not math.isfinite(value) or not low <= value <= high:
            flag = "--" + name.replace("_", "-")
            raise MemplugError(f"{flag} {value!r} is out of range: use a number from {range_text(low, high)}")
    if spec.llm_deadline < spec.llm_timeout:
        raise MemplugError(
            f"--llm-deadline {spec.llm_deadline:g} is shorter than --llm-timeout "
            f"{spec.llm_timeout:g}: no call could finish"
        )
    from memplug import gates, sampling

    if spec.limit_by not in sampling.LIMIT_BY:
        raise MemplugError(f"--limit-by {spec.limit_by!r}: use one of {', '.join(sampling.LIMIT_BY)}")
    gates.parse_max_errors(spec.max_errors)
    gates.thresholds(spec.fail_under)


def check_judge(model: str | None, name: str | None, plugins: "Plugins | None" = None) -> None:
    """``--judge-prompt NAME`` names a known judge and comes with ``--judge MODEL``; an unknown
    name is one line listing the judges installed (``memplug list --kind judges``)."""
    if name is None:
        return
    if not str(name).strip():
        raise MemplugError("--judge-prompt: give a judge's name (see `memplug list --kind judges`)")
    if not model:
        raise MemplugError(
            f"--judge-prompt {name} chooses the judge's prompts; it needs --judge MODEL, the model that judges"
        )
    from memplug.judge import judge_set

    judge_set(name, plugins)


def agent(
    factory: Any, name: str, values: Mapping[str, Any], given: Mapping[str, str], llm: "LLM | None"
) -> tuple[dict[str, Any], str | None]:
    """The agent's option values after its own preflight, and its note for the user.

    An agent factory may define ``preflight(values, given, llm) -> AgentPlan``:
    ``values`` are its resolved options, ``given`` the ``-o`` options the user typed
    (to tell a default from a choice) and ``llm`` the run's LLM or None. It raises
    :class:`MemplugError` when it cannot run as configured (e.g. it needs an LLM and
    none was given), or returns the values to run with: an agent that has an offline
    mode picks it when no LLM is configured and says so in ``note``.
    """
    from memplug.protocols import Preflights

    if not isinstance(factory, Preflights):
        return dict(values), None
    plan = factory.preflight(values, given, llm)
    if not isinstance(plan, AgentPlan):
        raise MemplugError(
            f"agent {name!r}: its preflight returned {type(plan).__name__}, not a memplug.preflight.AgentPlan"
        )
    return dict(plan.values), plan.note


def plugin(obj: object, owner: str) -> None:
    """The optional capabilities ``obj`` (an agent factory, a dataset builder, a reader or
    metric factory) declares are well formed (:func:`memplug.protocols.capability_problems`):
    a plugin that declares ``blocking = "yes"`` or ``default_chunk_size = -3`` is refused
    here, in one line, not half way through a run."""
    from memplug.protocols import capability_problems

    problems = capability_problems(obj)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise MemplugError(
            f"{owner}: {problems[0]}{more}; see the table of optional capabilities in docs/writing-a-plugin.md"
        )


def declared_options(obj: object, owner: str) -> "tuple[Option, ...]":
    """The options an agent factory or dataset builder declares, once :func:`plugin` has
    found its declarations well formed (the CLI splits ``-o`` pairs between the two with them)."""
    from memplug.protocols import options_of

    plugin(obj, owner)
    return options_of(obj)


#: the variables each provider's key may be in (one is enough), as litellm's
#: ``validate_environment`` reads them: a missing key is said before litellm is imported,
#: which takes seconds (7-34 s were seen before the line came)
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "perplexity": ("PERPLEXITYAI_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "replicate": ("REPLICATE_API_KEY",),
    "huggingface": ("HUGGINGFACE_API_KEY",),
    "ai21": ("AI21_API_KEY",),
    "nvidia_nim": ("NVIDIA_NIM_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY", "FIREWORKSAI_API_KEY", "FIREWORKS_AI_TOKEN"),
}


def _provider(model: str) -> str | None:
    """The provider of ``model`` as litellm would route it, where that is known without
    importing litellm: a ``provider/`` prefix, or a bare name (``gpt-4o-mini``) in the
    price map litellm ships (read as JSON, ~20 ms)."""
    prefix, slash, _ = model.partition("/")
    if slash:
        return prefix if prefix in PROVIDER_KEYS else None
    return _bundled_providers().get(model)


@functools.cache
def _bundled_providers() -> dict[str, str]:
    """Model name -> provider, from litellm's bundled price map (empty without litellm)."""
    from memplug.tokens import litellm_dir

    root = litellm_dir()
    if root is None:
        return {}
    try:
        table = json.loads((root / "model_prices_and_context_window_backup.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {name: str(row.get("litellm_provider")) for name, row in table.items() if isinstance(row, dict)}


def check_keys(spec: "RunSpec") -> None:
    """The provider key of ``--llm`` and ``--judge`` (a provider in :data:`PROVIDER_KEYS`,
    without ``--api-base``) is in the environment: checked first, in no time;
    :func:`check_llm` asks litellm about every other provider later."""
    if spec.api_base:
        return
    for role, model in (("--llm", spec.llm), ("--judge", spec.judge)):
        provider = _provider(str(model)) if model else None
        keys = PROVIDER_KEYS.get(provider or "")
        if keys and not any(os.environ.get(key) for key in keys):
            raise MemplugError(
                f"{role} {model}: {provider} needs {' or '.join(keys)} in the environment "
                "(or give --api-base URL of a server that needs no key)"
            )


def _litellm_provider(model: str) -> str:
    from memplug.llm.transport import litellm as _litellm

    try:
        return str(_litellm().get_llm_provider(model)[1])
    except Exception as exc:
        reason = " ".join(str(exc).split())
        # litellm's "LLM Provider NOT provided. Pass in the LLM provider you are trying to call..." (300 characters)
        reason = "it names no provider" if "Provider NOT provided" in reason else reason[:200]
        raise MemplugError(
            f"model {model!r} is not one litellm can call ({reason}); write it as "
            "provider/name, e.g. openai/gpt-4o-mini or ollama/qwen2.5"
        ) from None


def check_llm(llm: "LLM", role: str = "--llm") -> None:
    """The model resolves, its key is present, its endpoint answers; a local model's server
    is started now and timed (memplug.llm.local), so a model that cannot load fails here."""
    if llm.local is not None:
        llm.local_server()
        return
    if not llm.direct:
        provider = _litellm_provider(llm.model)
        if provider in KEYLESS and not llm.api_base:
            variable, default = KEYLESS[provider]
            server = os.environ.get(variable) or default
            probe(server, role, down=f"{role} {llm.model}: no {provider} server answers at {redact_url(server)}")
            return
        if not llm.api_base and not llm.api_key:
            from memplug.llm.transport import litellm as _litellm

            try:
                env = _litellm().validate_environment(model=llm.model)
            except Exception:  # an odd provider litellm cannot describe: the first call will tell
                env = {"keys_in_environment": True}
            missing = [k for k in env.get("missing_keys") or [] if not os.environ.get(k)]
            if not env.get("keys_in_environment", True) and missing:
                raise MemplugError(
                    f"{role} {llm.model}: {provider} needs {', '.join(missing)} in the environment "
                    "(or give --api-base URL of a server that needs no key)"
                )
        if provider in HOSTED and not llm.api_base:
            variables, default, key_variable = HOSTED[provider]
            server = next((os.environ[v] for v in variables if os.environ.get(v)), default)
            probe(
                server,
                role,
                key=llm.api_key or os.environ.get(key_variable),
                down=f"{role} {llm.model}: {redact_url(server)} does not answer",
                hint=OFFLINE_HINT,
            )
            return
        if provider in REACHED and not llm.api_base:
            variables, default = REACHED[provider]
            server = next((os.environ[v] for v in variables if os.environ.get(v)), default)
            reach(server, f"{role} {llm.model}: {redact_url(server)} does not answer")
            return
    if llm.api_base:
        probe(llm.api_base, role, key=llm._http_key() if llm.direct else None)


def probe(
    api_base: str,
    role: str = "--api-base",
    key: str | None = None,
    down: str | None = None,
    hint: str = "start it, or give --api-base URL",
) -> None:
    """One cheap request (``GET <api_base>/models``): the endpoint must answer, not with
    401/403, and where it answers 2xx, as an API does: JSON (declared by its content type,
    or its first 64 KiB parsed as a JSON object). A web server at the address (a 200 with
    ``<html>``) would otherwise pass, and every question fail on a "malformed response"
    after the run started. Any other status (even 404: not every server lists models)
    shows someone is there. ``down``: the line's start when nobody answers (the address
    was not given as --api-base), and ``hint`` its end.
    """
    from memplug.llm import endpoint

    timeout = float(os.environ.get("MEMPLUG_PROBE_TIMEOUT") or PROBE_TIMEOUT_S)
    url, headers = endpoint(api_base, "/models", key)
    shown = redact_url(api_base)
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(1 << 16)
            kind = response.headers.get_content_type() if response.headers.get("Content-Type") else None
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise MemplugError(
                f"{role}: {shown} refused the key (HTTP {exc.code}): check the API key "
                "(the provider's *_API_KEY variable)"
            ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        text = _why_unanswered(exc, timeout)
        line = (
            f"{down} ({text}): {hint}"
            if down
            else f"--api-base {shown} does not answer ({text}): start the server, "
            "or check the URL (it usually ends in /v1)"
        )
        raise MemplugError(scrub(line, urls=(api_base,))) from None
    else:
        if not _is_json(kind, body):
            path = urllib.parse.urlsplit(url).path
            hint = "" if down else "; check the URL (it usually ends in /v1)"
            raise MemplugError(
                scrub(
                    f"{role}: {shown} answers but not as {'an API' if down else 'an OpenAI API'}: "
                    f"GET {path} gave {kind or 'no content type'}{hint}",
                    urls=(api_base,),
                )
            )


def _why_unanswered(exc: BaseException, timeout: float) -> str:
    """Why a request got no answer, for :func:`probe` and :func:`reach`: the OS's reason
    ("Name or service not known"), or the timeout."""
    reason = getattr(exc, "reason", exc)
    return f"no answer within {timeout:g}s" if "timed out" in str(reason) else str(reason)


def reach(url: str, down: str) -> None:
    """Whether a server answers at ``url`` at all (its name resolves, it accepts a connection,
    it speaks HTTP): any status counts, a 404 or a 401 included. ``down``: the line's start
    when nothing answers."""
    timeout = float(os.environ.get("MEMPLUG_PROBE_TIMEOUT") or PROBE_TIMEOUT_S)
    try:
        with urllib.request.urlopen(urllib.request.Request(url), timeout=timeout):
            pass
    except urllib.error.HTTPError:
        pass  # an answer, whatever its status
    except (urllib.error.URLError, OSError, ValueError) as exc:
        text = _why_unanswered(exc, timeout)
        raise MemplugError(scrub(f"{down} ({text}): {OFFLINE_HINT}", urls=(url,))) from None


def _is_json(kind: str | None, body: bytes) -> bool:
    """An answer in JSON: said by its content type (``application/json``, ``+json``), or
    without one that says so, a body that parses as a JSON object."""
    if kind is not None and (kind == "application/json" or kind.endswith("+json")):
        return True
    try:
        return isinstance(json.loads(body), dict)
    except ValueError:
        return False


def check_embedder(name: str, llm: "LLM | None") -> None:
    """The embedder named by ``--embedder`` exists, and an API embedder's model resolves."""
    kind, _, model = name.partition(":")
    if name == "wordllama":
        return
    if kind == "st" and model:
        from memplug.plugins import get_plugins

        # built by the plugin that has it (memplug.adapters): a model missing locally fails now, in one line
        if get_plugins().hook.memplug_check_embedder(name=name, llm=llm):
            return
    if kind == "litellm" and model:
        from memplug.llm import LLM

        api_base = llm.api_base if llm is not None else None
        probe_llm = LLM(model, api_base=api_base, api_key=llm.api_key if llm else None, use_cache=False)
        check_llm(probe_llm, "--embedder")
        return
    raise MemplugError(f"unknown embedder {name!r}; use wordllama, litellm:<model> or st:<model>")


def requires_llm(agent_name: str, purpose: str, when: Callable[[Mapping[str, Any]], bool] = lambda values: True) -> Any:
    """A ``preflight`` for an agent that cannot work without an LLM (with options for which
    ``when(values)`` holds): set it as the class attribute ``preflight``."""

    def check(values: Mapping[str, Any], given: Mapping[str, str], llm: "LLM | None") -> AgentPlan:
        if llm is None and when(values):
            raise MemplugError(
                f"agent {agent_name!r} needs an LLM for {purpose}: set --llm MODEL "
                "(and --api-base URL for a self-hosted OpenAI-compatible server)"
            )
        return AgentPlan(values)

    return staticmethod(check)
