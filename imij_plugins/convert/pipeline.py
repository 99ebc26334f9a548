"""The per-file job: read, write, prove and place one output, reported as a ``Record``.

``convert_file`` never raises for a bad input or output: it returns a failed record, so one
file cannot stop a batch. Only ``KeyboardInterrupt`` (and other ``BaseException``) propagate,
after the temporary file is removed.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np

from imij_plugins import EncodeOptions
from imij_plugins.container.writer import write_atomic
from imij_plugins.convert.sinks import encode_output, format_of
from imij_plugins.convert.sources import Decoded, read_source
from imij_plugins.pixels.dtypes import as_image_array

Status = Literal["converted", "skipped", "failed"]


@dataclass(frozen=True)
class ConvertOptions:
    """How each file converts: output format (None: from the output's extension), IMI coding,
    the decode-and-compare proof, and what to do with an output that exists already."""

    to: str | None = None
    encode: EncodeOptions = field(default_factory=EncodeOptions)
    verify: bool = True
    overwrite: bool = False
    skip_existing: bool = False


@dataclass(frozen=True)
class Record:
    """What became of one input: status, why (skipped or failed), sizes and time."""

    input: str
    output: str
    status: Status
    reason: str = ""
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0

    @property
    def ratio(self) -> float | None:
        """Output size over input size (below 1: smaller), for a converted file."""
        return self.bytes_out / self.bytes_in if self.status == "converted" and self.bytes_in else None

    def as_json(self) -> dict[str, object]:
        """The record as one JSON object (the fields and the ratio)."""
        return {**asdict(self), "ratio": self.ratio}


def convert_file(src: str | os.PathLike[str], dst: str | os.PathLike[str], options: ConvertOptions) -> Record:
    """Convert ``src`` to ``dst``: never over an existing file unless ``overwrite``, the output
    proved by decoding it again (unless ``verify`` is off) and written through a temporary file."""
    start = time.perf_counter()
    src, dst = os.fspath(src), os.fspath(dst)

    def record(status: Status, reason: str = "", bytes_in: int = 0, bytes_out: int = 0) -> Record:
        return Record(src, dst, status, reason, bytes_in, bytes_out, time.perf_counter() - start)

    if os.path.lexists(dst) and not options.overwrite:
        if options.skip_existing:
            return record("skipped", "output exists")
        return record("failed", "output exists (pass --overwrite to replace it or --skip-existing to keep it)")
    try:
        bytes_in = os.path.getsize(src)
        fmt = options.to or format_of(dst)
        if fmt is None:
            raise ValueError(f"no output format: {dst} has no known extension and no --to was given")
        decoded = read_source(src)
        data = encode_output(decoded, fmt, options.encode)
        if options.verify:
            problem = difference(decoded, read_source(data), options.encode.max_error if fmt == "imi" else 0)
            if problem is not None:
                return record("failed", f"verify: {problem}", bytes_in)
        os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
        write_atomic(dst, data)
    except Exception as exc:  # one bad file is a failed record; the batch goes on
        return record("failed", f"{type(exc).__name__}: {exc}")
    return record("converted", "", bytes_in, len(data))


def difference(expected: Decoded, got: Decoded, bound: float = 0) -> str | None:
    """How ``got`` differs from ``expected`` in pixels, or None: same count, shapes and dtypes and
    every sample bit for bit, or within ``bound`` for the integer types IMI bounds (2.6)."""
    if len(got.frames) != len(expected.frames):
        return f"{len(got.frames)} images read back, {len(expected.frames)} written"
    for index, (want, have) in enumerate(zip(expected.frames, got.frames)):
        a, b = as_image_array(want.array), as_image_array(have.array)
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"image {index} reads back as {b.shape} {b.dtype}, not {a.shape} {a.dtype}"
        if bound and a.dtype.kind in "ui" and a.dtype.itemsize <= 4:
            worst = int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())
            if worst > bound:
                return f"image {index}: a sample is {worst} off, over max_error {bound}"
            continue
        bits = np.dtype(f"<u{a.dtype.itemsize}")
        differing = int(np.count_nonzero(a.view(bits) != b.view(bits)))
        if differing:
            return f"image {index}: {differing} samples differ"
    return None
