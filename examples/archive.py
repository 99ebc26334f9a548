"""An IMIJ-Set archive: append images in batches, look them up, query by size and filename."""

import sys
import tempfile
from pathlib import Path

import numpy as np

import imij_plugins
from imij_plugins import imijset


def main(out_dir: str) -> None:
    path = Path(out_dir) / "tiles.imijset"
    rng = np.random.default_rng(0)
    with imijset.open(path, "w") as archive:  # commits on a clean exit
        for key in range(20):
            tile = rng.integers(0, 255, (32 + key % 3 * 32, 48, 3), dtype=np.uint8)
            archive.append(key, imij_plugins.encode(tile), filename=f"tile-{key:03}.imi")
    with imijset.open(path) as archive:
        print(f"{path.name}: {len(list(archive.keys()))} entries")
        tall = list(archive.query(height=(64, 96)))
        print("entries 64-96 rows tall:", len(tall))
        assert archive.read(7).shape[:2] == (64, 48)
        assert len(list(archive.query(filename="tile-007.imi"))) == 1


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
