"""BRNet (seed 000, §3.2): Kahn ordering, ancestral sampling, MemDaily's conditional structure."""

from __future__ import annotations

import random

import pytest

from memplug.datasets.memsim import values_en, values_zh
from memplug.datasets.memsim.brnet import BRNet, Node, kahn_order
from memplug.datasets.memsim.network import ENTITIES, PERSONS, build_network


def test_kahn_order_puts_parents_first_and_keeps_declaration_order_for_ties():
    order = kahn_order({"c": ("a", "b"), "a": (), "b": ("a",), "d": ()})
    assert order == ["a", "d", "b", "c"]


def test_cycles_and_unknown_parents_are_refused():
    with pytest.raises(ValueError, match="acyclic"):
        kahn_order({"a": ("b",), "b": ("a",)})
    with pytest.raises(ValueError, match="parents without a node"):
        kahn_order({"a": ("ghost",)})


def test_a_sampler_sees_only_its_parents():
    seen = {}

    def child(rng, parents):
        seen.update(parents)
        return parents["x.a"] + 1

    net = BRNet([Node("x.b", ("x.a",), child), Node("x.a", (), lambda rng, p: 1), Node("y.c", (), lambda rng, p: 5)])
    assert net.sample(random.Random(0)) == {"x": {"b": 2, "a": 1}, "y": {"c": 5}}
    assert seen == {"x.a": 1}


@pytest.mark.parametrize("space", [values_en.SPACE, values_zh.SPACE], ids=["en", "zh"])
def test_memdaily_profiles_follow_the_network_edges(space):
    net = build_network(space)
    assert set(net.order[0].name.split(".")[:1]) <= set(ENTITIES)
    for seed in range(200):
        p = net.sample(random.Random(seed))
        assert set(p) == set(ENTITIES)
        user = p["user"]
        for c in ("colleague_1", "colleague_2"):  # colleagues share the user's job
            assert (p[c]["workplace"], p[c]["company"], p[c]["occupation"]) == (
                user["workplace"],
                user["company"],
                user["occupation"],
            )
        assert p["relative_1"]["relationship"] != p["relative_2"]["relationship"]
        assert p["colleague_1"]["relationship"] != p["colleague_2"]["relationship"]
        names = [user["name"]] + [p[e]["name"] for e in PERSONS]
        assert len(set(names)) == 5
        for r in ("relative_1", "relative_2"):
            gender, lo, hi, _ = space.relatives[p[r]["relationship"]]
            assert gender in (None, p[r]["gender"])
            assert p[r]["age"] == max(6, p[r]["age"]) and user["age"] + lo <= p[r]["age"] <= max(6, user["age"] + hi)
            low = space.occupations[p[r]["occupation"]][0]
            assert space.education.index(p[r]["education"]) >= low
        assert p["work_event_1"]["type"] != p["work_event_2"]["type"]
        assert user["license"][:14] == user["id_number"][:14]


def test_profile_values_come_from_memsims_meta_profile(shared_data):
    space = values_zh.space_from_profile(shared_data / "memdaily" / "meta_profile.csv")
    rows = values_zh.read_meta_profile(shared_data / "memdaily" / "meta_profile.csv")
    listed = {name: values for name, values in rows.items() if values is not None}  # None: generated
    net = build_network(space)
    for seed in range(50):
        p = net.sample(random.Random(seed))
        assert p["user"]["name"] in listed["姓名"]
        assert p["user"]["hometown"] in listed["家乡"]
        assert p["user"]["hobby"] in listed["兴趣爱好"]
        assert p["relative_1"]["relationship"] in listed["亲属关系"]
        assert p["item_1"]["name"] in listed[p["item_1"]["type"]]
