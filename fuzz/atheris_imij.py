"""The Python layer under atheris: every public entry point that reads file bytes.

Byte 0 of an input picks the target, the rest is the file: an IMI file through
``imij_plugins.open/read`` from bytes or from a path (frames, pages, regions, partial reads,
metadata), Pillow
(``Image.open`` + ``load``) and imageio (``imread``/``improps``), or an IMIJ-Set archive through
``imijset.open`` (``get``, ``query``, ``read``, ``verify``). Only the documented errors are expected:
``ImijError`` everywhere, and from Pillow its own ``OSError``, ``ValueError`` and
``DecompressionBombError`` (a warning is an error here: ``-W error`` would hide nothing else).
Anything else escapes and atheris reports it.

Run with kernels built with ``IMIJ_SANITIZE=1`` and the sanitizer runtime preloaded
(fuzz/README.md): ``python fuzz/atheris_imij.py CORPUS -atheris_runs=N``.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import warnings

import atheris

with atheris.instrument_imports(include=["imij_plugins"]):
    import imij_plugins
    import imij_plugins.imijset as imijset
    from imij_plugins.container.file import SIGNATURE
    from imij_plugins.errors import ImijError
    from imij_plugins.reader import Limits

import imageio.v3 as iio
from PIL import Image

# a declared size above these is TooLarge / Pillow's bomb error, never an allocation; kept small so
# that mutated headers declaring big images cost milliseconds, not seconds, under ASan
LIMITS = Limits(max_image_bytes=4 << 20)
_TMP = tempfile.mkdtemp(prefix="imij-atheris-")
ARCHIVE, FILE = os.path.join(_TMP, "fuzz.imijset"), os.path.join(_TMP, "fuzz.imi")
Image.MAX_IMAGE_PIXELS = 1 << 20  # bombs are Pillow's documented error, not a finding


def _core(data: bytes, by_path: bool) -> None:
    """open / read: every frame and page, a region, a partial read, the metadata; from the bytes or
    from a file (memory-mapped: closing it must not trip over views an error still holds)."""
    if by_path:
        with open(FILE, "wb") as fh:
            fh.write(data)
    source = FILE if by_path else data
    with imij_plugins.open(source, limits=LIMITS) as f:
        f.metadata  # every metadata chunk parsed
        for i in range(min(f.n_frames, 4)):
            info = f.image_info(i)
            f.read(i)
            if info.width > 1 and info.height > 1:
                f.read(i, region=(1, 1, info.width // 2, info.height // 2))
        if f.kind == "pages" and f.n_frames:
            f.page(0).read()
    with imij_plugins.open(source, partial=True, limits=LIMITS) as f:
        f.read()
        f.failures()


def _pillow(data: bytes) -> None:
    try:
        with Image.open(io.BytesIO(data), formats=["IMI"]) as im:
            im.load()
    except (OSError, ValueError, Image.DecompressionBombError):
        pass  # Pillow's documented errors (the core's are OSError subclasses there)


def _imageio(data: bytes) -> None:
    if not data.startswith(SIGNATURE):
        return  # the plugin refuses them (InitializationError, which imopen turns into OSError)
    iio.improps(data, plugin="IMI")
    iio.imread(data, plugin="IMI", index=0)


def _archive(data: bytes) -> None:
    with open(ARCHIVE, "wb") as fh:
        fh.write(data)
    with imijset.open(ARCHIVE) as arc:
        for key in list(arc.keys())[:4]:
            arc.get(key)
            arc.entry(key)
        arc.query(width=(0, 1 << 20))
        arc.verify()


TARGETS = (lambda d: _core(d, False), _pillow, _imageio, _archive, lambda d: _core(d, True))


def test_one(data: bytes) -> None:
    if not data:
        return
    target = TARGETS[data[0] % len(TARGETS)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            target(data[1:])
    except ImijError:
        pass


def main() -> None:
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
