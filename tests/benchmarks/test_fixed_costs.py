"""Smoke run of benchmarks/fixed_costs.py on tiny images: every codec, layout and sample type
reads back, the stage breakdown names its stages; no timing is asserted."""

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
