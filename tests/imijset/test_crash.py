"""Crash safety: every truncation and byte flip of the last batch yields exactly the previous
committed generation or a typed ImijError, never a partial batch and never another exception."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import imij_plugins.imijset as imijset
from imij_plugins.errors import ImijError

State = dict[int, tuple]


def state(arc: imijset.Archive) -> State:
    """Everything a reader sees: every live entry's bytes, summary and metadata."""
    return {k: (arc.get(k), e.summary, e.cicp, e.image_count, e.filename, tuple(e.attributes.items())) for k, e in arc.items()}


def build(path: Path, last_batch: Callable[[imijset.Archive], None], placement: str = "interleaved") -> tuple[int, State, State]:
    """Two generations; returns the first one's end and both states."""
    with imijset.open(path, "w", placement=placement) as arc:  # type: ignore[arg-type]
        for k in range(0, 40, 2):
            arc.append(k, b"first-%d" % k, filename=f"f{k}.bin" if k % 4 else None, attributes={"n": k})
        arc.append(50, np.full((3, 4, 3), 7, np.uint8))
    with imijset.open(path) as arc:
        first = state(arc)
    end = path.stat().st_size
    with imijset.open(path, "a", placement=placement) as arc:  # type: ignore[arg-type]
        last_batch(arc)
    with imijset.open(path) as arc:
        second = state(arc)
        assert arc.generation == 2
    return end, first, second


def small_batch(arc: imijset.Archive) -> None:
    for k in range(1, 41, 3):
        arc.append(k, b"second-%d" % k, filename="same-name.bin", attributes={"n": k, "t": "x"})
    arc.append(50, np.full((2, 2, 3), 9, np.uint8))  # replaces an image


def big_batch(arc: imijset.Archive) -> None:
    for k in range(100, 100 + 300):  # two leaves under a branch root
        arc.append(k, b"b%d" % k)


def check(path: Path, data: bytes, first: State, second: State, *, expect_previous: bool) -> str:
    """Open ``data``: it must read as generation 1 exactly, or fail with ImijError somewhere."""
    path.write_bytes(data)
    try:
        with imijset.open(path) as arc:
            if arc.generation == 1:
                assert state(arc) == first
                return "previous"
            assert not expect_previous, "a truncated batch was read as committed"
            seen = state(arc)
            arc.verify()
    except ImijError:
        assert not expect_previous
        return "error"
    raise AssertionError(f"damage in the last batch went unnoticed ({len(seen)} entries read)")


def test_small_batch_every_truncation_and_flip(tmp_path: Path) -> None:
    src = tmp_path / "src.imijset"
    end, first, second = build(src, small_batch)
    data = src.read_bytes()
    probe = tmp_path / "probe.imijset"
    for cut in range(end, len(data)):
        assert check(probe, data[:cut], first, second, expect_previous=True) == "previous"
    outcomes = set()
    for at in range(end, len(data)):
        flipped = bytearray(data)
        flipped[at] ^= 0x01 if at % 2 else 0xFF
        outcomes.add(check(probe, bytes(flipped), first, second, expect_previous=False))
    assert outcomes == {"previous", "error"}


@pytest.mark.parametrize("placement", ["interleaved", "tail"])
def test_multi_leaf_batch_truncations_and_page_flips(tmp_path: Path, placement: str) -> None:
    src = tmp_path / "src.imijset"
    end, first, second = build(src, big_batch, placement)
    data = src.read_bytes()
    probe = tmp_path / "probe.imijset"
    with imijset.open(src) as arc:
        seg = arc._snapshot.segments[1]
        pages = [(leaf.offset, len(leaf.buf)) for leaf, i in seg.walk() if i == 0]
        root = seg.footer
        pages.append((root.root_offset, root.root_length))
    cuts = set(range(end, len(data), 31)) | {o + d for o, n in pages for d in (0, 1, n - 1, n)} | set(range(len(data) - 90, len(data)))
    for cut in sorted(cuts):
        if cut < len(data):
            assert check(probe, data[:cut], first, second, expect_previous=True) == "previous"
    flips = {o + d for o, n in pages for d in [*range(16), *range(16, n, 41)]} | set(range(len(data) - 80, len(data)))
    flips |= set(range(end, end + 40))
    for at in sorted(flips):
        flipped = bytearray(data)
        flipped[at] ^= 0x10
        check(probe, bytes(flipped), first, second, expect_previous=False)


def test_damaged_last_batch_of_three(tmp_path: Path) -> None:
    """With three generations, damage to the third's footer reads the second exactly."""
    p = tmp_path / "three.imijset"
    with imijset.open(p, "w") as arc:
        arc.append(1, b"one")
        arc.commit()
        arc.append(2, b"two")
        arc.commit()
        arc.append(1, b"three")
    data = bytearray(p.read_bytes())
    data[-10] ^= 1
    p.write_bytes(bytes(data))
    with imijset.open(p) as arc:
        assert arc.generation == 2 and arc.get(1) == b"one" and arc.get(2) == b"two"
