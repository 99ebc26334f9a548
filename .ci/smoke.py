"""CI smoke run of an installed imij-plugins: C kernels loaded, a Pillow and an imageio round trip.

Run by .ci/smoke in a fresh venv of each supported Python; exits non-zero (an AssertionError or
the library's own error) when anything is off. Prints the versions it ran with.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import imageio
import imageio.v3 as iio
import numpy as np
import PIL
from PIL import Image

import imij_plugins


def pillow_round_trip(folder: Path) -> None:
    """An RGBA and a 16-bit gray image saved as .imi by Pillow and reopened bit-exact."""
    rgba = np.dstack(np.meshgrid(np.arange(40, dtype=np.uint8), np.arange(30, dtype=np.uint8)) * 2)
    gray16 = np.arange(30 * 40, dtype="<u2") * 53
    images = {"rgba": Image.frombytes("RGBA", (40, 30), rgba.tobytes()),
              "gray16": Image.frombytes("I;16", (40, 30), gray16.tobytes())}
    for name, image in images.items():
        path = folder / f"{name}.imi"
        image.save(path)
        with Image.open(path) as back:
            assert back.format == "IMI", back.format
            assert (back.mode, back.size) == (image.mode, image.size), (back.mode, back.size)
            assert back.tobytes() == image.tobytes(), f"Pillow {name} pixels differ"


def imageio_round_trip(folder: Path) -> None:
    """A uint16 and a float32 RGB array written and read back through imageio v3, bit-exact."""
    rng = np.random.default_rng(0)
    for name, array in (("u16", rng.integers(0, 65536, (33, 17), dtype=np.uint16)),
                        ("f32", rng.standard_normal((9, 11, 3)).astype(np.float32))):
        path = folder / f"{name}.imi"
        iio.imwrite(path, array)
        back = iio.imread(path)
        assert back.dtype == array.dtype and back.shape == array.shape, (back.dtype, back.shape)
        assert back.tobytes() == array.tobytes(), f"imageio {name} pixels differ"


def main() -> None:
    """Check the backend, run both round trips in a temporary folder, print what ran."""
    assert "site-packages" in imij_plugins.__file__, f"not the installed copy: {imij_plugins.__file__}"
    assert imij_plugins.backend == "c", f"backend is {imij_plugins.backend!r}, not the C kernels"
    with tempfile.TemporaryDirectory() as folder:
        pillow_round_trip(Path(folder))
        imageio_round_trip(Path(folder))
    print(f"smoke ok: Python {sys.version.split()[0]}, imij-plugins {imij_plugins.__version__} "
          f"({imij_plugins.backend}), Pillow {PIL.__version__}, numpy {np.__version__}, imageio {imageio.__version__}")


if __name__ == "__main__":
    main()
