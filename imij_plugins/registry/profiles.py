"""The profile registry (spec 0.2): named, versioned feature sets for capability claims.

A decoder that advertises a profile version implements every feature in its set.
Versions are cumulative, so each ``Profile`` here holds the complete feature set of
that version (the spec's "as 0.2" repeats a set, "+ x" adds x to the previous one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from imij_plugins.registry.features import FeatureId as F


@dataclass(frozen=True)
class Profile:
    """One profile version and its complete (cumulative) feature set."""

    name: str
    version: str
    features: frozenset[int]

    @property
    def label(self) -> str:
        """The version as people write it, e.g. ``"Lossless 0.1"``."""
        return f"{self.name} {self.version}"


def _cumulative(name: str, steps: Iterable[tuple[str, Iterable[int]]]) -> tuple[Profile, ...]:
    """Expand a profile's per-version additions (0.2's "+ x" rows) into complete sets."""
    out: list[Profile] = []
    current: frozenset[int] = frozenset()
    for version, added in steps:
        current = current | frozenset(int(f) for f in added)
        out.append(Profile(name, version, current))
    return tuple(out)


# 0.2: the profile table, in table order; each step lists what the version adds.
PROFILES: tuple[Profile, ...] = (
    *_cumulative("Lossless", [
        ("0.1", ()),  # none: container, header, chunks, frames and pages, u8/u16/f16
        ("0.2", (F.SIGNED_SAMPLES,)),
        ("0.3", ()),  # as 0.2 (version 1's unit table)
    ]),
    *_cumulative("Extended", [
        ("0.1", (F.SAMPLES_32, F.OFFSET_MAP)),
        ("0.2", (F.WIDE_SAMPLES,)),
    ]),
    *_cumulative("Lossy", [
        ("0.1", (F.LOSSY,)),
        ("0.2", (F.SEED_BANK_1,)),
        ("0.3", ()),  # as 0.2 (version 1's unit table)
        ("0.4", (F.DEQUANT_PRESETS, F.EXPLICIT_TABLES, F.RECON_BIAS, F.COLOR_TRANSFORM)),
    ]),
    *_cumulative("Compact", [
        ("0.1", (F.EXACT_BLOCKS,)),  # needs Lossy
        ("0.2", (F.SUPERBLOCKS,)),
        ("0.3", (F.SMALL_TRANSFORMS,)),
    ]),
    *_cumulative("Scientific", [
        ("0.1", (F.NEAR_LOSSLESS, F.FLOAT_SHIFT)),
        ("0.2", (F.VALUE_TABLES,)),
    ]),
    *_cumulative("Bilevel", [
        ("0.1", (F.BILEVEL,)),
        ("0.2", (F.TEMPLATE_PALETTES,)),
    ]),
)

# 0.2: the profile names in table order; Lossless is the one every file needs.
PROFILE_NAMES: tuple[str, ...] = tuple(dict.fromkeys(p.name for p in PROFILES))
BASE_PROFILE = "Lossless"


def versions(name: str) -> tuple[Profile, ...]:
    """Every version of profile ``name``, oldest first (KeyError for an unknown name)."""
    found = tuple(p for p in PROFILES if p.name == name)
    if not found:
        raise KeyError(name)
    return found


def profile_features(name: str) -> frozenset[int]:
    """The union of a profile's features (its newest version's set, since sets are cumulative)."""
    return versions(name)[-1].features


def _lowest_covering(name: str, wanted: frozenset[int]) -> Profile:
    """The oldest version of ``name`` whose set holds every feature in ``wanted``."""
    for profile in versions(name):
        if wanted <= profile.features:
            return profile
    raise ValueError(f"no {name} version covers features {sorted(wanted)}")


def required_profiles(features: Iterable[int]) -> list[str]:
    """The profile versions a decoder needs for a header's feature set (0.2), e.g. ``["Lossless 0.1"]``.

    Always one Lossless version (every file needs it): the lowest covering the file's
    Lossless features. Then, in table order, every other profile holding any of the
    features, at its lowest version covering all of them. Features in no profile are
    left out here; ``features_outside_profiles`` reports them.
    """
    fs = frozenset(int(f) for f in features)
    out: list[str] = []
    for name in PROFILE_NAMES:
        wanted = fs & profile_features(name)
        if name == BASE_PROFILE or wanted:
            out.append(_lowest_covering(name, wanted).label)
    return out


def features_outside_profiles(features: Iterable[int]) -> list[int]:
    """The features of ``features`` that no profile contains, sorted (0.2: e.g. mixed_pages)."""
    covered = frozenset().union(*(p.features for p in PROFILES))
    return sorted({int(f) for f in features} - covered)
