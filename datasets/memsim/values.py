"""The value space a BRNet samples from: one per language (seed 000, Appendix E.1).

Kept as plain tuples and dicts so that sampling stays cheap (the generator's target
is 500 trajectories per second on one core).
"""

from __future__ import annotations

from typing import Any, Mapping

import attrs


@attrs.frozen
class ValueSpace:
    """Everything the conditional samplers of :mod:`.network` draw values from."""

    lang: str
    #: gender -> given names; combined with ``surnames`` unless ``full_names`` is set
    first_names: Mapping[str, tuple[str, ...]]
    surnames: tuple[str, ...]
    #: a flat list of full names (MemSim's meta_profile.csv gives names this way)
    full_names: tuple[str, ...]
    #: city -> description; its keys are the hometowns unless ``hometowns`` is given (the
    #: post-processing "city description" step reads the built-in tables, ops.CITY_DESCRIPTIONS,
    #: since the validator knows the language but not the space)
    cities: Mapping[str, str]
    work_cities: tuple[str, ...]
    #: education levels from lowest to highest
    education: tuple[str, ...]
    #: occupation -> (lowest education index, junior positions, senior positions, employer kinds)
    occupations: Mapping[str, tuple[Any, ...]]
    company_words: tuple[str, ...]
    hobbies: tuple[str, ...]
    personalities: tuple[str, ...]
    phone_prefixes: tuple[str, ...]
    bank_prefixes: tuple[str, ...]
    #: relationship -> (gender or None, age offset low, high, shares the user's surname)
    relatives: Mapping[str, tuple[Any, ...]]
    #: relationship -> (age offset low, high, senior position)
    colleagues: Mapping[str, tuple[Any, ...]]
    #: event type -> what participants do there
    work_event_types: Mapping[str, str]
    fun_event_types: Mapping[str, str]
    weekdays: tuple[str, ...]
    weeks: tuple[str, ...]
    hours: tuple[str, ...]
    #: place type -> names
    places: Mapping[str, tuple[str, ...]]
    #: place type -> relationships the user can have with it
    place_relations: Mapping[str, tuple[str, ...]]
    place_pros: tuple[str, ...]
    place_cons: tuple[str, ...]
    #: item type -> names
    items: Mapping[str, tuple[str, ...]]
    item_relations: tuple[str, ...]
    item_pros: tuple[str, ...]
    item_cons: tuple[str, ...]
    scales: tuple[int, ...]
    #: days per duration unit (day, week, month)
    duration_units: tuple[int, ...]
    genders: tuple[str, str]
    #: romanized spellings for e-mail addresses (Chinese names and company words)
    romanized: Mapping[str, str] = attrs.field(factory=dict)
    #: default: the keys of ``cities``
    hometowns: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if not self.hometowns:
            object.__setattr__(self, "hometowns", tuple(self.cities))
