"""Remote reads over a local S3 API (moto's server mode) through s3fs: the same bounds as HTTP."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins as ip
from imij_plugins.remote import RemoteTimeout


def test_region_of_the_bound_file(s3, large) -> None:
    """Issue 40's bound over S3: a 64x64 region in at most 2% of the file's bytes and 12 requests."""
    img, data = large
    url = s3.put("bound", "big.imi", data)
    s3.counts.reset()
    with ip.open(url, storage_options=s3.options) as f:
        np.testing.assert_array_equal(f.read(region=(2000, 1000, 64, 64)), img[1000:1064, 2000:2064])
        for x, y in ((0, 0), (4000, 4000), (1000, 3000)):
            np.testing.assert_array_equal(f.read(region=(x, y, 64, 64)), ip.read(data, region=(x, y, 64, 64)))
    assert s3.counts.gets <= 12
    assert s3.counts.bytes <= 0.02 * len(data)


def test_full_read_fetches_the_file_once(s3, large) -> None:
    img, data = large
    url = s3.put("full", "big.imi", data)
    s3.counts.reset()
    with ip.open(url, storage_options=s3.options) as f:
        f.read(region=(100, 100, 64, 64))
        np.testing.assert_array_equal(f.read(), img)
    assert s3.counts.bytes == len(data)  # nothing fetched twice
    assert s3.counts.gets > 4  # in parallel ranges


def test_small_file_equal_local(s3, small) -> None:
    img, data = small
    url = s3.put("small", "s.imi", data)
    np.testing.assert_array_equal(ip.read(url, region=(17, 300, 200, 100), storage_options=s3.options),
                                  ip.read(data, region=(17, 300, 200, 100)))
    np.testing.assert_array_equal(ip.read(url, storage_options=s3.options), img)


def test_missing_key(s3, small) -> None:
    s3.put("missing", "there.imi", small[1])
    with pytest.raises(FileNotFoundError):
        ip.open("s3://missing/none.imi", storage_options=s3.options)
    with pytest.raises(FileNotFoundError):
        ip.open("s3://no-such-bucket/none.imi", storage_options=s3.options)


def test_a_stalled_get_times_out(s3, small) -> None:
    """The ``timeout`` storage option bounds s3fs's requests too (its own retries included)."""
    url = s3.put("stall", "s.imi", small[1])
    with ip.open(url, storage_options={**s3.options, "timeout": 0.5}) as f:
        s3.stall = True
        try:
            with pytest.raises(RemoteTimeout):
                f.read()
        finally:
            s3.stall = False
