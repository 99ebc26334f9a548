"""Hyperstacks (OME-TIFF, ImageJ): the neutral description of their dimensions, and how IMI holds them.

A ``Stack`` lists a source's dimensions in its own order (``t``, ``z``, ``c``, ``y``, ``x``...)
with their physical step and UDUNITS-2 unit. Its images are the stack's pages in C order over
the page dimensions (every dimension but ``y``, ``x`` and the one held as the image's channels).
In IMI the records of 1.5 describe one file: an aXES axis per dimension, cORD for the
coordinate-bound ones, channel names in cALB. One file can vary along one page dimension
only (the frames binding), so a stack varying along several is split into one file per index
of the outer ones (``docs/SPEC_NOTES.md``, "1.5 Hyperstacks in IMI files").
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from imij_plugins import physical
from imij_plugins.container.metadata.science import (
    BIND_CHANNELS,
    BIND_COLUMNS,
    BIND_COORDINATE,
    BIND_FRAMES,
    BIND_ROWS,
    KIND_CHANNEL,
    KIND_OTHER,
    KIND_SPACE,
    KIND_TIME,
    ScienceRecords,
)

RASTER = ("y", "x")
_KINDS = {"x": KIND_SPACE, "y": KIND_SPACE, "z": KIND_SPACE, "t": KIND_TIME, "c": KIND_CHANNEL, "s": KIND_CHANNEL}
_RASTER_BINDINGS = {"x": "columns", "y": "rows"}

# Source unit spellings -> UDUNITS-2 (1.5: "unit ... UDUNITS-2"); others are kept as written
_UDUNITS = {
    "µm": "um", "\u03bcm": "um", "\\u00b5m": "um", "micron": "um", "microns": "um", "micrometer": "um",
    "µs": "us", "\u03bcs": "us", "Å": "angstrom", "sec": "s", "second": "s", "seconds": "s",
}
_OME_UNITS = {"um": "µm", "us": "µs", "angstrom": "Å"}


def udunits(unit: str | None) -> str:
    """A source's unit name as UDUNITS-2 (OME "µm" and ImageJ "micron" are "um"); "" for none."""
    unit = (unit or "").strip()
    return _UDUNITS.get(unit, _UDUNITS.get(unit.lower(), unit))


def ome_unit(unit: str) -> str:
    """A UDUNITS-2 unit as the OME schema spells it ("um" is "µm")."""
    return _OME_UNITS.get(unit, unit)


@dataclass(frozen=True)
class Dim:
    """One dimension: lower-case name, length, physical step and UDUNITS-2 unit, and for a
    dimension of length 1 which index of the source's dimension it is."""

    name: str
    size: int
    step: float | None = None
    unit: str = ""
    index: int = 0


@dataclass(frozen=True)
class Stack:
    """A hyperstack's dimensions in source order, the one held as each image's channels, channel names."""

    dims: tuple[Dim, ...]
    channels: str | None = None
    names: tuple[str, ...] = ()

    @property
    def page_dims(self) -> tuple[Dim, ...]:
        """The dimensions the pages run over, outer to inner."""
        return tuple(d for d in self.dims if d.name not in RASTER and d.name != self.channels)

    def dim(self, name: str) -> Dim | None:
        """The dimension called ``name``, if any."""
        return next((d for d in self.dims if d.name == name), None)

    def parts(self) -> Iterator[tuple[str, tuple[int, ...], Stack]]:
        """(name suffix, page numbers, stack) for each IMI file: one, unless several page dimensions
        vary; then one per index of all varying ones but the innermost, e.g. ``_t0003``."""
        varying = [d for d in self.page_dims if d.size > 1]
        if len(varying) <= 1:
            yield "", tuple(range(self.pages)), self
            return
        outer = varying[:-1]
        sizes = [d.size for d in self.page_dims]
        for where in itertools.product(*(range(d.size) for d in outer)):
            fixed = {d.name: i for d, i in zip(outer, where)}
            suffix = "".join(f"_{name}{i:04}" for name, i in fixed.items())
            pages = tuple(
                n for n, idx in enumerate(itertools.product(*map(range, sizes)))
                if all(idx[k] == fixed[d.name] for k, d in enumerate(self.page_dims) if d.name in fixed)
            )
            dims = tuple(replace(d, size=1, index=fixed[d.name]) if d.name in fixed else d for d in self.dims)
            yield suffix, pages, replace(self, dims=dims)

    @property
    def pages(self) -> int:
        """How many images the stack holds."""
        count = 1
        for d in self.page_dims:
            count *= d.size
        return count


def describe(stack: Stack) -> physical.Physical:
    """The neutral description (``physical.py``) of a stack with at most one varying page dimension:
    y and x bound to rows and columns, the channels dimension to channels, a varying page dimension
    to frames (its index is the page), the others to coordinates at their index (cORD). Unknown
    steps are 1.0, and with no step known the description has no scales (``scaled``)."""
    dims: dict[str, physical.Dim] = {}
    coordinates = []
    for d in stack.dims:
        kind = physical.KINDS[_KINDS.get(d.name, KIND_OTHER)]
        scale = 1.0 if d.step is None else d.step
        if d.name in _RASTER_BINDINGS:
            binding = _RASTER_BINDINGS[d.name]
        elif d.name == stack.channels:
            binding = "channels"
        elif d.size > 1:
            binding = "frames"
        else:
            coordinates.append(physical.Coordinate(d.name, d.index, scale, 0.0, d.unit, kind))
            continue
        dims[binding] = physical.Dim(d.name, binding, d.size, scale, 0.0, d.unit, kind)
    # a channel's name is its cALB quantity (free text)
    names = stack.names if any(stack.names) else ()
    return physical.Physical(
        tuple(dims[b] for b in ("frames", "rows", "columns", "channels") if b in dims),
        tuple(physical.Channel(n, {"long_name": n} if n else {}) for n in names),
        tuple(coordinates),
        axis_order=tuple(d.name for d in stack.dims),
        has_axes=True,
        scaled=any(d.step is not None for d in stack.dims),
    )


def science(stack: Stack) -> dict[str, object]:
    """The aXES, cORD and cALB records (1.5) of a stack with at most one varying page dimension."""
    return physical.science(describe(stack))


def from_science(records: ScienceRecords, pages: int, height: int, width: int, channels: int) -> Stack | None:
    """The stack an IMI file's aXES (and cORD, cALB) describe, or None without an aXES."""
    axes = records.axes
    if axes is None:
        return None
    level = axes.levels[0] if axes.levels else None
    indices = iter(records.coordinates.values if records.coordinates is not None else ())
    sizes = {BIND_COLUMNS: width, BIND_ROWS: height, BIND_CHANNELS: channels, BIND_FRAMES: pages}
    dims = []
    for k, axis in enumerate(axes.axes):
        scale = level.scale[k] if level is not None else None
        step = scale if scale is not None and (axis.unit or scale != 1.0) else None
        index = next(indices, 0) if axis.binding == BIND_COORDINATE else 0
        dims.append(Dim(axis.name, sizes.get(axis.binding, 1), step, axis.unit, index))
    channel = next((a.name for a in axes.axes if a.binding == BIND_CHANNELS), None)
    cal = records.calibration
    names = tuple(c.quantity or "" for c in cal.channels) if cal is not None and channel is not None else ()
    return Stack(tuple(dims), channel, names)

