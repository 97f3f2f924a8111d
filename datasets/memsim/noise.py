"""MemDaily-η (seed 000, §5.1): interleave irrelevant messages so real ones are 1/η of a trajectory.

As in MemSim's ``infuse_noise.py``: a trajectory of n real messages grows to η·n
messages; the real ones keep their order at random sorted positions and the targets
are remapped to those positions. Noise comes from a user's file (one message per
line) or, by default, from the messages of other generated users, filtered so that
no noise message speaks about an attribute or a person the trajectory speaks about.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

import attrs

from memplug.errors import DataError


@attrs.frozen
class NoiseMessage:
    """An irrelevant message; ``hint`` is set when it comes from another generated user."""

    text: str
    hint: dict[str, Any] | None = None

    @property
    def attribute(self) -> str | None:
        return self.hint["attribute"] if self.hint else None

    @property
    def refs(self) -> tuple[str, ...]:
        return tuple(self.hint["refs"]) if self.hint else ()


def read_noise_file(path: Path) -> list[NoiseMessage]:
    """One message per non-empty line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(path, f"cannot read the noise file ({exc})") from None
    messages = [NoiseMessage(line.strip()) for line in lines if line.strip()]
    if not messages:
        raise DataError(path, "the noise file has no messages (expected one per line)")
    return messages


def pick_noise(
    rng: random.Random, pool: Sequence[NoiseMessage], count: int, attributes: set[str], refs: set[str]
) -> list[NoiseMessage]:
    """``count`` messages of the (shuffled) pool that say nothing about ``attributes`` or the entities named by ``refs``.

    Two picked messages never give different values for the same (referent, attribute);
    when the pool runs short the picks repeat (a repeated message contradicts nothing).
    """
    picked: list[NoiseMessage] = []
    seen: dict[tuple[str, str | None], Any] = {}
    start, size = rng.randrange(len(pool)), len(pool)
    for i in range(size):  # the pool is shuffled once; each trajectory walks it from a random start
        if len(picked) >= count:
            break
        msg = pool[(start + i) % size]
        if msg.hint is not None:
            if msg.attribute in attributes or refs.intersection(msg.refs):
                continue
            keys = [(r, msg.attribute) for r in msg.refs]
            if any(k in seen and seen[k] != msg.hint["value"] for k in keys):
                continue
            for k in keys:
                seen[k] = msg.hint["value"]
        picked.append(msg)
    if not picked:
        raise DataError("noise", "no noise message is compatible with this trajectory")
    unique = len(picked)
    while len(picked) < count:
        picked.append(picked[len(picked) % unique])
    return picked[:count]


def interleave(rng: random.Random, n_real: int, eta: int) -> list[int]:
    """Sorted positions of the real messages in a trajectory of ``eta * n_real`` messages."""
    return sorted(rng.sample(range(eta * n_real), n_real))
