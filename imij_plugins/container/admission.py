"""Admission (0.1): the header's feature set against the features this implementation decodes."""

from __future__ import annotations

from imij_plugins.errors import Unsupported
from imij_plugins.registry.features import FeatureId, feature_name

# The features this package decodes today; every other id (known or not) is Unsupported.
IMPLEMENTED: frozenset[int] = frozenset(
    {
        FeatureId.SIGNED_SAMPLES,
        FeatureId.WIDE_SAMPLES,
        FeatureId.SAMPLES_32,
        FeatureId.ALPHA_INTERPRETATION,
        FeatureId.PIXEL_MODELS,
        FeatureId.QUICK_PIXELS,
        FeatureId.QUICK_BIT_SMARTS,
        FeatureId.UNIT_ORDINALS,
        FeatureId.MIXED_PAGES,
        FeatureId.SEQUENCE_ITEMS,
        FeatureId.NEAR_LOSSLESS,
        FeatureId.FLOAT_SHIFT,
        FeatureId.OFFSET_MAP,
        FeatureId.VALUE_TABLES,
        FeatureId.BILEVEL,
        FeatureId.TEMPLATE_PALETTES,
    }
)


def admit(features: frozenset[int]) -> None:
    """Raise Unsupported naming every feature of ``features`` this reader does not implement."""
    if features <= IMPLEMENTED:  # the common case, without building the difference
        return
    missing = sorted(features - IMPLEMENTED)
    if missing:
        names = ", ".join(f"{feature_name(f)} ({f})" for f in missing)
        raise Unsupported(f"file needs features this reader does not implement: {names}")
