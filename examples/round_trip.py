"""Write a 16-bit image as IMI, read it back bit-exact, and read one region."""

import sys
import tempfile
from pathlib import Path

import numpy as np

import imij_plugins


def main(out_dir: str) -> None:
    image = (np.arange(480 * 640, dtype=np.uint32).reshape(480, 640) % 4096).astype(np.uint16)
    path = Path(out_dir) / "depth.imi"
    imij_plugins.write(path, image, checksum=True)
    with imij_plugins.open(path) as f:
        print(f"{path.name}: {f.width}x{f.height} {f.dtype} {f.layout}, {path.stat().st_size} bytes, features {f.features}")
        assert np.array_equal(f.read()[..., 0], image)
        tile = f.read(region=(100, 200, 32, 16))
        assert np.array_equal(tile[..., 0], image[200:216, 100:132])
    print("round trip exact")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
