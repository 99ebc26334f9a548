"""What an IMI file's samples mean physically (1.5), as one neutral description the adapters share.

``describe`` reads an opened file into named dims (array order: frames, rows, columns, channels),
their per-dim scale, centre of element 0, unit and kind (aXES), the cORD coordinates, the affine,
and per channel its name and CF attributes (cALB, cATG). ``science`` is the inverse: a description
back to the records ``write(..., science=...)`` takes. ``physical_values`` applies cALB. The
xarray and napari adapters only translate a ``Physical`` into their own objects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from imij_plugins.container.metadata import science as sc
from imij_plugins.reader import ImijFile

KINDS = ("space", "time", "channel", "other")  # 1.5 aXES kind 0..3
BINDINGS = ("coordinate", "columns", "rows", "channels", "frames")  # 1.5 aXES binding 0..4
RASTER = ("rows", "columns")
DEFAULT_NAMES = {"rows": "y", "columns": "x", "channels": "c"}
FRAME_NAMES = {"animation": "frame", "pages": "page", "mixed pages": "page", "sequence": "frame"}
# 1.5 cALB: "C entries, in channel order (Gray, A or R, G, B, A)"
CHANNEL_LETTERS = {
    "Gray": ("gray",),
    "GrayAlpha": ("gray", "alpha"),
    "RGB": ("R", "G", "B"),
    "RGBA": ("R", "G", "B", "A"),
    "CMYK": ("C", "M", "Y", "K"),
    "Oklab": ("L", "a", "b"),
    "OklabAlpha": ("L", "a", "b", "alpha"),
}


@dataclass(frozen=True)
class Dim:
    """One array dim: its aXES binding, size and level-0 transform (``origin``: element 0's centre)."""

    name: str
    binding: str  # "frames", "rows", "columns" or "channels"
    size: int
    scale: float = 1.0
    origin: float = 0.0
    unit: str = ""
    kind: str = "space"
    type: str = ""  # kind "other" only

    def positions(self) -> np.ndarray:
        """The physical position of every element's centre."""
        return self.origin + self.scale * np.arange(self.size, dtype=np.float64)


@dataclass(frozen=True)
class Coordinate:
    """A coordinate-bound aXES axis and its cORD index: the image sits at one position on it."""

    name: str
    index: int
    scale: float = 1.0
    translation: float = 0.0
    unit: str = ""
    kind: str = "space"
    type: str = ""

    @property
    def value(self) -> float:
        """1.5: u = scale * i + translation."""
        return self.scale * self.index + self.translation


@dataclass(frozen=True)
class Channel:
    """One channel: its name (cALB quantity, else the layout's letter) and CF attributes."""

    name: str
    attrs: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Physical:
    """The neutral description of an image's (or a stack's) samples: dims in array order and channels."""

    dims: tuple[Dim, ...]
    channels: tuple[Channel, ...]
    coordinates: tuple[Coordinate, ...] = ()
    pixel_is_area: bool = False
    affine: tuple[float, ...] | None = None  # N x (N + 1), row-major, over ``axis_order``
    axis_order: tuple[str, ...] = ()  # the aXES axis names in record order
    method: str | None = None
    has_axes: bool = False  # the description came from (or needs) an aXES record
    attrs: Mapping[str, object] = field(default_factory=dict)  # other metadata
    scaled: bool = True  # aXES holds a level: False when no scale is known (then every scale is 1.0)

    def dim(self, binding: str) -> Dim | None:
        """The dim bound to ``binding``, if any."""
        return next((d for d in self.dims if d.binding == binding), None)


# --- reading ----------------------------------------------------------------------------------


def science_of(f: ImijFile) -> sc.ScienceRecords:
    """The file's science records (none parsed when it has none)."""
    return f.metadata.get("science") or sc.ScienceRecords(())  # type: ignore[return-value]


def describe(f: ImijFile, index: int | None = None) -> Physical:
    """The physical description of frame or page ``index`` of ``f``, or (None) of every one stacked."""
    records = science_of(f)
    axes = records.axes
    info = f.image_info(index or 0)
    channels = _channels(info.layout, info.channels, records.calibration, records.categories, info.dtype)
    by_binding = {BINDINGS[a.binding]: (i, a) for i, a in enumerate(axes.axes)} if axes else {}
    level = axes.levels[0] if axes and axes.levels else None
    area = bool(axes and axes.pixel_is_area)

    def dim(binding: str, size: int, default: str, kind: str) -> Dim:
        if binding not in by_binding:
            return Dim(default, binding, size, kind=kind)
        i, a = by_binding[binding]
        scale, translation = (level.scale[i], level.translation[i]) if level else (1.0, 0.0)
        # 1.5 bit 0: pixel i covers [i, i + 1), so its centre is at index i + 0.5
        origin = translation + (0.5 * scale if area and binding in RASTER else 0.0)
        return Dim(a.name, binding, size, scale, origin, a.unit, KINDS[a.kind], a.type)

    dims = []
    if index is None and (f.n_frames > 1 or "frames" in by_binding):
        kind = "time" if f.kind in ("animation", "sequence") else "other"
        dims.append(dim("frames", f.n_frames, FRAME_NAMES.get(f.kind or "", "frame"), kind))
    dims += [dim("rows", info.height, "y", "space"), dim("columns", info.width, "x", "space")]
    if info.channels > 1 or "channels" in by_binding:
        dims.append(dim("channels", info.channels, "c", "channel"))
    at: list[tuple[int, int]] = []  # (aXES axis, index) of each axis the image sits at one position of
    if axes and records.coordinates:
        bound = [i for i, a in enumerate(axes.axes) if a.binding == sc.BIND_COORDINATE]
        at += zip(bound, records.coordinates.values)  # 1.5: "one signed index per coordinate-bound axis, in axis order"
    if index is not None and "frames" in by_binding:
        at.append((by_binding["frames"][0], index))  # one frame of a frames axis: its position
    coordinates = tuple(
        Coordinate(axes.axes[i].name, value, *((level.scale[i], level.translation[i]) if level else (1.0, 0.0)),
                   axes.axes[i].unit, KINDS[axes.axes[i].kind], axes.axes[i].type)
        for i, value in at
    ) if axes else ()
    return Physical(
        tuple(dims), channels, coordinates, area,
        axes.affine if axes else None, tuple(a.name for a in axes.axes) if axes else (),
        axes.method if axes else None, axes is not None, _other_attrs(f, info.layout, records),
        scaled=level is not None or axes is None,
    )


def _other_attrs(f: ImijFile, layout: str, records: sc.ScienceRecords) -> dict[str, object]:
    """Metadata the dims and channels do not hold: layout, frame kind, sMDT schemas, record reports."""
    out: dict[str, object] = {"layout": layout}
    if f.kind:
        out["frame_kind"] = f.kind
    if records.structured:
        out["structured_metadata"] = tuple(s.schema for s in records.structured)
    bad = [f"{r.tag.decode('latin-1')}: {r.status} ({r.reason})" for r in records.reports if r.status != sc.PARSED]
    if bad:
        out["science_reports"] = tuple(bad)
    return out


def _channels(layout: str, count: int, cal: sc.Calibration | None, cats: sc.Categories | None,
              dtype: np.dtype) -> tuple[Channel, ...]:
    """Each channel's name and CF attributes from cALB and cATG (records counting other channels, as a
    mixed page of another layout may, do not describe it)."""
    letters = CHANNEL_LETTERS.get(layout, tuple(f"c{i}" for i in range(count)))
    entries = cal.channels if cal and len(cal.channels) == count else (None,) * count
    categories = cats.channels if cats and len(cats.channels) == count else ((),) * count
    out = []
    for c in range(count):
        entry = entries[c]
        attrs = cf_attrs(entry, categories[c], dtype)
        name = entry.quantity if entry is not None and entry.quantity else letters[c]
        out.append(Channel(name, attrs))
    return tuple(out)


def cf_attrs(entry: sc.ChannelCalibration | None, categories: Sequence[sc.Category], dtype: np.dtype) -> dict[str, object]:
    """The CF attributes of one channel's cALB entry and cATG categories (1.5; CF packed data, flags)."""
    dtype = np.dtype(dtype)
    out: dict[str, object] = {}
    if entry is not None:
        if entry.slope is not None:  # 1.5: physical = slope * v + offset (CF scale_factor, add_offset)
            out["scale_factor"], out["add_offset"] = entry.slope, entry.offset
        if entry.unit is not None:
            out["units"] = entry.unit
        if entry.quantity is not None:
            out["standard_name" if entry.cf_standard_name else "long_name"] = entry.quantity
        # 1.5: "Nodata values and the valid range are stored values, as CF _FillValue/valid_range ... are"
        for name in ("valid_min", "valid_max"):
            if getattr(entry, name) is not None:
                out[name] = getattr(entry, name)
        fills = [v for v in entry.nodata if _representable(v, dtype)]
        if fills:
            out["_FillValue"] = dtype.type(fills[0])
        if len(fills) > 1:
            out["missing_value"] = np.array(fills[1:], dtype=dtype)
        if entry.nan_missing:
            out["nan_missing"] = 1
        if entry.mask_plane is not None:
            out["mask_plane"] = entry.mask_plane
    if categories:  # 1.5 cATG: CF flag_values / flag_meanings
        out["flag_values"] = np.array([c.value for c in categories], dtype=dtype)
        out["flag_meanings"] = " ".join((c.name or f"category_{c.value}").replace(" ", "_") for c in categories)
        if any(c.color is not None for c in categories):
            out["flag_colors"] = tuple(_hex(c.color) for c in categories)
    return out


def _representable(value: float, dtype: np.dtype) -> bool:
    """Whether a stored sample of ``dtype`` can equal ``value`` (an integer in range for integer dtypes)."""
    if dtype.kind == "f":
        return True
    info = np.iinfo(dtype)
    return float(value).is_integer() and info.min <= value <= info.max


def _hex(color: tuple[int, ...] | None) -> str:
    """An RGBA color as ``#rrggbbaa`` (16-bit components as ``#rrrrggggbbbbaaaa``); "" for none."""
    if color is None:
        return ""
    width = 4 if max(color) > 0xFF else 2
    return "#" + "".join(f"{v:0{width}x}" for v in color)


def changes_values(entry: sc.ChannelCalibration) -> bool:
    """Whether cALB makes physical values differ from stored ones: a slope and offset, or missing samples."""
    bounds = (entry.valid_min, entry.valid_max)
    return not entry.is_identity or bool(entry.nodata) or entry.nan_missing or bounds != (None, None)


def physical_values(stored: np.ndarray, entry: sc.ChannelCalibration) -> np.ndarray:
    """Binary64 physical values of one channel's stored samples; NaN where the sample is missing (1.5).

    The mask plane is not applied: it lives in a plane set, which this package does not read.
    """
    v = np.asarray(stored, dtype=np.float64)
    missing = np.zeros(v.shape, dtype=bool)
    if entry.nan_missing:
        missing |= np.isnan(v)  # 1.5: "when it is NaN and bit 6 is set"
    for nodata in entry.nodata:
        missing |= v == nodata  # 1.5: "binary64 equality, so 0 matches -0"
    with np.errstate(invalid="ignore"):
        if entry.valid_min is not None:
            missing |= v < entry.valid_min  # 1.5: "not NaN and lies below valid_min"
        if entry.valid_max is not None:
            missing |= v > entry.valid_max
    if entry.slope is not None:
        v = v * entry.slope + entry.offset  # 1.5: "a binary64 multiply followed by a binary64 add"
    return np.where(missing, np.nan, v)


def calibration(attrs: Mapping[str, object]) -> sc.ChannelCalibration | None:
    """One cALB entry from CF attributes (the inverse of ``cf_attrs``), or None when they hold none."""
    slope, offset = attrs.get("scale_factor"), attrs.get("add_offset")
    linear = slope is not None or offset is not None
    nodata = [*np.ravel(attrs.get("_FillValue", [])), *np.ravel(attrs.get("missing_value", []))]
    name = attrs.get("standard_name", attrs.get("long_name"))
    entry = sc.ChannelCalibration(
        float(1.0 if slope is None else slope) if linear else None,  # type: ignore[arg-type]
        float(0.0 if offset is None else offset) if linear else None,  # type: ignore[arg-type]
        _text(attrs.get("units")),
        _text(name),
        "standard_name" in attrs,
        _number(attrs.get("valid_min")),
        _number(attrs.get("valid_max")),
        bool(attrs.get("nan_missing", False)),
        int(attrs["mask_plane"]) if "mask_plane" in attrs else None,  # type: ignore[call-overload]
        tuple(float(v) for v in nodata if not math.isnan(float(v))),
    )
    return None if entry.flags == 0 and not entry.nodata else entry


def categories(attrs: Mapping[str, object]) -> tuple[sc.Category, ...]:
    """One channel's cATG categories from CF ``flag_values`` / ``flag_meanings`` (and ``flag_colors``)."""
    if "flag_values" not in attrs:
        return ()
    values = [int(v) for v in np.ravel(attrs["flag_values"])]  # type: ignore[arg-type]
    names = str(attrs.get("flag_meanings", "")).split()
    colors = list(attrs.get("flag_colors", ())) or [""] * len(values)  # type: ignore[call-overload]
    if len(names) != len(values) or len(colors) != len(values):
        raise ValueError("flag_values, flag_meanings and flag_colors need one entry per category")
    pairs = sorted(zip(values, names, colors))
    return tuple(sc.Category(v, _color(c), n) for v, n, c in pairs)


def _color(text: str) -> tuple[int, int, int, int] | None:
    """``#rrggbbaa`` or ``#rrrrggggbbbbaaaa`` back to four components."""
    if not text:
        return None
    digits = text.lstrip("#")
    width = len(digits) // 4
    return tuple(int(digits[i * width:(i + 1) * width], 16) for i in range(4))  # type: ignore[return-value]


def _text(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def _number(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


# --- writing ----------------------------------------------------------------------------------


def default(shape: Sequence[int], frames: bool, channels: bool, kind: str = "pages") -> Physical:
    """The description a file without science records gets for an array of ``shape``."""
    names = [("frames", FRAME_NAMES[kind], "time" if kind == "animation" else "other")] if frames else []
    names += [("rows", "y", "space"), ("columns", "x", "space")]
    names += [("channels", "c", "channel")] if channels else []
    dims = tuple(Dim(name, binding, size, kind=k) for (binding, name, k), size in zip(names, shape))
    count = shape[-1] if channels else 1
    return Physical(dims, tuple(Channel(f"c{i}") for i in range(count)))


FRAME_TIME_NAMES = ("t", "time", "frame")


def bindings(ndim: int, channels: bool) -> tuple[str, ...]:
    """The aXES binding of each array dim, by position: (frames,) rows, columns (, channels)."""
    raster = ndim - channels
    if raster not in (2, 3):
        raise ValueError(f"an IMI file holds (frames,) rows, columns (, channels): {ndim} dims do not fit")
    return ("frames",) * (raster == 3) + RASTER + ("channels",) * channels


def new_dim(name: str, binding: str, size: int, scale: float = 1.0, origin: float = 0.0, unit: str = "",
            kind: str | None = None, axis_type: str = "") -> Dim:
    """A dim for writing; without a kind, frames named like time are time (an animation), other frames pages."""
    if kind is None:
        defaults = {"frames": "time" if name.lower() in FRAME_TIME_NAMES else "other", "channels": "channel"}
        kind = defaults.get(binding, "space")
    return Dim(name, binding, size, scale, origin, unit, kind, axis_type)


def needs_axes(p: Physical) -> bool:
    """Whether the description says more than a file without aXES would (names, transforms, units)."""
    if p.has_axes or p.coordinates or p.affine is not None:
        return True
    if any(d.size == 1 and d.binding in ("frames", "channels") for d in p.dims):
        return True  # a file keeps a single frame's or channel's dim only when aXES binds it
    kind = "animation" if (frames := p.dim("frames")) is not None and frames.kind == "time" else "pages"
    plain = default([d.size for d in p.dims], frames is not None, p.dim("channels") is not None, kind)
    return any(replace(d, kind=e.kind) != e for d, e in zip(p.dims, plain.dims))


def science(p: Physical) -> dict[str, object]:
    """The ``science=`` records of ``write`` for a description: aXES and cORD, cALB, cATG (1.5)."""
    out: dict[str, object] = {}
    if needs_axes(p):
        axes, coords = _axes(p)
        out["axes"] = axes
        if coords:
            out["coordinates"] = sc.Coordinates(coords)
    entries = [calibration(c.attrs) for c in p.channels]
    if any(e is not None for e in entries):
        out["calibration"] = sc.Calibration(tuple(e or sc.ChannelCalibration() for e in entries))
    cats = [categories(c.attrs) for c in p.channels]
    if any(cats):
        wide = any(max(cat.color) > 0xFF for cs in cats for cat in cs if cat.color is not None)
        out["categories"] = sc.Categories(tuple(cats), wide)
    return out


def _axes(p: Physical) -> tuple[sc.Axes, tuple[int, ...]]:
    """The aXES record (level 0 only) and the cORD values of a description."""
    rows: dict[str, tuple[sc.Axis, float, float]] = {}
    for d in p.dims:
        # 1.5 bit 0: the translation is the edge of pixel 0 when pixels are areas
        edge = 0.5 * d.scale if p.pixel_is_area and d.binding in RASTER else 0.0
        axis = sc.Axis(d.name, KINDS.index(d.kind), BINDINGS.index(d.binding), d.unit, d.type if d.kind == "other" else "")
        rows[d.name] = (axis, d.scale, d.origin - edge)
    for c in p.coordinates:
        axis = sc.Axis(c.name, KINDS.index(c.kind), sc.BIND_COORDINATE, c.unit, c.type if c.kind == "other" else "")
        rows[c.name] = (axis, c.scale, c.translation)
    order = [n for n in p.axis_order if n in rows] + [n for n in rows if n not in p.axis_order]
    if p.affine is not None and order[: len(p.axis_order)] != list(p.axis_order):
        raise ValueError(f"the affine is over axes {p.axis_order}, the description has {tuple(rows)}")
    picked = [rows[n] for n in order]
    level = sc.AxisLevel(tuple(s for _, s, _ in picked), tuple(t for _, _, t in picked))
    levels = (level,) if p.scaled else ()  # 1.5: u = scale * i + translation, level 0 the image
    axes = sc.Axes(tuple(a for a, _, _ in picked), levels, p.pixel_is_area, p.method, p.affine)
    coords = tuple(c.index for n in order for c in p.coordinates if c.name == n)  # 1.5: "in axis order"
    return axes, coords


def coordinate(name: str, value: float, attrs: Mapping[str, object]) -> Coordinate:
    """A coordinate-bound axis at physical ``value``; ``attrs`` may give its scale and translation."""
    scale, translation = float(attrs.get("scale", 1.0)), float(attrs.get("translation", 0.0))  # type: ignore[arg-type]
    index = (value - translation) / scale
    if not float(index).is_integer():  # cORD holds an integer index: put the value in the translation
        index, translation = 0, value
    kind, axis_type = str(attrs.get("axis_kind", "space")), str(attrs.get("axis_type", ""))
    return Coordinate(name, int(index), scale, translation, str(attrs.get("units", "")), kind, axis_type)


def linear(values: np.ndarray, what: str) -> tuple[float, float]:
    """``(scale, origin)`` of evenly spaced positions (aXES holds one scale and translation per axis)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return 1.0, float(values[0]) if values.size else 0.0
    scale = float(values[1] - values[0])
    if scale == 0 or not np.allclose(values, values[0] + scale * np.arange(values.size), rtol=1e-9, atol=0):
        raise ValueError(f"the coordinates of {what!r} are not evenly spaced: aXES holds a scale and a translation")
    return scale, float(values[0])


def write(path: str, data: np.ndarray, p: Physical, **options: object) -> None:
    """Write stored samples shaped as ``p.dims`` with the description's records; frames as pages or an animation."""
    import imij_plugins

    if p.dim("channels") is None:
        data = data[..., np.newaxis]
    opts: dict[str, object] = {**options}
    records = science(p)
    if records:
        opts["science"] = records
    frames = p.dim("frames")
    if frames is None:
        imij_plugins.write(path, data, **opts)  # type: ignore[arg-type]
        return
    opts.setdefault("kind", "animation" if frames.kind == "time" else "pages")
    imij_plugins.write(path, list(data), **opts)  # type: ignore[arg-type]


__all__ = [
    "BINDINGS",
    "KINDS",
    "Channel",
    "Coordinate",
    "Dim",
    "Physical",
    "calibration",
    "categories",
    "bindings",
    "cf_attrs",
    "changes_values",
    "coordinate",
    "default",
    "describe",
    "linear",
    "new_dim",
    "physical_values",
    "science",
    "science_of",
    "write",
]
