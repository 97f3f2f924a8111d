"""Typed options that agents and dataset builders declare, and `-o key=value` parsing.

Each plugin declares the options it accepts with their type and default; an unknown
key or a value of the wrong type is an error, never silently ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import attrs

from memplug.errors import MemplugError, did_you_mean

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@attrs.frozen
class Option:
    """One declared option: name, type (str, int, float, bool or Path), default and help."""

    name: str
    type: type = str
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] | None = None
    #: inclusive bounds of a number; a value that would exhaust the machine is an error, not a hang
    low: float | None = None
    high: float | None = None

    def parse(self, raw: Any) -> Any:
        """Convert a command-line string (or an already typed value) to this option's type.

        None stays None: it is an unset option whose values were resolved once already
        (a builder that resolves again must not turn it into the text "None").
        """
        value: Any
        if raw is None:
            return None
        try:
            if isinstance(raw, self.type) and not (self.type is int and isinstance(raw, bool)):
                value = raw
            elif self.type is bool:
                text = str(raw).strip().lower()
                if text not in _TRUE | _FALSE:
                    raise ValueError
                value = text in _TRUE
            elif self.type is Path:
                value = Path(str(raw)).expanduser()
            else:
                value = self.type(raw)
        except (TypeError, ValueError):
            raise MemplugError(f"option {self.name}={raw!r}: expected {self.type.__name__}") from None
        if self.choices is not None and value not in self.choices:
            allowed = ", ".join(map(str, self.choices))
            raise MemplugError(f"option {self.name}={raw!r}: must be one of {allowed}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
                raise MemplugError(
                    f"option {self.name}={raw!r}: must be from {self.low:g} to {self.high:g}"
                    if self.low is not None and self.high is not None
                    else f"option {self.name}={raw!r}: must be at least {self.low:g}"
                    if self.low is not None
                    else f"option {self.name}={raw!r}: must be at most {self.high:g}"
                )
        return value

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description for `memplug list`."""
        default = str(self.default) if isinstance(self.default, Path) else self.default
        out = {"name": self.name, "type": self.type.__name__, "default": default, "help": self.help}
        if self.choices is not None:
            out["choices"] = list(self.choices)
        return out


def parse_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """Split repeated `key=value` arguments; a pair without '=' is an error."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise MemplugError(f"-o {pair!r}: expected key=value")
        out[key.strip()] = value
    return out


def resolve(declared: Sequence[Option], raw: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """Defaults of every declared option, overridden by parsed values from `raw`."""
    by_name = {o.name: o for o in declared}
    for key in raw:
        if key not in by_name:
            known = ", ".join(sorted(by_name)) or "none"
            raise MemplugError(f"{owner} has no option {key!r}{did_you_mean(key, by_name)}; it accepts: {known}")
    return {name: (opt.parse(raw[name]) if name in raw else opt.default) for name, opt in by_name.items()}


def split_for(
    raw: Mapping[str, str], agent: Sequence[Option], dataset: Sequence[Option]
) -> tuple[dict[str, str], dict[str, str]]:
    """Route `-o` pairs to the agent or the dataset builder.

    A key may be prefixed with `agent.` or `dataset.`; otherwise it goes to whichever
    declares it. A key both declare must be prefixed; a key neither declares is an error.
    """
    agent_names = {o.name for o in agent}
    dataset_names = {o.name for o in dataset}
    to_agent: dict[str, str] = {}
    to_dataset: dict[str, str] = {}
    for key, value in raw.items():
        owner, dot, bare = key.partition(".")
        if dot and owner in ("agent", "dataset"):
            (to_agent if owner == "agent" else to_dataset)[bare] = value
        elif key in agent_names and key in dataset_names:
            raise MemplugError(
                f"-o {key}: both the agent and the dataset accept it; write agent.{key} or dataset.{key}"
            )
        elif key in agent_names:
            to_agent[key] = value
        elif key in dataset_names:
            to_dataset[key] = value
        else:
            known = agent_names | dataset_names
            raise MemplugError(
                f"-o {key}: neither the agent nor the dataset accepts it{did_you_mean(key, known)}"
                f"; accepted: {', '.join(sorted(known)) or 'none'}"
            )
    return to_agent, to_dataset
