"""The npe2 writer: one image layer as an IMI file, its scale, translation, units and axis labels as aXES."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from imij_plugins import physical

NAPARI_DEFAULT_LABEL = re.compile(r"axis -?\d+|-\d+")  # napari's names for unlabelled axes: "axis -1", "-1"


def write_image(path: str, data: Any, meta: dict[str, Any]) -> list[str]:
    """Write an image layer (2-d, 3-d stack as pages or an animation, RGB(A) with ``rgb``); return the path."""
    array = np.asarray(data[0] if meta.get("multiscale") else data)
    channels = bool(meta.get("rgb", False))
    spatial = array.ndim - channels
    binds = physical.bindings(array.ndim, channels)
    labels = list(meta.get("axis_labels") or ())[-spatial:] or [""] * spatial
    scale = list(meta.get("scale") or [1.0] * spatial)[-spatial:]
    translate = list(meta.get("translate") or [0.0] * spatial)[-spatial:]
    units = list(meta.get("units") or [""] * spatial)[-spatial:]
    dims = []
    for i, binding in enumerate(binds[:spatial]):
        default = "frame" if binding == "frames" else physical.DEFAULT_NAMES[binding]
        label = str(labels[i]) if labels[i] and not NAPARI_DEFAULT_LABEL.fullmatch(str(labels[i])) else default
        unit = "" if str(units[i]) in ("", "pixel", "None") else str(units[i])
        dims.append(physical.new_dim(label, binding, array.shape[i], float(scale[i]), float(translate[i]), unit))
    if channels:
        dims.append(physical.new_dim("c", "channels", array.shape[-1]))
    stored = (meta.get("metadata") or {}).get("imij", {}).get("channels")
    attrs = stored if stored and len(stored) == (array.shape[-1] if channels else 1) else [{}] * (array.shape[-1] if channels else 1)
    p = physical.Physical(tuple(dims), tuple(physical.Channel(str(meta.get("name", "")), a) for a in attrs))
    physical.write(path, array, p)
    return [path]
