"""A static model of what a payload costs a reader to decode, so that efforts above the default
trade decode speed for size only within a bound (section 5 leaves the choice to the writer).

The unit is one predictive step of one slot (2.3: all lanes of a unit advance together, so a
unit costs its rows times its lane width, whatever the number of lanes up to 16). Calibrated on
the C kernels (x86_64, AVX2 and AVX-512, one thread): a unit record's set-up costs about as much as
``UNIT`` steps, and a step of a bilevel or template stripe (2.10, 2.14; every lane of a step at
once, one context and rANS symbol per pixel) about ``LEVEL`` steps, or ``LEVEL_TWO`` when it
codes two values (a binary decision whose next probabilities are fetched ahead).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from imij_plugins.payload.geometry import Geometry

UNIT = 500.0  # set-up of one unit record, in predictive slot steps
LEVEL = 3.0  # one step of a template stripe of more than two entries, in predictive slot steps
LEVEL_TWO = 0.5  # one step of a bilevel stripe, or of a template stripe of two entries
BOUND = 1.10  # efforts above the default: at most this times the default effort's modeled cost


def lane_steps(width: int, height: int, lanes: int) -> int:
    """2.3: the steps of a unit, its rows times its lane width ceil(width / L)."""
    return height * -(-width // lanes)


@dataclass(frozen=True)
class UnitCosts:
    """The modeled decode cost of each unit of one payload, by how the unit is coded."""

    geometry: Geometry
    lanes: int
    slots: int  # coded slots of a regular stripe (2.2); a palette stripe codes one index plane

    def regular(self, index: int, palette: bool = False) -> float:
        """A regular or palette stripe (2.4, 2.5): every slot (or the index plane) step by step."""
        _, _, w, h = self.geometry.unit_rect(index)
        return UNIT + (1 if palette else self.slots) * lane_steps(w, h, self.lanes)

    def level(self, index: int, two: bool = False) -> float:
        """A bilevel or template stripe (2.10, 2.14) of two values (``two``) or more."""
        _, _, w, h = self.geometry.unit_rect(index)
        return UNIT + (LEVEL_TWO if two else LEVEL) * lane_steps(w, h, self.lanes)

    def total(self, palettes: Iterable[bool], levels: dict[int, bool]) -> float:
        """The payload's cost: each unit as coded (``palettes`` per unit; ``levels``: the level-coded
        units, each True when it codes two values)."""
        return sum(self.level(i, levels[i]) if i in levels else self.regular(i, p) for i, p in enumerate(palettes))

    def all_regular(self) -> float:
        """The payload's cost were every unit a regular stripe of all its slots."""
        return sum(self.regular(i) for i in range(self.geometry.unit_count))


class LevelBudget:
    """The decode cost bilevel and template stripes may add to a payload (``allowance``) and
    what each unit adds coded so instead of as analysed (regular or palette stripe)."""

    def __init__(self, costs: UnitCosts, palettes: list[bool], allowance: float) -> None:
        self.costs = costs
        self.palettes = palettes
        self.allowance = allowance

    def extra(self, index: int, two: bool) -> float:
        return self.costs.level(index, two) - self.costs.regular(index, self.palettes[index])

    def over(self, saved: list[tuple[int, int, bool]]) -> list[int]:
        """Of the level-coded units ``(index, bytes saved, two values)``, those to keep regular: the
        most bytes saved per added cost are kept first, while the allowance lasts (ties by index)."""
        extra = {i: self.extra(i, two) for i, _, two in saved}
        order = sorted(saved, key=lambda t: (-t[1] / max(extra[t[0]], 1e-9), t[0]))
        left, dropped = self.allowance, []
        for i, _, _ in order:
            if extra[i] <= max(left, 0.0):
                left -= max(extra[i], 0.0)
            else:
                dropped.append(i)
        return dropped
