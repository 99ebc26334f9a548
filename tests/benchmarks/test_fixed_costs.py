"""Smoke run of benchmarks/fixed_costs.py on tiny images: every codec, layout and sample type
reads back, the stage breakdown names its stages, the graphics rows time three decoders of the
same pixels; no timing is asserted."""

from __future__ import annotations

import numpy as np
import pytest
from bench_scripts import load_script

import imij_plugins


def _module():
    return load_script("fixed_costs")


def test_every_case_reads_back_and_the_table_has_a_row_each(capsys):
    bench = _module()
    rows = bench.main(["--sizes", "1,3", "--all", "--rounds", "1", "--reads", "1"])
    assert len(rows) == 2 * 3 * 3 * 2
    for case in bench.cases([3], list(bench.LAYOUTS), list(bench.DTYPES), ["entropy", "quick"]):
        image = case.image()
        assert np.array_equal(imij_plugins.read(case.encoded()), image.reshape(3, 3, -1))
    assert "16x16" not in capsys.readouterr().out  # only the sizes asked for


def test_profile_names_every_stage():
    bench = _module()
    (row,) = bench.main(["--sizes", "4", "--codecs", "entropy", "--rounds", "1", "--reads", "2", "--profile"])
    labels = [label for label, _ in row["stages"]]
    assert labels == ["read (total)", *(label for label, _, _ in bench.STAGES)]
    assert row["stages"][0][1] > 0


def test_callgrind_total_is_parsed():
    bench = _module()
    assert bench.parse_callgrind_total("events: Ir\nsummary: 1234\n") == 1234
    assert bench.parse_callgrind_total("events: Ir\ntotals: 99\n") == 99
    with pytest.raises(ValueError):
        bench.parse_callgrind_total("events: Ir\n")


def test_graphics_rows_time_three_decodes_of_the_same_pixels(capsys):
    bench = _module()
    rows = bench.main(["--sources", "palette-16,palette-dither", "--sizes", "8,12", "--rounds", "1", "--reads", "1"])
    assert [r["case"] for r in rows] == [bench.Case(s, lay, "u8", "entropy", src).name
                                         for src in ("palette-16", "palette-dither") for lay in ("rgb", "rgba") for s in (8, 12)]
    for row in rows:
        assert row["imi_us"] > 0 and row["pillow_us"] > 0 and row["png_us"] > 0
        assert row["ratio"] == row["png_us"] / row["imi_us"]
    assert "ratio" in capsys.readouterr().out


@pytest.mark.parametrize("source", ["palette-16", "palette-dither"])
def test_every_decoder_of_a_graphics_case_gives_its_pixels(source):
    bench = _module()
    case = bench.Case(16, "rgba", "u8", "entropy", source)
    image = case.image()
    assert image.shape == (16, 16, 4) and image.dtype == np.uint8
    assert len(np.unique(image.reshape(-1, 4), axis=0)) > 2  # palette graphics, not a flat image
    fns = bench.decoders(case)
    assert np.array_equal(fns["imi"](), image)
    for name in ("pillow", "png"):
        assert np.array_equal(np.asarray(fns[name]()), image), name


def test_corpus_crops_are_centred_and_take_the_channels_asked_for():
    bench = _module()
    name = bench.GRAPHICS[0]
    if not (bench.CORPUS / f"{name}.npy").exists():
        pytest.skip("the benchmark corpus is not built (python benchmarks/corpus.py)")
    full = np.load(bench.CORPUS / f"{name}.npy")
    crop = bench.corpus_crop(name, 32, 3)
    y, x = (full.shape[0] - 32) // 2, (full.shape[1] - 32) // 2
    assert np.array_equal(crop, full[y : y + 32, x : x + 32, :3])
    assert bench.fits(name, 32) and not bench.fits(name, 1 << 16)
