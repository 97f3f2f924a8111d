"""The one builder of a :class:`~memplug.runner.RunSpec` from loose fields: `memplug eval` and
:func:`memplug.evaluate` (:func:`memplug.api.resolve_spec`), a sweep's cells
(:func:`memplug.sweep.plan_cells`) and `memplug reproduce` (:func:`memplug.reproduce.stored_spec`)
each give it their fields and ``-o`` pairs, and get the same spec for the same input.

:func:`spec_fields` turns fields (``no_cache`` as the command line spells ``cache``), a stored
run's spec to start from and the ``-o KEY=VALUE`` pairs into RunSpec fields, the pairs split
between agent and dataset by what each declares; :func:`build` makes the RunSpec of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from memplug.errors import MemplugError

if TYPE_CHECKING:
    from memplug.results import RunDir
    from memplug.runner import RunSpec


def field_names() -> set[str]:
    """The fields of a RunSpec."""
    from memplug.runner import RunSpec

    return {a.name for a in RunSpec.__attrs_attrs__}


def stored_fields(run: RunDir) -> dict[str, Any]:
    """A stored run's spec, a field the run predates as what it meant then (``LEGACY_SPEC``)."""
    from memplug.runner import LEGACY_SPEC

    return {**LEGACY_SPEC, **run.check().info().spec}


def spec_fields(fields: Mapping[str, Any], options: Mapping[str, str] | None = None, *,
                stored: Mapping[str, Any] | None = None, explicit: Iterable[str] | None = None) -> dict[str, Any]:
    """RunSpec fields: ``stored`` (a run's spec, :func:`stored_fields`) overridden by the
    ``explicit`` ones of ``fields`` (all of them without ``explicit``; with ``stored`` and no
    ``explicit``, none), then ``options``, the ``-o`` pairs, split between the agent and the
    dataset (None: the agent and dataset options stay as they are). A spec with ``from_run``
    builds no agent: its options are its source's, and the pairs given are its dataset's
    (added to the source's). An unknown field, agent, dataset or option is a MemplugError."""
    known = field_names()
    unknown = sorted(set(fields) - known - {"no_cache"})
    if unknown:
        raise MemplugError(f"unknown evaluation setting(s): {', '.join(unknown)} "
                           f"(known: {', '.join(sorted(known - {'agent_options', 'dataset_options'}))})")
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
    agent_opts = () if spec.get("from_run") else declared_options(reg("agents").get(spec["agent"]).load(),
                                                                   f"agent {spec['agent']!r}")
    dataset_opts = declared_options(reg("datasets").get(spec["dataset"]).load(), f"dataset {spec['dataset']!r}")
    given_agent, given_dataset = split_for(dict(options), agent_opts, dataset_opts)
    if spec.get("from_run"):  # the same data as the stored run, with the protocol options given now
        return {"dataset_options": {**(spec.get("dataset_options") or {}), **given_dataset}}
    return {"agent_options": given_agent, "dataset_options": given_dataset}


def build(fields: Mapping[str, Any], where: object = "the spec") -> RunSpec:
    """The RunSpec of ``fields`` (:func:`spec_fields`), fields this memplug does not know
    (a newer run's) left out; MemplugError naming ``where`` when they are not a spec."""
    from memplug.runner import RunSpec

    known = field_names()
    try:
        return RunSpec(**{k: v for k, v in fields.items() if k in known})
    except TypeError as exc:
        raise MemplugError(f"{where}: not a spec this memplug can run ({exc})") from None
