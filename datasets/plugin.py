"""Registers memplug's own dataset builders through the `memplug` entry point."""

from __future__ import annotations

from pathlib import Path

from memplug.hookspecs import Register, hookimpl


@hookimpl
def register_datasets(register: Register) -> None:
    register("memsim", "memplug.datasets.memsim.generator:MemSimBuilder")
    register("memdaily", "memplug.datasets.memsim.memdaily:MemDailyLoader")
    register("factcon", "memplug.datasets.factcon.builder:FactConBuilder")
    register("mab", "memplug.datasets.mab.builder:MABBuilder")
    register("perltqa", "memplug.datasets.perltqa.builder:PerLTQABuilder")
    register("locomo", "memplug.datasets.locomo.builder:LoCoMoBuilder")
    register("longmemeval", "memplug.datasets.longmemeval.builder:LongMemEvalBuilder")
    register("locomo-plus", "memplug.datasets.locomo_plus.builder:LoCoMoPlusBuilder")
    register("beam", "memplug.datasets.beam.builder:BeamBuilder")
    register("personamem", "memplug.datasets.personamem.builder:PersonaMemBuilder")
    register("membench", "memplug.datasets.membench.builder:MemBenchBuilder")
    register("conversations", "memplug.datasets.conversations.builder:ConversationsBuilder")


@hookimpl
def memplug_report_table(paths: list[Path], fmt: str) -> str | None:
    """MemoryAgentBench's runs of several sources: the paper's table by competency."""
    from memplug.datasets.mab import report as mab

    return mab.render(paths, fmt) if mab.applies(paths) else None  # type: ignore[arg-type]
