"""The Bayesian Relation Network (seed 000, §3.2): a DAG over attributes, sampled ancestrally.

Each node is one attribute of one entity (``"relative_1.age"``) with a conditional
sampler that sees only its parents' values, so the joint distribution factorises as
∏ P(X_t | par(X_t)) (Theorem 1). The order comes from Kahn's algorithm, and sampling
every node in that order is equivalent to sampling the joint (Theorem 2).
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any, Callable, Iterable, Mapping

import attrs

#: ``sampler(rng, parents)`` draws a value given the parents' values
Sampler = Callable[[random.Random, Mapping[str, Any]], Any]


@attrs.frozen
class Node:
    """One attribute variable: its name, its parents and P(X | parents) as a sampler."""

    name: str
    parents: tuple[str, ...]
    sampler: Sampler


def kahn_order(nodes: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Topological order of ``{node: parents}`` (Kahn, 1962); ties keep declaration order.

    Hand-written rather than graphlib.TopologicalSorter so that the order is stable
    across Python versions, which keeps generated data byte-identical for a seed.
    """
    missing = sorted({p for ps in nodes.values() for p in ps if p not in nodes})
    if missing:
        raise ValueError(f"BRNet: parents without a node: {', '.join(missing)}")
    indegree = {name: len(set(ps)) for name, ps in nodes.items()}
    children: dict[str, list[str]] = {name: [] for name in nodes}
    for name, ps in nodes.items():
        for p in dict.fromkeys(ps):
            children[p].append(name)
    queue = deque(name for name in nodes if indegree[name] == 0)
    order: list[str] = []
    while queue:
        name = queue.popleft()
        order.append(name)
        for child in children[name]:
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    if len(order) != len(nodes):
        cyclic = sorted(n for n, d in indegree.items() if d > 0)
        raise ValueError(f"BRNet must be acyclic; a cycle runs through {', '.join(cyclic)}")
    return order


class BRNet:
    """A DAG of attribute nodes; :meth:`sample` draws one hierarchical user profile."""

    def __init__(self, nodes: Iterable[Node]) -> None:
        self.nodes: dict[str, Node] = {}
        for node in nodes:
            if node.name in self.nodes:
                raise ValueError(f"BRNet: node {node.name!r} declared twice")
            self.nodes[node.name] = node
        self.order = [self.nodes[n] for n in kahn_order({n.name: n.parents for n in self.nodes.values()})]
        #: each node in order, its name split once into (entity, attribute)
        self._steps: list[tuple[Node, str, str]] = []
        for node in self.order:
            entity, _, attribute = node.name.partition(".")
            self._steps.append((node, entity, attribute))

    def sample(self, rng: random.Random) -> dict[str, dict[str, Any]]:
        """Ancestral sampling; returns ``{entity: {attribute: value}}`` (the entity level)."""
        flat: dict[str, Any] = {}
        profile: dict[str, dict[str, Any]] = {}
        for node, entity, attribute in self._steps:
            value = flat[node.name] = node.sampler(rng, {p: flat[p] for p in node.parents})
            profile.setdefault(entity, {})[attribute] = value
        return profile
