"""Registers memplug's own dataset builders through the `memplug` entry point."""

from __future__ import annotations

from memplug.hookspecs import Register, hookimpl


@hookimpl
def register_datasets(register: Register) -> None:
    register("memsim", "memplug.datasets.memsim.generator:MemSimBuilder")
    register("memdaily", "memplug.datasets.memsim.memdaily:MemDailyLoader")
    register("factcon", "memplug.datasets.factcon.builder:FactConBuilder")
    register("perltqa", "memplug.datasets.perltqa.builder:PerLTQABuilder")
    register("locomo", "memplug.datasets.locomo.builder:LoCoMoBuilder")
    register("longmemeval", "memplug.datasets.longmemeval.builder:LongMemEvalBuilder")
    register("conversations", "memplug.datasets.conversations.builder:ConversationsBuilder")
