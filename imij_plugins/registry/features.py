"""The feature registry (spec 0.1): every critical capability a decoder may lack, as data.

A header's feature set (its mask plus what its fields imply) is the admission check:
a decoder that lacks a feature in it fails with Unsupported at the header. The rows
below copy the spec's feature table verbatim, so tests/registry/test_spec_proof.py
can compare them with IMI_SPEC.md row by row.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class FeatureId(enum.IntEnum):
    """Feature bit positions (0.1): bit i of the header's feature mask is feature i.

    Ids are frozen once shipped; a changed meaning gets a new id (0.1).
    """

    SEED_BANK_1 = 0
    EXACT_BLOCKS = 1
    SIGNED_SAMPLES = 2
    WIDE_SAMPLES = 3
    NEAR_LOSSLESS = 4
    FLOAT_SHIFT = 5
    MIXED_PAGES = 6
    DEQUANT_PRESETS = 7
    EXPLICIT_TABLES = 8
    RECON_BIAS = 9
    COLOR_TRANSFORM = 10
    OFFSET_MAP = 11
    SUPERBLOCKS = 12
    BILEVEL = 13
    CHANNEL_LAYOUTS = 14
    SAMPLES_32 = 15
    LOSSY = 16
    SMALL_TRANSFORMS = 17
    NATIVE_COMPONENTS = 18
    SEQUENCE_ITEMS = 19
    ALPHA_INTERPRETATION = 20
    PIXEL_MODELS = 21
    QUICK_PIXELS = 22
    QUICK_BIT_SMARTS = 23
    TEMPLATE_PALETTES = 24
    VALUE_TABLES = 25
    UNIT_ORDINALS = 26


@dataclass(frozen=True)
class Feature:
    """One row of the 0.1 feature table; the text columns are the spec's words."""

    id: int
    name: str
    declared_when: str
    gates: str


# 0.1: the feature table, in id order (columns: id, name, declared when, gates).
FEATURES: tuple[Feature, ...] = (
    Feature(0, 'seed_bank_1', 'a table blob uses bank-1 seed selectors', 'the lossy seed field (2.8) and the selector bit in its table blobs'),
    Feature(1, 'exact_blocks', 'the lossy payload has exact blocks', 'lossy head record 5, block code 1'),
    Feature(2, 'signed_samples', 'sample is 6 (i8) or 7 (i16)', 'those sample types'),
    Feature(3, 'wide_samples', 'sample is 8-10 (u64, i64, f64)', 'those sample types'),
    Feature(4, 'near_lossless', 'a lossless payload carries bounds', 'lossless head record 19 (2.6)'),
    Feature(5, 'float_shift', 'a coded channel uses map mode 8', 'that map mode (2.1)'),
    Feature(6, 'mixed_pages', 'aNIM kind 3', 'the kind-3 page grammar (1.3)'),
    Feature(7, 'dequant_presets', 'the lossy matrix id is 3, 4 or 5', 'those matrix ids (2.8)'),
    Feature(8, 'explicit_tables', 'the lossy matrix id is 63', 'that id and lossy head record 13'),
    Feature(9, 'recon_bias', 'the lossy payload has a reconstruction bias', 'lossy head record 15'),
    Feature(10, 'color_transform', 'the lossy payload has a color transform', 'lossy head record 17'),
    Feature(11, 'offset_map', 'a coded channel uses map mode 7', 'that map mode (32- and 64-bit samples only)'),
    Feature(12, 'superblocks', 'the lossy payload uses superblocks (lossy head record 21)', "that record, the partition map at the start of each lossy unit record and the merged blocks' reconstruction (2.9)"),
    Feature(13, 'bilevel', 'a lossless payload has bilevel stripes', 'lossless head record 25 and stripe layout bytes 0x81 and 0x82 (2.10)'),
    Feature(14, 'channel_layouts', 'the lossy payload has channel layouts (lossy head record 27)', 'that record: per-plane sampling, the smaller transforms and the adaptive selector (docs/LOSSY.md)'),
    Feature(15, 'samples_32', 'implied by sample 3-5 and 8-10; declared for an i32 DC image (lossy head record 11) and for frames or pages that need it', '32-bit sample coding: the 32-bit sample maps (2.1), ctx_shift (3.1/3.3), the second extra-bits pull (3.1), 32-bit arithmetic; lossy head record 11'),
    Feature(16, 'lossy', "implied by coding 1 or 2; declared for frames or pages that are lossy when the outer header's coding is 0", 'the lossy payload (2.8, docs/LOSSY.md)'),
    Feature(17, 'small_transforms', 'the lossy payload codes color planes as four 4x4 transforms (lossy head record 23)', 'that record, the joint partition map and 4x4 reconstruction (2.11)'),
    Feature(18, 'native_components', 'native quantized components in MCU row bands', 'native DATA head record 29 and unit record 31 (2.12)'),
    Feature(19, 'sequence_items', 'aNIM kind 4', 'unified per-item metadata and optional earlier-image reference (1.3)'),
    Feature(20, 'alpha_interpretation', 'alpha mode 2 or 3', 'explicit opaque alpha or undefined stored padding (1.0)'),
    Feature(21, 'pixel_models', 'channel layouts 5–7', 'native CMYK/Oklab storage and slot order (1.0, 2.2)'),
    Feature(22, 'quick_pixels', 'lossless head presence bit 3', 'exact sample-word packets and raw units (2.13)'),
    Feature(23, 'quick_bit_smarts', 'lossless head presence bit 4', 'exact byte-plane bit packing and optional packets (2.13.1)'),
    Feature(24, 'template_palettes', 'a lossless payload has template palette stripes', 'lossless head record 35 and stripe layout byte 0x83 (2.14)'),
    Feature(25, 'value_tables', 'a coded channel uses map mode 9', 'that map mode and its table (2.1)'),
    Feature(26, 'unit_ordinals', "a payload's main unit records carry 0-based ordinals", 'head record 37 and the leading ordinal varint of each main unit record (2.7)'),
)

_BY_ID: dict[int, Feature] = {f.id: f for f in FEATURES}
_BY_NAME: dict[str, Feature] = {f.name: f for f in FEATURES}

# 0.1: ids past the last known one are "unknown feature bits": Unsupported until implemented.
MAX_KNOWN_FEATURE: int = max(_BY_ID)


def feature_name(fid: int) -> str:
    """The spec name of feature ``fid`` (for messages), or ``"feature N"`` when the id is unknown."""
    feature = _BY_ID.get(int(fid))
    return feature.name if feature is not None else f"feature {int(fid)}"


def feature_id(name: str) -> FeatureId:
    """The id of the feature the spec calls ``name`` (e.g. ``"samples_32"``); KeyError when unknown."""
    return FeatureId(_BY_NAME[name].id)


def is_known_feature(fid: int) -> bool:
    """Whether this registry defines feature ``fid`` (an unknown bit is Unsupported, 0.1)."""
    return int(fid) in _BY_ID
