"""Files declaring huge sizes fail typed (TooLarge or Corrupt) before any allocation they size.

Each file is read in a child process whose address space is capped at 1 GiB
(``resource.setrlimit(RLIMIT_AS)``): an allocation sized by the declared value would end in
MemoryError or a crash, which the child reports as a failure. Under a sanitizer runtime
(fuzz/run-tests-sanitized.sh preloads ASan, which reserves terabytes of shadow) the cap is left off.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import warnings
from pathlib import Path

import builders as b
import numpy as np
import pytest
from PIL import Image
from pillow.helper import with_header

import imij_plugins

CAP = 1 << 30
CHILD = """
import os, resource, sys
if "asan" not in os.environ.get("LD_PRELOAD", ""):
    resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
import imij_plugins
data = open(sys.argv[1], "rb").read()
try:
    with imij_plugins.open(data) as f:
        for i in range(min(f.n_frames, 3)):
            f.read(i)
        f.metadata
    print("read")
except imij_plugins.ImijError as e:
    print(type(e).__name__)
"""

PAYLOAD = b.quick_head(2) + b.unit(b.raw(bytes(4)))
DATA = b.chunk(b"DATA", PAYLOAD)


def _anim(frames: int) -> bytes:
    """aNIM (1.3): kind 1, loop 0, ``frames`` frames of 1/10 s."""
    return b.chunk(b"aNIM", bytes([1]) + b.varint(0) + b.varint(frames) + b.varint(1) + b.varint(10))


def _entropy_file() -> bytes:
    return imij_plugins.encode(np.arange(48, dtype=np.uint8).reshape(6, 8), stripe_rows=2)


FORGED = {
    # header width and height (1.0) of 2^32 - 1: 2^64 pixels over a 4-byte payload
    "dimensions": b.imi(b.header(2**32 - 1, 2**32 - 1), DATA),
    # 2^40 rows of one-row stripes: 2^40 units declared by the geometry (2, 2.3)
    "unit_count": b.imi(b.header(1, 2**40), b.chunk(b"DATA", b.quick_head(1) + b.unit(b.raw(b"\x00")))),
    # aNIM frame count 2^60 (1.3)
    "frame_count": b.imi(b.header(2, 2), _anim(2**60), DATA),
    # a DATA chunk declaring 2^62 bytes (1.1)
    "chunk_length": b.imi(b.header(2, 2), b"DATA" + b.varint(2**62) + PAYLOAD),
    # a hint record (2.7) declaring a span of 2^50 bytes for the only unit
    "unit_span": b.imi(b.header(2, 2), b.chunk(b"DATA", b.quick_head(2, records=b.hint([2**50])) + b.unit(b.raw(bytes(4))))),
    # an entropy-coded image (models, 3.3) whose header claims 100000 x 100000 pixels
    "entropy_dimensions": with_header(_entropy_file(), width=100_000, height=100_000),
}


@pytest.mark.parametrize("name", sorted(FORGED))
def test_forged_sizes_fail_typed_under_a_memory_cap(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.imi"
    path.write_bytes(FORGED[name])
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", CHILD.format(cap=CAP), str(path)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() in ("TooLarge", "Corrupt"), (run.stdout, run.stderr[-2000:])


def test_the_cap_catches_a_real_allocation(tmp_path: Path) -> None:
    """The child's cap is real: a 2 GiB array fails there (so a passing forged file allocated less)."""
    code = CHILD.format(cap=CAP).replace("import imij_plugins\n", "import numpy\nnumpy.ones(1 << 31, numpy.uint8)\n", 1)
    run = subprocess.run([sys.executable, "-c", code, os.devnull], capture_output=True, text=True, timeout=120)
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("no cap under a sanitizer runtime")
    assert run.returncode != 0 and "MemoryError" in run.stderr


def test_pillows_bomb_check_applies_to_imi(monkeypatch: pytest.MonkeyPatch) -> None:
    """Image.MAX_IMAGE_PIXELS: a warning above it, DecompressionBombError above twice it, as for
    any Pillow format, from the header alone."""
    data = with_header(imij_plugins.encode(np.zeros((2, 2, 3), np.uint8)), width=300, height=200)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 40_000)  # 60000 pixels: above, below twice
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        Image.open(io.BytesIO(data)).close()
    assert any(issubclass(w.category, Image.DecompressionBombWarning) for w in seen)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 29_000)  # 60000 pixels: above twice
    with pytest.raises(Image.DecompressionBombError):
        Image.open(io.BytesIO(data))
