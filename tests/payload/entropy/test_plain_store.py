"""Section 4 step 4 in the kernel (csrc/entropy.c imij_entropy_store): the same samples as the
Python reference, over random syntax that reaches Shift and Offset maps, tabulated maps of narrow
slots, signed and float words and Const channels, into whole arrays and into rectangles of a
larger one."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.data import read_data
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.head import read_lossless_head
from imij_plugins.wire.cursor import Cursor

from .gen import header_of, random_case
from .syntax_writer import EntropyOptions, UnitChoice, decode_entropy_payload, encode_entropy_payload, header_for

pytestmark = pytest.mark.skipif("c" not in _backend.available(), reason="C kernels not built")


def test_store_equals_the_reference_and_reaches_every_plain_map() -> None:
    seen = {"shift": 0, "flip": 0, "neg_flip": 0, "add": 0, "lut": 0, "const": 0, "stored": 0}
    for seed in range(400):
        case = random_case(seed)
        if case.reference is not None:
            continue
        enc = encode_entropy_payload(case.image, options=case.options)
        hdr = header_of(case, enc.features_used)
        with _backend.use("c"):
            store = prepare(hdr, read_lossless_head(Cursor(enc.payload), hdr)).c_models.store
            got = decode_entropy_payload(enc.payload, hdr)
        with _backend.use("python"):
            want = decode_entropy_payload(enc.payload, hdr)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), case.description
        if store is not None:
            seen["stored"] += 1
            seen["shift"] += any(w.shift for w in store.slots)
            seen["flip"] += any(w.flip for w in store.slots)
            seen["neg_flip"] += any(w.neg_flip for w in store.slots)
            seen["add"] += any(w.add for w in store.slots)
            seen["lut"] += any(w.lut is not None for w in store.slots)
            seen["const"] += bool(store.consts)
    assert all(seen.values()), seen


def _stored_case(sample: str, layout: int):
    """A random intra case of ``sample`` / ``layout`` whose maps the kernel stores itself."""
    for seed in range(200):
        case = random_case(seed, sample=sample, layout=layout, size=(13, 9))
        if case.reference is not None:
            continue
        enc = encode_entropy_payload(case.image, options=case.options)
        hdr = header_of(case, enc.features_used)
        with _backend.use("c"):
            if prepare(hdr, read_lossless_head(Cursor(enc.payload), hdr)).c_models.store is not None:
                return enc, hdr
    raise AssertionError("no stored case")


@pytest.mark.parametrize("sample, layout", [("u8", 3), ("u16", 4), ("i32", 2)])
def test_store_into_a_rectangle_leaves_the_rest(sample: str, layout: int) -> None:
    """A unit stored into a strided view of a larger array writes its rectangle only."""
    enc, hdr = _stored_case(sample, layout)
    want = decode_entropy_payload(enc.payload, hdr)
    canvas = np.frombuffer(bytes([0xA5]) * (20 * 30 * want.shape[2] * want.itemsize), want.dtype).reshape(20, 30, -1).copy()
    before = canvas.copy()
    data = read_data(enc.payload, hdr, 0, len(enc.payload))
    with _backend.use("c"):
        data.decode_into(canvas[3:16, 5:14], threads=1)
    assert np.array_equal(canvas[3:16, 5:14].view(np.uint8), want.view(np.uint8))
    canvas[3:16, 5:14] = before[3:16, 5:14]
    assert canvas.tobytes() == before.tobytes()  # nothing outside the rectangle changed


@pytest.mark.parametrize("layout, channels, dtype", [(0x81, 1, np.uint8), (0x82, 3, np.uint8), (0x84, 3, np.uint16),
                                                      (0x83, 4, np.uint8)])
def test_level_units_store_into_a_rectangle(layout: int, channels: int, dtype) -> None:
    """Bilevel and template units (2.10, 2.14) store their rows through the sample store
    (csrc imij_level_unit_store): into a strided rectangle, the same samples as the reference."""
    rng = np.random.default_rng(layout)
    k = 2 if layout <= 0x82 else 5
    idx = np.repeat(rng.integers(0, k, (7, 9)), 3, axis=0)[:19, :]
    idx = np.repeat(idx, 4, axis=1)[:, :33]
    if layout == 0x81:
        image = idx.astype(dtype)
    else:
        image = rng.integers(0, np.iinfo(dtype).max, (k, channels)).astype(dtype)[idx]
    options = EntropyOptions(lanes=3, stripe_rows=8, group_cols=13, unit=UnitChoice(layout=layout))
    enc = encode_entropy_payload(image, options=options)
    hdr = header_for(image, enc)
    with _backend.use("c"):
        assert prepare(hdr, read_lossless_head(Cursor(enc.payload), hdr)).c_models.store is not None
    with _backend.use("python"):
        want = decode_entropy_payload(enc.payload, hdr)
    assert np.array_equal(want.reshape(image.shape), image)
    shape = (25, 40, want.shape[2])
    canvas = np.full(shape, 7, want.dtype)
    data = read_data(enc.payload, hdr, 0, len(enc.payload))
    with _backend.use("c"):
        data.decode_into(canvas[4:23, 5:38], threads=1)
    assert np.array_equal(canvas[4:23, 5:38], want)
    canvas[4:23, 5:38] = 7
    assert (canvas == 7).all()  # nothing outside the rectangle changed
