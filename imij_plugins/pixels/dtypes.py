"""Sample types and channel layouts as numpy dtypes and array shapes (1.0)."""

from __future__ import annotations

import numpy as np

from imij_plugins.registry.samples import LAYOUT_BY_NAME, LAYOUTS, SAMPLE_TYPES, SampleType

_SAMPLE_BY_DTYPE = {np.dtype(s.dtype): s for s in SAMPLE_TYPES.values()}
_DTYPES = {code: np.dtype(s.dtype) for code, s in SAMPLE_TYPES.items()}  # made once: every read asks
_DEFAULT_LAYOUT = {1: "Gray", 2: "GrayAlpha", 3: "RGB", 4: "RGBA"}


def dtype_of(sample: int) -> np.dtype:
    """The numpy dtype that holds header sample type ``sample`` bit for bit (little-endian)."""
    return _DTYPES[sample]


def sample_code(dtype: np.dtype) -> int:
    """The header sample type for an array dtype; bool arrays store as u8 0/1."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return 0
    found: SampleType | None = _SAMPLE_BY_DTYPE.get(dt.newbyteorder("<") if dt.byteorder == ">" else dt)
    if found is None:
        names = ", ".join(s.name for s in SAMPLE_TYPES.values())
        raise TypeError(f"IMI cannot store {dt} samples (it stores {names})")
    return found.code


def layout_code(channels: int, layout: str | int | None = None) -> int:
    """The header channel layout for an array of ``channels`` channels (default by count)."""
    if layout is None:
        if channels not in _DEFAULT_LAYOUT:
            raise ValueError(f"no default channel layout for {channels} channels; pass layout=")
        return LAYOUT_BY_NAME[_DEFAULT_LAYOUT[channels]].code
    code = find_layout(layout)
    if LAYOUTS[code].channels != channels:
        raise ValueError(f"layout {LAYOUTS[code].name} has {LAYOUTS[code].channels} channels, the array {channels}")
    return code


def find_layout(layout: str | int) -> int:
    """The 1.0 channel layout code of a layout name (any case) or code; ValueError for others."""
    if isinstance(layout, str):
        key = next((name for name in LAYOUT_BY_NAME if name.lower() == layout.lower()), None)
        if key is None:
            raise ValueError(f"unknown channel layout {layout!r} (known: {', '.join(LAYOUT_BY_NAME)})")
        return LAYOUT_BY_NAME[key].code
    if isinstance(layout, bool) or not isinstance(layout, (int, np.integer)) or int(layout) not in LAYOUTS:
        raise ValueError(f"unknown channel layout code {layout!r}")
    return int(layout)


def as_image_array(array: np.ndarray) -> np.ndarray:
    """A C-contiguous little-endian (H, W, C) view or copy of a (H, W) or (H, W, C) array."""
    a = np.asarray(array)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[0] < 1 or a.shape[1] < 1 or not 1 <= a.shape[2] <= 4:
        raise ValueError(f"expected an (H, W) or (H, W, C) array with 1-4 channels, got shape {a.shape}")
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return np.ascontiguousarray(a)
