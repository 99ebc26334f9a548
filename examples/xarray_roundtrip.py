"""An IMI file with axes and calibration through xarray and back: python examples/xarray_roundtrip.py [OUT_DIR]."""

import pathlib
import sys

import numpy as np
import xarray as xr

from imij_plugins.xarray import to_imi

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
rng = np.random.default_rng(0)
stack = xr.DataArray(
    rng.integers(1, 4000, (3, 64, 80), dtype=np.uint16),
    dims=("time", "y", "x"),
    coords={
        "time": ("time", [0.0, 30.0, 60.0], {"units": "s"}),
        "y": ("y", 0.5 * np.arange(64), {"units": "micrometer"}),
        "x": ("x", 0.5 * np.arange(80), {"units": "micrometer"}),
        "z": ((), 12.0, {"units": "micrometer"}),
    },
    attrs={"scale_factor": 0.25, "add_offset": -10.0, "_FillValue": np.uint16(0), "valid_max": 3900.0,
           "units": "1", "long_name": "fluorescence"},
)
path = out / "stack.imi"
to_imi(stack, path)  # an animation: coordinates as aXES and cORD, CF attributes as cALB

with xr.open_dataarray(path, chunks={}) as back:  # lazy: dask chunks follow the file's stripes
    print(back)
    physical = back.isel(time=1, y=slice(10, 20)).compute()  # decodes only the stripes it overlaps
    expect = 0.25 * stack.isel(time=1, y=slice(10, 20)).values.astype(float) - 10.0
    expect[stack.isel(time=1, y=slice(10, 20)).values > 3900] = np.nan
    assert np.array_equal(physical.values, expect, equal_nan=True)
    for name in ("time", "y", "x", "z"):
        assert np.array_equal(back[name].values, stack[name].values) and back[name].attrs["units"] == stack[name].attrs["units"]
print(f"wrote {path} ({path.stat().st_size} bytes) and read it back with its coordinates and calibration")
