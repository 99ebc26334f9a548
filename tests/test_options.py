"""EncodeOptions: every option checked up front (ValueError naming it), and every accepted
combination of writer options writes a file that reads back exactly, or within max_error."""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import imij_plugins
from imij_plugins.options import EncodeKeywords, EncodeOptions

IMAGE = (np.arange(20 * 24 * 3, dtype=np.uint32) * 2654435761 % 251).astype(np.uint8).reshape(20, 24, 3)


def test_keywords_and_options_name_the_same_fields_with_the_same_types():
    keywords = typing.get_type_hints(EncodeKeywords)
    options = typing.get_type_hints(EncodeOptions)
    assert keywords == options
    assert [f.name for f in dataclasses.fields(EncodeOptions)] == list(keywords)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("codec", "png"),
        ("effort", 0),
        ("effort", 10),
        ("effort", 5.0),
        ("effort", True),
        ("max_error", -1),
        ("max_error", float("nan")),
        ("threads", 0),
        ("stripe_rows", 0),
        ("stripe_rows", -3),
        ("group_cols", -1),
        ("unit_table", "middle"),
        ("ordinals", "yes"),
        ("checksum", 1),
        ("layout", "YCbCr"),
        ("layout", 99),
        ("cicp", (1, 13, 0)),
        ("cicp", (1, 13, 0, 300)),
        ("orientation", 9),
        ("sig_bits", (0,)),
        ("sig_bits", "8"),
        ("alpha_mode", 4),
        ("icc_profile", "text"),
        ("dpi", (72, 0)),
        ("dpi", (72,)),
        ("chunks", [(b"DATA", b"", "before")]),
        ("chunks", [(b"Abcd", b"", "before")]),
        ("chunks", [(b"teXt", b"", "inside")]),
        ("chunks", [(b"teXt", "text", "after")]),
        ("chunks", [(b"cLLI", b"x" * 8, "before"), (b"cLLI", b"x" * 8, "before")]),
        ("previews", (1,)),
        ("kind", "movie"),
        ("loop", -1),
        ("durations", -0.5),
        ("durations", [0.1, -1]),
        ("presentation", "slides"),
    ],
)
def test_a_bad_option_is_a_value_error_naming_it_before_any_coding(option, value):
    with pytest.raises(ValueError, match=option.split("_")[0]):
        imij_plugins.encode(IMAGE, **{option: value})
    with pytest.raises(ValueError, match=option.split("_")[0]):
        EncodeOptions(**{option: value})


def test_keywords_of_plain_values_are_checked_once_and_bad_ones_every_time():
    """The defaults with the same plain keywords are one checked object; a bad value is refused
    each time, also after a good one of equal value but another type (True is not 1)."""
    from imij_plugins.options import DEFAULTS

    for effort in range(1, 10):  # more keyword sets than the cache holds: it starts again, and keeps the newest
        for threads in range(1, 9):
            assert DEFAULTS.replace(threads=threads, effort=effort) is DEFAULTS.replace(effort=effort, threads=threads)
    assert DEFAULTS.replace(effort=7, threads=1) == EncodeOptions(effort=7, threads=1)
    assert DEFAULTS.replace(loop_count=2) == EncodeOptions(loop=2)
    assert DEFAULTS.replace(effort=np.int64(3)).effort == 3  # other types: checked every time
    for _ in range(2):
        with pytest.raises(ValueError, match="effort"):
            DEFAULTS.replace(effort=True)
        with pytest.raises(ValueError, match="threads"):
            imij_plugins.encode(IMAGE, threads=0)
    assert DEFAULTS.replace(checksum=True).checksum is True
    with pytest.raises(ValueError, match="checksum"):
        DEFAULTS.replace(checksum=1)


@pytest.mark.parametrize(("option", "value"), [("max_error", True), ("max_error", np.bool_(True)), ("effort", np.bool_(True)),
                                               ("effort", np.float64(5)), ("durations", [np.bool_(False)])])
def test_numpy_bools_and_floats_are_refused_where_python_ones_are(option, value):
    with pytest.raises(ValueError, match=option):
        EncodeOptions(**{option: value})


def test_numpy_numbers_are_taken_where_python_ones_are():
    options = EncodeOptions(effort=np.int64(3), max_error=np.float32(1.5), durations=[np.float32(0.1), 1, 0.5])
    assert (options.effort, options.max_error) == (3, 1.5)


def test_max_error_with_the_quick_codec_is_refused():
    with pytest.raises(ValueError, match="max_error"):
        EncodeOptions(codec="quick", max_error=2)


def test_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="stripes"):
        imij_plugins.encode(IMAGE, stripes=4)  # type: ignore[call-arg]


def test_options_object_and_keywords_combine_keywords_winning():
    options = EncodeOptions(codec="quick", effort=2)
    data = imij_plugins.encode(IMAGE, options, effort=4)
    with imij_plugins.open(data) as f:
        assert "quick_pixels" in f.features
        assert (f.read() == IMAGE).all()


@pytest.mark.parametrize("codec", ["entropy", "quick"])
def test_group_cols_as_wide_as_the_image_is_one_column_group(codec):
    for group_cols in (IMAGE.shape[1], IMAGE.shape[1] + 7, 0):
        data = imij_plugins.encode(IMAGE, codec=codec, group_cols=group_cols)
        assert (imij_plugins.read(data) == IMAGE).all()


def _images(draw: st.DrawFn) -> np.ndarray:
    dtype = draw(st.sampled_from([np.uint8, np.uint16, np.int16, np.uint32, np.float32, np.int64]))
    h, w = draw(st.integers(1, 19)), draw(st.integers(1, 23))
    c = draw(st.sampled_from([1, 3, 4]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.normal(0, 100, (h, w, c)).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, draw(st.sampled_from([3, 255, 4095, 1 << 20])))
    return rng.integers(lo, hi, (h, w, c), endpoint=True).astype(dtype)


OPTION_VALUES = {
    "codec": st.sampled_from(["entropy", "quick", "zip"]),
    "effort": st.integers(0, 10),
    "max_error": st.sampled_from([0, 0, 1, 3, -1]),
    "stripe_rows": st.one_of(st.none(), st.integers(-1, 40)),
    "group_cols": st.one_of(st.none(), st.integers(-1, 40)),
    "unit_table": st.sampled_from(["hint", "none", "filled", "empty", "tail", "bogus"]),
    "ordinals": st.booleans(),
    "checksum": st.booleans(),
    "pixel_checksum": st.booleans(),
    "threads": st.one_of(st.none(), st.integers(0, 3)),
    "previews": st.sampled_from([(), (2,), (4, 16), (1,)]),
}


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[np.ndarray], dict[str, object]]:
    first = _images(draw)
    count = draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["animation", "pages", "sequence"]))
    frames = [first] + [
        (first + np.asarray(i, first.dtype)) if kind == "animation" and draw(st.booleans()) else _images(draw)
        for i in range(1, count)
    ]
    options = {name: draw(values) for name, values in OPTION_VALUES.items() if draw(st.booleans())}
    if count > 1:
        options["kind"] = kind
        options["presentation"] = draw(st.sampled_from(["pages", "animation"]))
    return frames, options


def _bound(options: dict[str, object], dtype: np.dtype) -> int:
    """The largest difference a sample may show: near-lossless bounds only integer samples up to
    32 bits (2.6); every other type is written exactly."""
    max_error = int(options.get("max_error", 0))  # type: ignore[call-overload]
    return max_error if np.dtype(dtype) in (np.uint8, np.uint16, np.uint32, np.int32) else 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_every_accepted_combination_reads_back_and_every_other_is_a_value_error(case):
    frames, options = case
    image = frames[0] if len(frames) == 1 else frames
    try:
        data = imij_plugins.encode(image, **options)  # type: ignore[arg-type]
    except ValueError:
        with pytest.raises(ValueError):  # refused: the options, or frames an animation cannot hold
            _refusal(frames, options)
        return
    with imij_plugins.open(data) as f:
        assert f.n_frames == len(frames)
        for i, frame in enumerate(frames):
            if f.kind == "animation":
                continue  # compared below as canvases
            got = f.read(i)
            want = frame if frame.ndim == 3 else frame[:, :, None]
            _assert_within(got, want, _bound(options, frame.dtype))
        if f.kind == "animation":
            for i, frame in enumerate(frames):
                _assert_within(f.read(i), frame, _bound(options, frame.dtype))


def _refusal(frames: list[np.ndarray], options: dict[str, object]) -> None:
    """Raise the ValueError that explains why ``encode`` refused: the options, or the frames."""
    EncodeOptions(**options)  # type: ignore[arg-type]
    kind = options.get("kind", "animation")
    animated = kind == "animation" or (kind == "sequence" and options.get("presentation", "animation") == "animation")
    if len(frames) > 1 and animated and len({(f.shape, f.dtype) for f in frames}) > 1:
        raise ValueError("animation frames differ")


def _assert_within(got: np.ndarray, want: np.ndarray, bound: int) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    if bound == 0:
        assert got.tobytes() == want.tobytes()
    else:
        assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= bound


def test_a_files_own_kind_and_loop_count_write_it_back():
    """The reader's names are writer options too: ``kind`` "mixed pages" and ``loop_count``."""
    pages = [IMAGE, IMAGE[:10, :12, 0]]
    data = imij_plugins.encode(pages, kind="pages")
    with imij_plugins.open(data) as f:
        assert f.kind == "mixed pages"
        again = imij_plugins.encode([f.read(i) for i in range(f.n_frames)], kind=f.kind, loop_count=f.loop_count)
    assert again == data
    animation = imij_plugins.encode([IMAGE, IMAGE[::-1]], durations=0.1, loop_count=3)
    with imij_plugins.open(animation) as f:
        assert (f.kind, f.loop_count) == ("animation", 3)


def test_an_option_given_under_both_names_is_refused():
    with pytest.raises(TypeError, match="loop"):
        imij_plugins.encode([IMAGE, IMAGE], loop=1, loop_count=2)
