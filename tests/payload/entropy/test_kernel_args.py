"""The entropy kernel checks the model structs it is handed (csrc/entropy.c model_ok): a context
map naming a table the struct does not have is refused before any stream is read, not read out
of bounds."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.data import read_data
from imij_plugins.payload.entropy.kernel import CModels, decode_unit_c

from .syntax_writer import encode_entropy_payload, header_for

pytestmark = pytest.mark.skipif("c" not in _backend.available(), reason="C kernels not built")


def _one_unit():
    rng = np.random.default_rng(2)
    image = rng.integers(0, 256, (20, 40, 3), dtype=np.uint8)
    enc = encode_entropy_payload(image)
    hdr = header_for(image, enc)
    data = read_data(enc.payload, hdr, 0, len(enc.payload))
    unit = data.units[0]
    x, y, w, h = data.head.geometry.unit_rect(0)
    return data.decoder, enc.payload[unit.body_start : unit.end], w, h, image[y : y + h, x : x + w]


def test_a_good_struct_decodes():
    payload, body, w, h, want = _one_unit()
    with _backend.use("c"):
        got = decode_unit_c(payload.plan, CModels(payload.plan), body, w, h, None, None)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("field", ["ctx_map", "ntables"])
def test_a_context_map_past_the_tables_is_refused(field):
    payload, body, w, h, _ = _one_unit()
    with _backend.use("c"):
        models = CModels(payload.plan)
        s = models.regular.structs[0]
        if field == "ctx_map":
            s.ctx_map[15] = s.ntables  # one past its last table
        else:
            s.ntables = 5  # more than the four a model may have
        with pytest.raises(RuntimeError, match="refused .* model structs"):  # a bug here, not the input
            decode_unit_c(payload.plan, models, body, w, h, None, None)


def test_slot_models_are_built_only_for_regular_stripes(monkeypatch, backend):
    """A page of bilevel stripes alone decodes without the slot models' structs (32 KiB of table
    entries per slot); an RGB image's regular stripes build them once per payload."""
    import imij_plugins
    from imij_plugins.payload.entropy import kernel

    if backend != "c":
        pytest.skip("the kernel's structs")
    built = []
    real = kernel.SlotModels.__init__
    monkeypatch.setattr(kernel.SlotModels, "__init__", lambda self, plan: built.append(plan) or real(self, plan))
    rng = np.random.default_rng(4)
    page = np.zeros((300, 400), np.uint8)
    page[40:260:9, 30:370] = 255  # text-like lines
    page[rng.random(page.shape) < 0.01] = 255
    rgb = rng.integers(0, 256, (300, 400, 3), dtype=np.uint8)
    with _backend.use("c"):
        for image, builds in ((page, 0), (rgb, 1)):
            data = imij_plugins.encode(image)
            built.clear()
            assert np.array_equal(imij_plugins.read(data).reshape(image.shape), image)
            assert len(built) == builds


def test_models_of_fewer_tables_pack_their_entries(monkeypatch, backend):
    """imij_models_fill places each model's min(ntables, 4) x 1024 entries right after the
    previous model's: a payload whose models have 1, 2 ... tables holds only those, and decodes."""
    import imij_plugins
    from imij_plugins.payload.entropy import kernel

    if backend != "c":
        pytest.skip("the kernel's structs")
    made = []
    real = kernel.SlotModels.__init__
    rng = np.random.default_rng(6)
    y, x = np.mgrid[0:64, 0:64]
    image = np.stack([x * 300 + y * 7, x * 5 + y * 200, (x + y) * 90], axis=-1) + rng.integers(0, 40, (64, 64, 3))
    image = image.astype(np.uint16)
    monkeypatch.setattr(kernel.SlotModels, "__init__", lambda self, plan: made.append((self, plan)) or real(self, plan))
    with _backend.use("c"):
        out = imij_plugins.read(imij_plugins.encode(image))
    assert np.array_equal(out, image)
    (models, plan), = made
    tables = [len(m.freq) for m in plan.models]
    assert sorted(tables) != [4] * len(tables)  # the case this test is about
    assert models.entries.size == sum(tables) * 1024
    ffi = _backend.ffi
    starts = [int(ffi.cast("uintptr_t", models.structs[i].ent)) for i in range(len(tables))]
    assert [b - a for a, b in zip(starts, starts[1:])] == [8 * 1024 * t for t in tables[:-1]]
