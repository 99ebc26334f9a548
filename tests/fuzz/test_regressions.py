"""Inputs behind the fuzzing campaign's findings (fuzz/README.md), read through the public API.

The C findings were undefined pointer arithmetic that UBSan reports on every such file (a row
above or a padding column reached through an index that wrapped below zero): each file decodes
to its known pixels, and under the sanitized build (fuzz/run-tests-sanitized.sh) without a report.
The damaged files read by path must raise the reader's errors, never Python's BufferError.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import imij_plugins

DATA = Path(__file__).resolve().parent.parent / "data" / "regressions"

# file -> the sha256 prefix of each frame's decoded bytes
EXPECTED = {
    # csrc/entropy.c predict: N, NW, NE and RN read at at - R (near-lossless rows, predictors 8/9)
    "near_lossless_rows.imi": ["ff73fb97edcc04cd"],
    "inter_predictors.imi": ["ace5a80db58425be", "ba9b0c9761c6a84a", "52a2f6d06f2a8dcc"],
    # csrc/bilevel.c template phase 0: the left padding at column c - 1, c - 2 of a size_t c = 0
    "template_left_edge.imi": ["d49ee05227a85927"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_regression_file_decodes_to_its_pixels(name: str) -> None:
    with imij_plugins.open(DATA / name) as f:
        digests = [hashlib.sha256(f.read(i).tobytes()).hexdigest()[:16] for i in range(f.n_frames)]
    assert digests == EXPECTED[name]


# Damaged files read by path (memory-mapped): the reader's error, never Python's BufferError from
# unmapping while an error's traceback still holds views of the file (found by the atheris
# campaign's timeouts, 2026-12-06: the template units' kernel error, then a bit-smart plane's)
DAMAGED = {
    "damaged_template_units.imi": 3,  # three template-stripe units whose streams run short
    "damaged_bitsmart_plane.imi": None,  # a bit-smart plane of an unknown kind (and a bad chunk tag)
}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_file_read_by_path_raises_the_readers_error(name: str) -> None:
    from imij_plugins.errors import ImijError

    with pytest.raises(ImijError):
        with imij_plugins.open(DATA / name) as f:
            for i in range(f.n_frames):
                f.read(i)
    with imij_plugins.open(DATA / name, partial=True) as f:
        for i in range(f.n_frames):
            f.read(i)
        failures = f.failures()  # each holds its error and traceback past close
    assert f.closed and failures and all(isinstance(x.error, ImijError) for x in failures)
    if DAMAGED[name] is not None:
        assert [x.units for x in failures] == [range(i, i + 1) for i in range(DAMAGED[name])]
