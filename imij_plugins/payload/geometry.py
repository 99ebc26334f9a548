"""Units (2.3, 2.7): stripes of H rows split into column groups of G columns, stripe-major."""

from __future__ import annotations

from typing import NamedTuple

WIDE_IMAGE = 8192  # 5: writers give images at least 8192 pixels wide column groups of 2048
WIDE_GROUP = 2048



def even_stripe_rows(width: int, height: int, unit_width: int, pixels: tuple[int, int], min_rows: int) -> int:
    """Rows per stripe for units of a quarter of the image kept within ``pixels`` (low, high) and at
    least ``min_rows`` rows, then evened out so that the last stripe is no sliver: units decode in
    parallel (2.3), and the slowest sets the pace."""
    low, high = pixels
    unit = min(high, max(low, width * height // 4))
    rows = max(min_rows, -(-unit // unit_width))
    stripes = -(-height // rows)
    return -(-height // stripes)  # as many stripes, of even heights: units of one size


class Geometry(NamedTuple):
    """The unit grid a payload head fixes for an image of ``width`` x ``height`` (a named tuple:
    every read makes one)."""

    width: int
    height: int
    stripe_rows: int
    group_cols: int  # 0: one group, the whole width

    @property
    def stripes(self) -> int:
        return -(-self.height // self.stripe_rows)

    @property
    def groups(self) -> int:
        return -(-self.width // self.group_cols) if self.group_cols else 1

    @property
    def unit_count(self) -> int:
        """R, the number of main unit records (2.7)."""
        return self.stripes * self.groups if self.group_cols else self.stripes

    def unit_rect(self, index: int) -> tuple[int, int, int, int]:
        """Unit ``index``'s ``(x, y, w, h)``: stripe-major, then column group (2, 2.3)."""
        if not self.group_cols:  # one group: unit i is stripe i
            y = index * self.stripe_rows
            return 0, y, self.width, min(self.stripe_rows, self.height - y)
        stripe, group = divmod(index, self.groups)
        y = stripe * self.stripe_rows
        h = min(self.stripe_rows, self.height - y)
        x = group * self.group_cols
        return x, y, min(self.group_cols, self.width - x), h

    def units_in(self, x: int, y: int, w: int, h: int) -> list[int]:
        """The indices of the units a region ``(x, y, w, h)`` overlaps."""
        s0, s1 = y // self.stripe_rows, (y + h - 1) // self.stripe_rows
        if self.group_cols:
            g0, g1 = x // self.group_cols, (x + w - 1) // self.group_cols
        else:
            g0 = g1 = 0
        return [s * self.groups + g for s in range(s0, s1 + 1) for g in range(g0, g1 + 1)]
