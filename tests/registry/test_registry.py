"""Direct tests of the registry data and helpers (no spec file needed)."""

from __future__ import annotations

import itertools

import pytest

from imij_plugins import registry
from imij_plugins.registry import chunks, features, profiles, records
from imij_plugins.registry.features import FeatureId as F
from imij_plugins.registry.profiles import features_outside_profiles, required_profiles

# ---------------------------------------------------------------- features (0.1)


def test_feature_ids_unique_and_contiguous() -> None:
    values = [int(m) for m in F]
    assert values == list(range(27))
    assert [f.id for f in features.FEATURES] == values
    assert [f.name.upper() for f in features.FEATURES] == [m.name for m in F]
    assert F.SEED_BANK_1 == 0 and F.EXACT_BLOCKS == 1 and F.SIGNED_SAMPLES == 2
    assert F.UNIT_ORDINALS == 26


def test_feature_names() -> None:
    assert features.feature_name(F.SAMPLES_32) == "samples_32"
    assert features.feature_name(27) == "feature 27"
    assert features.feature_id("lossy") == F.LOSSY == 16
    assert features.is_known_feature(26) and not features.is_known_feature(27)
    with pytest.raises(KeyError):
        features.feature_id("no_such_feature")


# ---------------------------------------------------------------- profiles (0.2)


@pytest.mark.parametrize(
    ("fs", "expected"),
    [
        (set(), ["Lossless 0.1"]),
        ({F.SIGNED_SAMPLES}, ["Lossless 0.2"]),
        ({F.SAMPLES_32}, ["Lossless 0.1", "Extended 0.1"]),
        ({F.WIDE_SAMPLES, F.SAMPLES_32}, ["Lossless 0.1", "Extended 0.2"]),
        ({F.QUICK_PIXELS}, ["Lossless 0.1"]),
        ({F.LOSSY, F.SAMPLES_32}, ["Lossless 0.1", "Extended 0.1", "Lossy 0.1"]),
        ({F.LOSSY, F.RECON_BIAS}, ["Lossless 0.1", "Lossy 0.4"]),
        ({F.LOSSY, F.SEED_BANK_1, F.EXACT_BLOCKS}, ["Lossless 0.1", "Lossy 0.2", "Compact 0.1"]),
        ({F.LOSSY, F.SMALL_TRANSFORMS}, ["Lossless 0.1", "Lossy 0.1", "Compact 0.3"]),
        ({F.VALUE_TABLES, F.TEMPLATE_PALETTES}, ["Lossless 0.1", "Scientific 0.2", "Bilevel 0.2"]),
    ],
)
def test_required_profiles(fs: set[int], expected: list[str]) -> None:
    assert required_profiles(fs) == expected


def test_features_outside_profiles() -> None:
    assert features_outside_profiles({F.QUICK_PIXELS}) == [22]
    assert features_outside_profiles({F.LOSSY, F.SAMPLES_32}) == []
    outside = features_outside_profiles(F)
    assert F.MIXED_PAGES in outside and F.CHANNEL_LAYOUTS in outside  # 0.2 names these two
    assert features_outside_profiles({40}) == [40]  # unknown ids are in no profile either


def test_profiles_cumulative() -> None:
    for name in profiles.PROFILE_NAMES:
        vs = profiles.versions(name)
        assert [v.version for v in vs] == sorted(v.version for v in vs)
        for older, newer in itertools.pairwise(vs):
            assert older.features <= newer.features
    # every profile feature is a known feature, and no feature sits in two profiles
    seen: set[int] = set()
    for name in profiles.PROFILE_NAMES:
        fs = profiles.profile_features(name)
        assert not fs & seen and all(features.is_known_feature(f) for f in fs)
        seen |= fs
    assert profiles.PROFILES[0].label == "Lossless 0.1"


# ---------------------------------------------------------------- records (1)


def test_record_parity() -> None:
    for r in records.RECORDS:
        assert r.critical == (r.id % 2 == 1) == records.is_critical(r.id), r.constant
        assert getattr(records, r.constant) == r.id
        assert r.feature is None or features.feature_id(r.feature) >= 0


def test_record_constants() -> None:
    assert (records.HEADER_CHECKSUM, records.HEADER_LOCATOR) == (2, 4)
    assert (records.HEAD_UNIT_TABLE, records.HEAD_UNIT_RESERVE) == (10, 12)
    assert (records.HEAD_NEAR, records.HEAD_BILEVEL, records.HEAD_TEMPLATE) == (19, 25, 35)
    assert records.HEAD_UNIT_ORDINALS == 37
    assert (records.UNIT_STRIPE, records.UNIT_STRIPE_SIDE, records.UNIT_DC) == (9, 8, 1)
    assert records.FRAME_REFERENCE == 33
    assert records.side_record_id(records.UNIT_AC) == records.UNIT_AC_SIDE
    with pytest.raises(ValueError):
        records.side_record_id(4)


def test_overlaps_are_exactly_the_shared_ids() -> None:
    shared = {
        frozenset({a.constant, b.constant})
        for a, b in itertools.combinations(records.RECORDS, 2)
        if a.id == b.id
    }
    assert shared == records.OVERLAPS


def test_ids_unique_within_each_list() -> None:
    for name in records.LISTS:
        ids = [r.id for r in records.RECORDS if name in records._lists_of(r)]
        assert len(ids) == len(set(ids)), name
    assert sorted(records.records_in("header")) == [2, 4]
    assert set(records.records_in("lossless head")) == {10, 12, 19, 25, 35, 37}
    assert not records.RETIRED_HEADER_IDS & set(records.records_in("header"))


# ---------------------------------------------------------------- chunks (1.1)


def test_tag_predicates() -> None:
    assert chunks.is_critical(b"DATA") and chunks.is_public(b"DATA")
    assert not chunks.is_safe_to_copy(b"DATA") and not chunks.reserved_bit_set(b"DATA")
    assert not chunks.is_critical(b"iCCP") and chunks.is_public(b"iCCP")
    assert not chunks.is_safe_to_copy(b"iCCP")
    assert not chunks.is_critical(b"cSUM") and chunks.is_public(b"cSUM")
    assert not chunks.is_safe_to_copy(b"cSUM") and not chunks.reserved_bit_set(b"cSUM")
    assert chunks.is_safe_to_copy(b"cORg") and chunks.is_safe_to_copy(b"xMPp")
    assert not chunks.is_public(b"abCD") and chunks.reserved_bit_set(b"ABcD")
    assert chunks.is_valid_tag(b"DATA") and not chunks.is_valid_tag(b"DA1A")
    assert not chunks.is_valid_tag(b"DAT") and not chunks.is_valid_tag(b"DAT\xc1")


def test_chunk_sets() -> None:
    assert chunks.DATA in chunks.ONCE and chunks.PSUM in chunks.ONCE
    assert {chunks.CALB, chunks.AXES, chunks.CORD, chunks.CATG} <= chunks.ONCE
    assert not {chunks.PRVW, chunks.FRAM, chunks.SMDT, chunks.CORG} & chunks.ONCE
    assert chunks.ONCE <= chunks.KNOWN_TAGS
    assert {chunks.KVMD, chunks.MCMP, chunks.PDAT, chunks.PIDX, chunks.SLOC} <= chunks.KNOWN_TAGS
    assert chunks.SMDT_MAX == 64
    assert [t for t in chunks.KNOWN_TAGS if chunks.is_critical(t)] == [chunks.DATA]
    assert all(c.once == (c.code in chunks.ONCE) for c in chunks.CHUNK_TAGS)
    assert chunks.CORG != chunks.CORD and chunks.XMP == b"xMPp"


def test_package_reexports() -> None:
    for name in registry.__all__:
        assert hasattr(registry, name), name
    assert registry.is_critical_record is records.is_critical
    assert registry.is_critical_tag is chunks.is_critical
    assert registry.FeatureId is F and registry.RECORDS is records.RECORDS
