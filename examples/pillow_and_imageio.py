"""Save and open IMI through Pillow and imageio: modes, metadata, animations, exact floats."""

import sys
import tempfile
from pathlib import Path

import imageio.v3 as iio
import numpy as np
from PIL import Image

import imij_plugins  # noqa: F401  # registers IMI with Pillow and imageio (neither reads entry points)


def main(out_dir: str) -> None:
    out = Path(out_dir)
    # Pillow: an RGB image with an ICC profile; metadata comes back in info
    im = Image.radial_gradient("L").resize((320, 240)).convert("RGB")
    im.save(out / "gradient.imi", icc_profile=b"fake icc", effort=7)
    with Image.open(out / "gradient.imi") as back:
        assert back.mode == "RGB" and back.info["icc_profile"] == b"fake icc"
        assert np.array_equal(np.asarray(back), np.asarray(im))
    # Pillow: an animation with per-frame durations (ms), then frame by frame
    frames = [im.rotate(angle) for angle in (0, 10, 20)]
    frames[0].save(out / "spin.imi", save_all=True, append_images=frames[1:], duration=[100, 80, 60], loop=0)
    with Image.open(out / "spin.imi") as anim:
        print(f"spin.imi: {anim.n_frames} frames, durations", [anim.seek(i) or anim.info["duration"] for i in range(anim.n_frames)])
    # imageio: float32 data, bit-exact, and a near-lossless 16-bit image within its bound
    field = np.random.default_rng(0).normal(size=(64, 96)).astype(np.float32)
    iio.imwrite(out / "field.imi", field)
    assert np.array_equal(iio.imread(out / "field.imi"), field)
    counts = np.random.default_rng(1).poisson(900, (128, 128)).astype(np.uint16)
    iio.imwrite(out / "counts.imi", counts, max_error=2)
    assert np.abs(iio.imread(out / "counts.imi").astype(int) - counts).max() <= 2
    print("counts.imi:", iio.improps(out / "counts.imi").shape, iio.immeta(out / "counts.imi")["features"])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
