"""Frames and pages (1.3) and the pSUM bitmap checksum (1.4.1), through real files."""

from fractions import Fraction

import numpy as np
import pytest

import imij_plugins
from imij_plugins.container.animation import Animation
from imij_plugins.container.frames import check_frame, read_frame_control
from imij_plugins.container.header import Header
from imij_plugins.container.pixel_checksum import bitmap_digest, encode_bitmap_digests, read_bitmap_digests
from imij_plugins.errors import Corrupt, Unsupported


def frames_with_edits(n=6, shape=(20, 30, 3), seed=0):
    rng = np.random.default_rng(seed)
    frames = [rng.integers(0, 255, shape, dtype=np.uint8)]
    for i in range(1, n):
        f = frames[-1].copy()
        if i % 3:  # every third frame repeats the previous one
            f[i : i + 3, 2 * i : 2 * i + 4] = 40 * i
        frames.append(f)
    return frames


def test_animation_round_trip_in_any_order(backend):
    frames = frames_with_edits()
    data = imij_plugins.encode(frames, durations=[0.1, 0.2, 0.05, 1, 0.5, Fraction(1, 3)], loop=2)
    f = imij_plugins.open(data)
    assert (f.n_frames, f.kind, f.loop_count) == (6, "animation", 2)
    assert [t for t, _ in f.chunks].count("fRAM") == 5
    assert [f.frame_info(i).duration for i in range(6)] == [Fraction(1, 10), Fraction(1, 5), Fraction(1, 20), 1, Fraction(1, 2), Fraction(1, 3)]
    assert f.frame_info(3).empty and f.frame_info(1).uses_previous
    for i in [5, 0, 2, 4, 1, 3, 3, 5]:
        assert np.array_equal(f.read(i), frames[i])
    assert [a.tobytes() for a in f.iter_frames()] == [a.tobytes() for a in frames]
    assert np.array_equal(f.read(4, region=(2, 3, 10, 5)), frames[4][3:8, 2:12])


def test_full_change_is_an_intra_frame():
    a, b = np.zeros((4, 4), np.uint16), np.full((4, 4), 9, np.uint16)
    f = imij_plugins.open(imij_plugins.encode([a, b, a]))
    assert not f.frame_info(1).uses_previous and f.frame_info(1).width == 4
    assert np.array_equal(f.read(2)[..., 0], a)


def test_animation_frames_must_share_shape():
    with pytest.raises(ValueError):
        imij_plugins.encode([np.zeros((2, 2), np.uint8), np.zeros((3, 2), np.uint8)])


def test_uniform_pages():
    pages = [np.full((5, 7, 3), i, np.uint8) for i in range(3)]
    f = imij_plugins.open(imij_plugins.encode(pages, kind="pages"))
    assert f.kind == "pages" and "mixed_pages" not in f.features
    assert all(np.array_equal(f.read(i), p) for i, p in enumerate(pages))


def test_mixed_pages_keep_their_own_formats():
    pages = [np.zeros((5, 6), np.uint8), np.ones((7, 3, 3), np.float32), np.full((2, 2, 4), -7, np.int16)]
    f = imij_plugins.open(imij_plugins.encode(pages, kind="pages", layout=None))
    assert f.kind == "mixed pages"
    assert {"mixed_pages", "samples_32", "signed_samples"} <= set(f.features)
    for i, p in enumerate(pages):
        got = f.read(i)
        assert got.dtype == p.dtype and np.array_equal(got.reshape(p.shape), p)
        assert f.page(i).dtype == p.dtype


def test_single_image_list_writes_an_animation_of_one():
    f = imij_plugins.open(imij_plugins.encode([np.zeros((2, 2), np.uint8)], durations=0.5))
    assert f.n_frames == 1 and f.kind == "animation" and f.frame_info(0).duration == Fraction(1, 2)


def fram(*fields: int, image: bytes = b"") -> bytes:
    from imij_plugins.wire import encode_varint

    return b"".join(encode_varint(v) for v in fields) + image


@pytest.mark.parametrize(
    "payload, error, reason",
    [
        (fram(0, 0, 1, 10, 8), Unsupported, "presence bits"),  # 1.3: bits 3 and up
        (fram(0, 0, 1, 0, 0, image=b"x"), Corrupt, "denominator"),  # den > 0
        (fram(0, 0, 1, 10, 2), Corrupt, "without presence bit 0"),  # empty requires bit 0
        (fram(0, 0, 1, 10, 3, image=b"x"), Corrupt, "empty fRAM with an image"),
        (fram(0, 0, 1, 10, 0), Corrupt, "without an image"),
        (fram(0, 0, 1, 10, 4, 2, 33, 0, image=b"x"), Corrupt, "record 33"),
        (fram(0, 0, 1, 10, 4, 2, 35, 0, image=b"x"), Unsupported, "critical frame record 35"),
        (fram(0, 0, 1, 10, 4, 5, 2, 0, image=b"x"), Corrupt, "past the end"),
    ],
)
def test_frame_control_rules(payload, error, reason):
    with pytest.raises(error, match=reason):
        read_frame_control(payload, 0, len(payload), 1)


def test_frame_control_even_record_skipped():
    ctrl = read_frame_control(fram(3, 4, 1, 10, 5, 2, 2, 0, image=b"IMG"), 0, 11, 1)
    assert (ctrl.x0, ctrl.y0, ctrl.duration, ctrl.uses_previous, ctrl.image) == (3, 4, Fraction(1, 10), True, (8, 11))


OUTER = Header(width=10, height=8)


@pytest.mark.parametrize(
    "kind, fields, nested, reason",
    [
        (1, (0, 0, 1, 1, 0), Header(width=5, height=8), "does not cover"),  # intra must cover the canvas
        (1, (6, 0, 1, 1, 1), Header(width=5, height=8), "outside the canvas"),
        (1, (0, 0, 1, 1, 1), Header(width=5, height=8, sample=1), "sample type"),
        (2, (1, 0, 1, 1, 0), Header(width=5, height=8), "origin"),
        (2, (0, 0, 1, 1, 1), Header(width=5, height=8), "previous-frame"),
        (2, (0, 0, 1, 1, 0), Header(width=5, height=8, channels=4), "mixed pages need kind 3"),
        (3, (0, 0, 1, 1, 0), Header(width=5, height=8, sample=5), "features"),  # samples_32 not in the outer set
    ],
)
def test_frame_checks_against_the_outer_file(kind, fields, nested, reason):
    ctrl = read_frame_control(fram(*fields, image=b"x"), 0, len(fram(*fields)) + 1, kind)
    with pytest.raises(Corrupt, match=reason):
        check_frame(Animation(kind, 0, 2, Fraction(1)), 1, ctrl, nested, OUTER)


def _swap_anim_kind(data: bytes, kind: int) -> bytes:
    i = data.index(b"aNIM")
    return data[: i + 5] + bytes([kind]) + data[i + 6 :]


def test_anim_kinds_gated_and_open():
    data = imij_plugins.encode([np.zeros((2, 2), np.uint8)] * 2, kind="pages")
    with pytest.raises(Corrupt, match="mixed_pages"):
        imij_plugins.open(_swap_anim_kind(data, 3))  # kind 3 without the feature
    with pytest.raises(Corrupt, match="sequence_items"):
        imij_plugins.open(_swap_anim_kind(data, 4))
    with pytest.raises(Unsupported, match="aNIM kind 9"):
        imij_plugins.open(_swap_anim_kind(data, 9))  # open field


def test_frame_count_must_match():
    data = bytearray(imij_plugins.encode([np.zeros((2, 2), np.uint8)] * 3, kind="pages"))
    i = data.index(b"aNIM")
    data[i + 7] = 5  # frame_count
    with pytest.raises(Corrupt, match="frame_count"):
        imij_plugins.open(bytes(data))


def test_nested_page_with_frames_is_corrupt():
    inner = imij_plugins.encode([np.zeros((2, 2), np.uint8)] * 2, kind="pages")
    outer = imij_plugins.encode([np.zeros((2, 2), np.uint8)] * 2, kind="pages")
    i = outer.rindex(b"fRAM")
    page = outer[i:]
    head = page[: page.index(b"IMIJ")]
    from imij_plugins.wire import encode_varint

    body = head[5:] + inner  # skip tag and the 1-byte length
    with pytest.raises(Corrupt, match="frames of its own"):
        imij_plugins.open(outer[:i] + b"fRAM" + encode_varint(len(body) + 1) + body)


# pSUM (1.4.1)


def test_bitmap_digest_descriptor():
    import xxhash

    raster = bytes(range(12))
    descriptor = b"IMIJ/pSUM/v1\0\0\0\0" + (2).to_bytes(4, "little") + (2).to_bytes(4, "little") + bytes([3, 0]) + (0).to_bytes(8, "little")
    assert len(descriptor) == 34
    assert bitmap_digest(2, 2, 3, 0, 0, raster) == xxhash.xxh3_64_intdigest(descriptor + raster)


def test_pixel_checksum_round_trip_and_status():
    frames = frames_with_edits(4)
    f = imij_plugins.open(imij_plugins.encode(frames, pixel_checksum=True))
    assert f.bitmap_status(2) == "pending"
    f.read(2, region=(0, 0, 3, 3))
    assert f.bitmap_status(2) == "pending"  # region reads do not verify
    f.read(2)
    assert f.bitmap_status(2) == "verified"
    assert imij_plugins.open(imij_plugins.encode(frames[0])).bitmap_status() == "absent"


def test_pixel_checksum_mismatch():
    data = bytearray(imij_plugins.encode(np.zeros((3, 3), np.uint8), pixel_checksum=True))
    i = data.index(b"pSUM")
    data[i + 11] ^= 1  # inside the digest
    f = imij_plugins.open(bytes(data))
    with pytest.raises(Corrupt, match="bitmap checksum mismatch"):
        f.read()
    imij_plugins.open(bytes(data), verify=False).read()  # not verifying


@pytest.mark.parametrize(
    "payload, count, reason",
    [
        (bytes([1, 0, 4, 0, 1]) + bytes(8), 1, "width"),
        (bytes([1, 0, 8, 1, 1]) + bytes(8), 1, "reserved"),
        (bytes([1, 0, 8, 0, 0]), 1, "count 0"),
        (bytes([1, 0, 8, 0, 1]) + bytes(7), 1, "length"),
        (bytes([1, 0, 8, 0, 1]) + bytes(9), 1, "length"),
        (bytes([1, 0, 8, 0, 2]) + bytes(16), 1, "but the file has 1"),
        (bytes([1, 0, 8, 0]), 1, "count"),
    ],
)
def test_pixel_checksum_rules(payload, count, reason):
    with pytest.raises(Corrupt, match=reason):
        read_bitmap_digests(memoryview(payload), count)


def test_pixel_checksum_unknown_version_is_skipped():
    assert not read_bitmap_digests(memoryview(bytes([2, 0, 1, 2, 3])), 1).known
    assert not read_bitmap_digests(memoryview(bytes([1, 7])), 1).known
    with pytest.raises(Corrupt, match="8,000,014"):
        read_bitmap_digests(memoryview(bytes([2]) + bytes(8_000_014)), 1)
    assert encode_bitmap_digests([5]) == bytes([1, 0, 8, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0])


# inter frames: predictors 7-9 against the previous canvas (section 4)


def _inter_animation(first: np.ndarray, second: np.ndarray, rect: tuple[int, int, int, int]) -> bytes:
    """An animation whose frame 1 is an entropy-coded inter frame over ``rect`` of frame 0."""
    from payload.entropy.syntax_writer import EntropyOptions, UnitChoice, encode_entropy_payload, header_for

    from imij_plugins.container.writer import assemble
    from imij_plugins.wire import encode_varint

    x, y, w, h = rect
    part = second[y : y + h, x : x + w]
    options = EntropyOptions(lanes=2, unit=UnitChoice(predictors=([7] + [8, 9] * h)[:h]))
    enc = encode_entropy_payload(part, options=options, reference=first[y : y + h, x : x + w])
    nested = assemble(header_for(part, enc), enc.payload, enc.head_len)
    outer = imij_plugins.encode([first], durations=0.1)
    fram = encode_varint(x) + encode_varint(y) + b"\x01\x0a\x01" + nested  # duration 1/10, uses previous
    aNIM_at = outer.index(b"aNIM")
    outer = outer[: aNIM_at + 7] + b"\x02" + outer[aNIM_at + 8 :]  # frame_count 2
    return outer + b"fRAM" + encode_varint(len(fram) + 1) + fram


def test_inter_frame_decodes_against_the_canvas(backend):
    rng = np.random.default_rng(3)
    first = rng.integers(0, 200, (10, 12, 3), dtype=np.uint8)
    second = first.copy()
    second[2:8, 3:11] = np.clip(first[2:8, 3:11].astype(int) + rng.integers(-3, 4, (6, 8, 3)), 0, 255)
    f = imij_plugins.open(_inter_animation(first, second, (3, 2, 8, 6)))
    assert f.frame_info(1).uses_previous
    assert np.array_equal(f.read(1), second) and np.array_equal(f.read(0), first)


def test_inter_predictors_in_an_intra_image_are_corrupt():
    from payload.entropy.syntax_writer import EntropyOptions, UnitChoice, encode_entropy_payload, header_for

    from imij_plugins.container.writer import assemble

    image = np.zeros((3, 4), np.uint8)
    enc = encode_entropy_payload(image, options=EntropyOptions(unit=UnitChoice(predictors=[7, 7, 7])), reference=image[:, :, None])
    with pytest.raises(Corrupt, match="predictor"):
        imij_plugins.read(assemble(header_for(image, enc), enc.payload, enc.head_len))


# sequence items (aNIM kind 4, feature sequence_items)


def test_sequence_items_with_references(backend):
    items = [np.full((4, 5, 3), i * 20, np.uint8) for i in range(4)]
    f = imij_plugins.open(imij_plugins.encode(items, kind="sequence", references=[None, 0, 1, 0], durations=0.2))
    assert f.kind == "sequence" and "sequence_items" in f.features
    assert [np.array_equal(f.read(i), a) for i, a in enumerate(items)] == [True] * 4
    pages = imij_plugins.open(imij_plugins.encode([np.zeros((2, 2), np.uint8), np.ones((3, 3, 3), np.float32)], kind="sequence", presentation="pages"))
    assert pages.read(1).dtype == np.float32


def test_sequence_reference_digest_mismatch_is_corrupt():
    items = [np.full((4, 5), i, np.uint8) for i in range(2)]
    data = bytearray(imij_plugins.encode(items, kind="sequence", references=[None, 0]))
    i = data.index(b"fRAM")
    digest_at = data.index(b"\x21\x09\x00", i) + 3  # record 33, length 9, ordinal 0, then the digest
    data[digest_at] ^= 1
    f = imij_plugins.open(bytes(data))
    assert np.array_equal(f.read(0), items[0][..., None])
    with pytest.raises(Corrupt, match="digest"):
        f.read(1)


def test_sequence_forward_reference_is_corrupt():
    items = [np.full((4, 5), i, np.uint8) for i in range(2)]
    data = bytearray(imij_plugins.encode(items, kind="sequence", references=[None, 0]))
    i = data.index(b"\x21\x09\x00", data.index(b"fRAM"))
    data[i + 2] = 1  # item 1 references itself
    with pytest.raises(Corrupt, match="not earlier"):
        imij_plugins.open(bytes(data))


def test_sequence_animation_items_must_share_image_info():
    with pytest.raises(ValueError):
        imij_plugins.encode([np.zeros((2, 2), np.uint8), np.zeros((2, 3), np.uint8)], kind="sequence")
    with pytest.raises(ValueError):
        imij_plugins.encode([np.zeros((2, 2), np.uint8), np.zeros((2, 3), np.uint8)], kind="sequence", references=[None, 0], presentation="pages")
