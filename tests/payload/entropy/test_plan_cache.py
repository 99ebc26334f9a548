"""prepare() keeps settled plans for like heads: a head seen before reuses its plan (and C
tables), a head that differs in anything the plan depends on is checked afresh."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import imij_plugins
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.head import ChannelMap


def _image(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 64, (12, 10, 3)).astype(np.uint8)


def _parsed(data: bytes):
    f = imij_plugins.open(data)
    return f, f.payload()


def test_like_heads_share_a_plan_and_decode_the_same():
    data = imij_plugins.encode(_image(1))
    f1, p1 = _parsed(data)
    f2, p2 = _parsed(bytes(data))
    assert p1.decoder.plan is p2.decoder.plan
    assert np.array_equal(f1.read(), _image(1)) and np.array_equal(f2.read(), _image(1))
    f1.close()
    f2.close()


def test_a_head_that_breaks_a_rule_is_checked_even_after_a_good_one():
    f, payload = _parsed(imij_plugins.encode(_image(2)))
    head, header = payload.head, payload.header
    prepare(header, head)  # settled and kept
    bad = dataclasses.replace(head, maps=[ChannelMap(10, 8, 0), *head.maps[1:]])  # 2.1: mode is closed
    with pytest.raises(Corrupt):
        prepare(header, bad)
    wide = dataclasses.replace(header, sample=1)  # the same head bytes under u16 samples: another plan
    assert prepare(wide, head).plan is not prepare(header, head).plan
    f.close()


def test_different_models_get_their_own_plan():
    _, a = _parsed(imij_plugins.encode(_image(3)))
    _, b = _parsed(imij_plugins.encode(np.zeros((12, 10, 3), np.uint8) + np.arange(10, dtype=np.uint8)[None, :, None]))
    assert a.head.models != b.head.models
    assert a.decoder.plan is not b.decoder.plan
