"""The per-file job: read, write, prove and place one output, reported as a ``Record``.

``convert_file`` never raises for a bad input or output: it returns a failed record, so one
file cannot stop a batch. Only ``KeyboardInterrupt`` (and other ``BaseException``) propagate,
after the temporary file is removed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

import numpy as np

from imij_plugins import EncodeOptions
from imij_plugins.container.writer import write_atomic
from imij_plugins.convert.compression import DEFAULT_COMPRESSION
from imij_plugins.convert.sinks import EXTENSIONS, encode_output, format_of, strip_extension
from imij_plugins.convert.sources import Decoded, Input, read_source
from imij_plugins.pixels.dtypes import as_image_array

Status = Literal["converted", "skipped", "failed"]


@dataclass(frozen=True)
class ConvertOptions:
    """How each file converts: output format (None: from the output's extension), IMI coding,
    the decode-and-compare proof, what to do with an output that exists already, the threads
    each IMI read and write may use (None: all cores; the runner gives 1 to each of several
    worker processes) and the compression of TIFF outputs (``compression.TIFF_COMPRESSIONS``)."""

    to: str | None = None
    encode: EncodeOptions = field(default_factory=EncodeOptions)
    verify: bool = True
    overwrite: bool = False
    skip_existing: bool = False
    threads: int | None = None
    compression: str = DEFAULT_COMPRESSION


@dataclass(frozen=True)
class Record:
    """What became of one input: status, why (skipped or failed), sizes and time; ``parts`` lists
    the files written when a hyperstack became several IMI files (then ``output`` is not written);
    ``notes`` what the input holds that the output does not carry; ``warnings`` what the reading
    and writing libraries warned about ("Category: message")."""

    input: str
    output: str
    status: Status
    reason: str = ""
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    parts: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def ratio(self) -> float | None:
        """Output size over input size (below 1: smaller), for a converted file."""
        return self.bytes_out / self.bytes_in if self.status == "converted" and self.bytes_in else None

    def as_json(self) -> dict[str, object]:
        """The record as one JSON object (the fields and the ratio)."""
        return {**asdict(self), "ratio": self.ratio}


def convert_file(src: str | os.PathLike[str], dst: str | os.PathLike[str], options: ConvertOptions) -> Record:
    """Convert ``src`` to ``dst``: never over an existing file unless ``overwrite``, each output
    proved by decoding it again (unless ``verify`` is off) and written through a temporary file.
    Library warnings (Python's and tifffile's log) go into the record, not to stderr."""
    with _collected_warnings() as caught:
        record = _convert(os.fspath(src), os.fspath(dst), options)
    return replace(record, warnings=tuple(caught)) if caught else record


def _convert(src: str, dst: str, options: ConvertOptions) -> Record:
    start = time.perf_counter()
    bytes_in = 0
    notes: tuple[str, ...] = ()

    def record(status: Status, reason: str = "", bytes_out: int = 0, parts: tuple[str, ...] = ()) -> Record:
        return Record(src, dst, status, reason, bytes_in, bytes_out, time.perf_counter() - start, parts, notes)

    def existing(path: str) -> Record | None:
        if not os.path.lexists(path) or options.overwrite:
            return None
        if options.skip_existing:
            return record("skipped", "output exists")
        return record("failed", "output exists (pass --overwrite to replace it or --skip-existing to keep it)")

    found = existing(dst)
    if found is not None:
        return found
    try:
        bytes_in = os.path.getsize(src)
        fmt = options.to or format_of(dst)
        if fmt is None:
            raise ValueError(f"no output format: {dst} has no known extension and no --to was given")
        decoded = read_source(src, options.threads)
        notes = decoded.notes
        outputs = []
        for path, data in encoded_parts(decoded, dst, fmt, options):
            found = existing(path) if path != dst else None
            if found is not None:
                return found
            outputs.append((path, data))
        os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
        for path, data in outputs:
            write_atomic(path, data)
    except VerifyFailed as exc:
        return record("failed", str(exc))
    except Exception as exc:  # one bad file is a failed record; the batch goes on
        return record("failed", f"{type(exc).__name__}: {exc}")
    parts = tuple(path for path, _ in outputs) if len(outputs) > 1 else ()
    return record("converted", "", sum(len(data) for _, data in outputs), parts)


@contextlib.contextmanager
def _collected_warnings() -> Iterator[list[str]]:
    """Python warnings and tifffile's log records of the block, as "Category: message" lines."""
    caught: list[str] = []

    class Collect(logging.Handler):
        def emit(self, entry: logging.LogRecord) -> None:
            caught.append(f"tifffile: {entry.getMessage()}")

    logger = logging.getLogger("tifffile")
    handler, propagate = Collect(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with warnings.catch_warnings(record=True) as found:
            warnings.simplefilter("always")
            yield caught
        caught[:0] = [f"{w.category.__name__}: {w.message}" for w in found]
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class VerifyFailed(ValueError):
    """An output that does not decode to its input."""


def encoded_outputs(src: Input, dst: str, fmt: str, options: ConvertOptions) -> Iterator[tuple[str, bytes]]:
    """Each output of ``src`` (a path or a whole file's bytes) as (path beside ``dst``, file bytes),
    proved by decoding it again unless ``verify`` is off (``VerifyFailed`` when it differs)."""
    return encoded_parts(read_source(src, options.threads), dst, fmt, options)


def encoded_parts(decoded: Decoded, dst: str, fmt: str, options: ConvertOptions) -> Iterator[tuple[str, bytes]]:
    """``encoded_outputs`` of an input already decoded."""
    encode = options.encode if options.threads is None else options.encode.replace(threads=options.threads)
    for path, part in _parts(decoded, dst, fmt):
        data = encode_output(part, fmt, encode, options.compression)
        if options.verify:
            problem = difference(part, read_source(data, options.threads), options.encode.max_error if fmt == "imi" else 0)
            if problem is not None:
                raise VerifyFailed(f"verify: {problem}")
        yield path, data


def _parts(decoded: Decoded, dst: str, fmt: str) -> Iterator[tuple[str, Decoded]]:
    """(output path, images) for each output: one, or for a hyperstack that varies along several
    page dimensions one IMI file per index of the outer ones (``dst``'s name plus ``_t0003``...)."""
    if fmt != "imi" or decoded.stack is None:
        yield dst, decoded
        return
    for suffix, pages, stack in decoded.stack.parts():
        if not suffix:
            yield dst, replace(decoded, stack=stack)
            continue
        frames = tuple(decoded.frames[i] for i in pages)
        yield strip_extension(dst) + suffix + EXTENSIONS[fmt], replace(decoded, frames=frames, kind="pages", stack=stack)


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
