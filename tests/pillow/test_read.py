"""Opening: lazy, safe (bombs, corrupt input), file handles, verify(), truncated images."""

from __future__ import annotations

import gc
import io
import traceback
import tracemalloc
import warnings

import numpy as np
import pytest
from PIL import Image, ImageFile, UnidentifiedImageError

import imij_plugins
from imij_plugins.container import metadata as md
from imij_plugins.payload.data import DataPayload
from imij_plugins.pillow import ImiImagePlugin
from imij_plugins.reader import ImijFile

from .helper import assert_image_equal, sample_image, save_bytes, with_header


@pytest.fixture
def decodes(monkeypatch):
    """Counts the core's pixel decodes (every read ends in DataPayload.decode_into)."""
    calls = []
    original = DataPayload.decode_into

    def counting(self, *args, **kwargs):
        calls.append(args[0].shape if args else None)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(DataPayload, "decode_into", counting)
    return calls


@pytest.fixture
def options():
    """Restores the plugin options a test changes."""
    saved = (ImiImagePlugin.DECODE_THREADS, ImiImagePlugin.VERIFY_CHECKSUMS)
    yield ImiImagePlugin
    ImiImagePlugin.DECODE_THREADS, ImiImagePlugin.VERIFY_CHECKSUMS = saved


def _animation() -> bytes:
    frames = [sample_image("RGB", (16, 12), seed) for seed in range(3)]
    return save_bytes(frames[0], save_all=True, append_images=frames[1:], duration=40)


def _decode_failure() -> bytes:
    """A file the core opens (no cSUM) but whose pixel data fails to decode: found by mutation."""
    data = imij_plugins.encode(np.random.default_rng(5).integers(0, 255, (9, 11, 3), dtype=np.uint8), effort=5)
    for pos in range(len(data) - 1, 0, -1):
        mutated = bytearray(data)
        mutated[pos] ^= 0xFF
        try:
            f = imij_plugins.open(bytes(mutated))
        except imij_plugins.ImijError:
            continue
        try:
            f.read()
        except imij_plugins.Corrupt:
            return bytes(mutated)
        except imij_plugins.ImijError:
            continue
    raise AssertionError("no mutation fails at decode only")


# --- identification --------------------------------------------------------------------------


def test_accept_looks_at_the_signature_only():
    accept = Image.OPEN["IMI"][1]
    assert accept(b"IMIJ\r\n\x87\n")
    assert accept(b"IMIJ\r\n\x87\n" + b"\xff" * 8)
    assert not accept(b"IMIJ\r\n\x87")
    assert not accept(b"\x89PNG\r\n\x1a\n")


def test_a_file_of_another_format_is_not_identified():
    buf = io.BytesIO()
    Image.new("RGB", (2, 2)).save(buf, format="PNG")
    with pytest.raises(UnidentifiedImageError):
        Image.open(io.BytesIO(buf.getvalue()), formats=["IMI"])
    with Image.open(io.BytesIO(buf.getvalue())) as im:
        assert im.format == "PNG"  # IMI does not get in the way of other plugins


# --- lazy open -----------------------------------------------------------------------------


def test_open_decodes_no_pixels(decodes):
    with Image.open(io.BytesIO(_animation())) as im:
        assert (im.size, im.mode, im.n_frames, im.is_animated) == ((16, 12), "RGB", 3, True)
        im.seek(2)
        assert im.info["duration"] == 40
        assert decodes == []
        im.load()
        assert decodes  # load() is where pixels decode


def test_open_from_a_path_decodes_no_pixels(decodes, tmp_path):
    path = tmp_path / "x.imi"
    sample_image("RGBA", (30, 20)).save(path)
    with Image.open(path) as im:
        assert im.format == "IMI" and im.size == (30, 20)
        assert decodes == []


# --- decompression bombs -----------------------------------------------------------------------


def _forged_bomb() -> bytes:
    return with_header(imij_plugins.encode(np.zeros((2, 2, 3), np.uint8)), width=100_000, height=100_000)


def test_a_forged_100000x100000_header_is_refused_before_any_allocation(decodes):
    data = _forged_bomb()
    tracemalloc.start()
    try:
        with pytest.raises(Image.DecompressionBombError):
            Image.open(io.BytesIO(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decodes == []
    assert peak < 1 << 20  # nothing sized by the header (30 GB here) was allocated


def test_the_bomb_check_raises_inside_the_plugin():
    """_open refuses the size itself (WebP's early check), before Image.open's own check."""
    with pytest.raises(Image.DecompressionBombError) as caught:
        Image.open(io.BytesIO(_forged_bomb()))
    raised_in = [frame.f_code.co_name for frame, _ in traceback.walk_tb(caught.value.__traceback__)]
    assert "_open" in raised_in
    assert "(10000000000 pixels)" in str(caught.value)


def test_without_pillows_limit_the_core_refuses_at_load_without_allocating(monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)
    with Image.open(io.BytesIO(_forged_bomb())) as im:
        tracemalloc.start()
        try:
            with pytest.raises(imij_plugins.ImijError):  # the DATA head does not match, or TooLarge
                im.load()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 1 << 20


def test_every_page_is_checked(monkeypatch):
    small, large = Image.new("L", (2, 2)), Image.new("L", (6, 6))
    data = save_bytes(small, save_all=True, append_images=[large], pages=True)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10)
    with pytest.raises(Image.DecompressionBombError):
        Image.open(io.BytesIO(data))  # page 0 (4 px) passes Image.open's check; page 1 (36 px) does not


# --- corrupt input -----------------------------------------------------------------------------


def _corpus() -> list[bytes]:
    rgba = sample_image("RGBA", (6, 5))
    return [
        save_bytes(sample_image("L", (7, 3)), checksum=True),
        save_bytes(rgba, exif=b"II*\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00", icc_profile=b"icc", xmp=b"<x/>"),
        save_bytes(sample_image("I;16", (4, 4)), effort=1),
        save_bytes(rgba, save_all=True, append_images=[sample_image("RGBA", (6, 5), 1)], duration=[10, 20]),
        save_bytes(rgba, save_all=True, append_images=[sample_image("F", (3, 2))], pages=True),
        imij_plugins.encode(
            np.arange(12, dtype=np.uint16).reshape(3, 4),
            cicp=(9, 16, 0, 1),
            orientation=3,
            mastering_display=md.MasteringDisplay((1, 2), (3, 4), (5, 6), (7, 8), 1000, 1),
            diffuse_white=203.0,
            science={"calibration": md.Calibration((md.ChannelCalibration(slope=0.5, offset=-3.0, unit="K"),))},
            pixel_checksum=True,
            chunks=[(b"pRVW", imij_plugins.encode(np.zeros((1, 2), np.uint16)), "before")],
        ),
    ]


def _outcome(data: bytes) -> str:
    """Open, load every frame: identification fails, a typed error at load, or success."""
    try:
        im = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, Image.DecompressionBombError):
        return "unidentified"
    with im:
        try:
            for frame in range(im.n_frames):
                im.seek(frame)
                im.load()
        except imij_plugins.ImijError:
            return "typed"
    with Image.open(io.BytesIO(data)) as im:
        try:
            im.draft(None, (1, 1))  # a preview, when there is one
            im.load()
        except imij_plugins.ImijError:
            return "typed"
    return "ok"


@pytest.mark.parametrize("index", range(6))
def test_corrupt_files_fail_at_open_or_with_a_typed_error_at_load(index):
    data = _corpus()[index]
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        warnings.filterwarnings("ignore", "IMI metadata not read")
        for pos in range(len(data)):
            for value in {0x00, 0xFF, data[pos] ^ 0x01, data[pos] ^ 0x80}:
                mutated = bytearray(data)
                mutated[pos] = value
                seen.add(_outcome(bytes(mutated)))  # anything else raised fails the test
        for cut in range(len(data)):
            seen.add(_outcome(data[:cut]))
    assert "unidentified" in seen


def test_an_unsupported_file_is_unidentified_and_says_why(monkeypatch):
    """A header version this reader does not implement: Unsupported in the core, SyntaxError in _open."""
    data = bytearray(save_bytes(sample_image("L")))
    data[9] = 3  # the version byte after signature and header_len
    with pytest.raises(UnidentifiedImageError):
        Image.open(io.BytesIO(bytes(data)))
    if not hasattr(Image, "WARN_POSSIBLE_FORMATS"):
        pytest.skip("this Pillow has no Image.WARN_POSSIBLE_FORMATS (why each plugin refused, a newer Pillow's)")
    monkeypatch.setattr(Image, "WARN_POSSIBLE_FORMATS", True)
    with pytest.warns(UserWarning, match="IMI opening failed. not a readable IMI file: header version 3"):
        with pytest.raises(UnidentifiedImageError):
            Image.open(io.BytesIO(bytes(data)), formats=["IMI"])


def test_a_file_cut_inside_its_header_is_unidentified():
    data = save_bytes(sample_image("RGB"))
    for cut in (0, 7, 8, 12):
        with pytest.raises(UnidentifiedImageError):
            Image.open(io.BytesIO(data[:cut]))


def test_a_file_cut_after_its_header_opens_and_fails_at_load():
    """Only a broken header fails Image.open; the missing pixels are Corrupt at load (as PNG's)."""
    data = save_bytes(sample_image("RGB"))
    with Image.open(io.BytesIO(data[:-1])) as im:
        assert im.size == (13, 7)
        with pytest.raises(imij_plugins.Corrupt):
            im.load()


def test_a_checksum_mismatch_fails_at_load(options):
    data = bytearray(save_bytes(sample_image("RGB"), checksum=True))
    data[-20] ^= 0x01
    with Image.open(io.BytesIO(bytes(data))) as im:
        with pytest.raises(imij_plugins.Corrupt, match="checksum"):
            im.load()


def test_a_decode_failure_is_a_typed_error_at_load():
    with Image.open(io.BytesIO(_decode_failure())) as im:
        with pytest.raises(imij_plugins.Corrupt):
            im.load()


def test_load_truncated_images_gives_what_decoded(monkeypatch):
    """Like Pillow's own decoders, the flag turns a broken data stream into what decoded."""
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    with Image.open(io.BytesIO(_decode_failure())) as im:
        im.load()
        assert im.mode == "RGB" and im.size == (11, 9)


# --- verify ------------------------------------------------------------------------------


def test_verify_passes_on_a_good_file(tmp_path):
    path = tmp_path / "x.imi"
    sample_image("RGB").save(path, checksum=True)
    im = Image.open(path)
    fp = im.fp
    im.verify()
    assert fp.closed and im.fp is None  # closes the file it opened, as Pillow's verify()
    im.close()


def test_verify_checks_the_file_checksum(options):
    data = bytearray(save_bytes(sample_image("RGB", (40, 30)), checksum=True))
    data[len(data) // 2] ^= 0x10
    options.VERIFY_CHECKSUMS = False  # open without hashing; verify() hashes
    with Image.open(io.BytesIO(bytes(data))) as im:
        with pytest.raises(imij_plugins.Corrupt, match="(?i)checksum|digest|cSUM"):
            im.verify()


def test_verify_decodes_every_frame(decodes):
    with Image.open(io.BytesIO(_decode_failure())) as im:
        with pytest.raises(imij_plugins.Corrupt):
            im.verify()
    decodes.clear()
    with Image.open(io.BytesIO(_animation())) as im:
        im.verify()
    assert len(decodes) >= 1


def test_verify_decodes_every_page(decodes):
    data = save_bytes(Image.new("L", (3, 3)), save_all=True, append_images=[Image.new("RGB", (5, 2))], pages=True)
    with Image.open(io.BytesIO(data)) as im:
        im.verify()
    assert sorted(decodes) == [(2, 5, 3), (3, 3, 1)]


# --- file handles ------------------------------------------------------------------------------


def test_a_single_frame_file_closes_after_load(tmp_path):
    path = tmp_path / "x.imi"
    sample_image("L").save(path)
    with Image.open(path) as im:
        fp = im.fp
        im.load()
        assert fp.closed and im.fp is None


def test_a_multi_frame_file_stays_open_until_close(tmp_path):
    path = tmp_path / "x.imi"
    path.write_bytes(_animation())
    im = Image.open(path)
    fp = im.fp
    im.load()
    im.seek(1)
    im.load()
    assert not fp.closed
    im.close()
    assert fp.closed


def test_a_multi_frame_file_closes_on_exit(tmp_path):
    path = tmp_path / "x.imi"
    path.write_bytes(_animation())
    with Image.open(path) as im:
        fp = im.fp
        im.seek(2)
        im.load()
    assert fp.closed


def test_a_file_object_of_the_caller_is_never_closed():
    for data in (save_bytes(sample_image("L")), _animation()):
        buf = io.BytesIO(data)
        with Image.open(buf) as im:
            im.load()
        im.close()
        assert not buf.closed


def test_no_resource_warning(tmp_path):
    still, anim = tmp_path / "still.imi", tmp_path / "anim.imi"
    sample_image("RGB").save(still)
    anim.write_bytes(_animation())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for path in (still, anim):
            with Image.open(path) as im:
                im.load()
            del im
            im = Image.open(path)
            im.load()
            im.close()
            del im
        im = Image.open(still)  # a still image closes its file in load()
        im.load()
        del im
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


# --- exact data ----------------------------------------------------------------------------------


def test_the_core_file_is_available_as_im_imij():
    a = np.random.default_rng(2).integers(0, 65536, (4, 5, 3), dtype=np.uint16)
    with Image.open(io.BytesIO(imij_plugins.encode(a))) as im:
        assert isinstance(im.imij, ImijFile)
        assert np.array_equal(im.imij.read(im.tell()), a)


def test_threads_option_reaches_the_core(options, monkeypatch):
    seen = []
    original = ImijFile.read

    def spy(self, index=0, **kwargs):
        seen.append(kwargs.get("threads"))
        return original(self, index, **kwargs)

    monkeypatch.setattr(ImijFile, "read", spy)
    imij_plugins.pillow.register_pillow(decode_threads=3)
    with Image.open(io.BytesIO(save_bytes(sample_image("RGB")))) as im:
        im.load()
    assert seen == [3]


# --- previews (pRVW) and draft ----------------------------------------------------------------


def _with_previews(*sizes: tuple[int, int], mode: str = "RGB") -> tuple[bytes, dict[tuple[int, int], Image.Image]]:
    full = sample_image(mode, (64, 48))
    previews = {size: full.resize(size) for size in sizes}
    chunks = [(b"pRVW", save_bytes(p), "before") for p in previews.values()]
    return imij_plugins.encode(np.asarray(full), chunks=chunks), previews


def test_thumbnail_uses_the_smallest_large_enough_preview(decodes):
    data, previews = _with_previews((32, 24), (16, 12), (8, 6))
    with Image.open(io.BytesIO(data)) as im:
        im.thumbnail((8, 6))  # draft(None, (16, 12)): reducing_gap 2
        assert im.size == (8, 6)
        assert im.info["imij_preview"] == (16, 12)
    assert decodes == [(12, 16, 3)]  # only the preview decoded


def test_draft_returns_the_mode_and_the_box_of_the_whole_image():
    data, previews = _with_previews((32, 24))
    with Image.open(io.BytesIO(data)) as im:
        assert im.draft("RGB", (20, 20)) == ("RGB", (0, 0, 32.0, 24.0))
        assert im.size == (32, 24)
        assert_image_equal(im, previews[(32, 24)])
        assert im.draft("RGB", (20, 20)) is None  # once, as JpegImagePlugin.draft


def test_draft_without_a_large_enough_preview_changes_nothing(decodes):
    data, _ = _with_previews((8, 6))
    with Image.open(io.BytesIO(data)) as im:
        assert im.draft(None, (16, 12)) is None
        assert "imij_preview" not in im.info
        im.thumbnail((16, 12), reducing_gap=None)
    assert decodes == [(48, 64, 3)]


def test_draft_after_load_changes_nothing():
    data, _ = _with_previews((32, 24))
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        assert im.draft(None, (16, 12)) is None
        assert im.size == (64, 48)


def test_a_preview_of_another_mode_is_not_used():
    full = sample_image("RGB", (64, 48))
    data = imij_plugins.encode(np.asarray(full), chunks=[(b"pRVW", save_bytes(full.resize((32, 24)).convert("L")), "before")])
    with Image.open(io.BytesIO(data)) as im:
        assert im.draft(None, (16, 12)) is None
        assert im.draft("L", (16, 12)) == ("L", (0, 0, 32.0, 24.0))  # asked for


def test_thumbnail_works_without_a_preview():
    with Image.open(io.BytesIO(save_bytes(sample_image("RGB", (64, 48))))) as im:
        assert im.draft("RGB", (8, 6)) is None
        im.thumbnail((16, 16))
        assert im.size == (16, 12)


# --- pSUM ------------------------------------------------------------------------------------


def _psum_mismatch() -> bytes:
    """A file whose pixels decode without error but differ from their pSUM digest: found by mutation."""
    a = np.random.default_rng(8).integers(0, 255, (6, 7, 3), dtype=np.uint8)
    data = imij_plugins.encode(a, effort=1, pixel_checksum=True)
    for pos in range(len(data) - 1, 0, -1):
        mutated = bytearray(data)
        mutated[pos] ^= 0x01
        try:
            if not np.array_equal(imij_plugins.open(bytes(mutated), verify=False).read(), a):
                return bytes(mutated)
        except imij_plugins.ImijError:
            continue
    raise AssertionError("no mutation decodes to other pixels")


def test_verify_checks_the_decoded_bitmap_digests(options):
    data = _psum_mismatch()
    options.VERIFY_CHECKSUMS = False
    with Image.open(io.BytesIO(data)) as im:
        im.load()  # unchecked: the pixels are wrong and nothing says so
        with pytest.raises(imij_plugins.Corrupt, match="pSUM"):
            im.verify()


def test_load_checks_the_decoded_bitmap_digests():
    with Image.open(io.BytesIO(_psum_mismatch())) as im:
        with pytest.raises(imij_plugins.Corrupt, match="pSUM"):
            im.load()


def test_pixel_checksum_parameter_writes_psum():
    data = save_bytes(sample_image("RGB"), pixel_checksum=True)
    with imij_plugins.open(data) as f:
        assert f.bitmap_status(0) == "pending"
        f.read()
        assert f.bitmap_status(0) == "verified"


def test_named_files_are_mapped_not_read(tmp_path):
    import mmap

    path = tmp_path / "m.imi"
    imij_plugins.write(path, np.zeros((64, 64, 3), np.uint8))
    with Image.open(path) as im:
        assert isinstance(im.imij._buf, mmap.mmap)  # open touched the framing; pixels load later
        assert im.getpixel((3, 3)) == (0, 0, 0)
