"""decoder's settled maps (2.1, 2.2): heads with the same header fields and maps share one Layout
across plans (files of one kind differ in their models), and maps that break 2.1 are refused on
every read, never kept."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import imij_plugins
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy import decoder
from imij_plugins.payload.head import ChannelMap


def _header_head(data: bytes):
    payload = imij_plugins.open(data).payload()
    return payload.header, payload.head


def test_like_files_share_the_layout_not_the_plan() -> None:
    rng = np.random.default_rng(3)
    noise = rng.integers(0, 256, (16, 16, 4), dtype=np.uint8)
    images = [noise, np.sort(noise, axis=1)]  # the same values (so the same maps), other models
    files = [imij_plugins.encode(a) for a in images]
    decoder._plans.clear()
    decoder._layouts.clear()
    plans = [decoder.prepare(*_header_head(f)).plan for f in files]
    assert plans[0] is not plans[1] and plans[0].model_set is not plans[1].model_set
    assert plans[0].slots is plans[1].slots and plans[0].chans is plans[1].chans
    assert len(decoder._layouts) == 1
    for data, image in zip(files, images):
        assert np.array_equal(imij_plugins.read(data).reshape(image.shape), image)


def test_bad_maps_are_refused_on_every_read() -> None:
    header, head = _header_head(imij_plugins.encode(np.zeros((8, 8, 3), np.uint8)))
    bad = dataclasses.replace(head, maps=[ChannelMap(0, 9, 0), *head.maps[1:]])  # 2.1: bits 9 above D = 8
    decoder._layouts.clear()
    for _ in range(2):
        with pytest.raises(Corrupt, match="above the container depth"):
            decoder.prepare(header, bad)
    assert not decoder._layouts
