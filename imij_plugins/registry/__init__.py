"""The spec's tables as Python data: features (0.1), profiles (0.2), record ids (1), chunk tags (1.1).

Both ``records`` and ``chunks`` define ``is_critical`` (an odd record id; an upper-case
first tag letter); here they are re-exported as ``is_critical_record`` and
``is_critical_tag``. Import the submodule for the plain name.
"""

from imij_plugins.registry import chunks, features, profiles, records
from imij_plugins.registry.chunks import (
    AFTER_DATA,
    ANIM,
    AXES,
    BEFORE_DATA,
    CALB,
    CATG,
    CHUNK_TAGS,
    CLLI,
    CORD,
    CORG,
    CSUM,
    DATA,
    DWHI,
    EXIF,
    FRAM,
    GMAP,
    ICCP,
    KNOWN_TAGS,
    KVMD,
    MCMP,
    MDCV,
    ONCE,
    PDAT,
    PIDX,
    PRVW,
    PSUM,
    SLOC,
    SMDT,
    SMDT_MAX,
    UIDX,
    XMP,
    ChunkTag,
    is_public,
    is_safe_to_copy,
    is_valid_tag,
    reserved_bit_set,
)
from imij_plugins.registry.chunks import is_critical as is_critical_tag
from imij_plugins.registry.features import (
    FEATURES,
    MAX_KNOWN_FEATURE,
    Feature,
    FeatureId,
    feature_id,
    feature_name,
    is_known_feature,
)
from imij_plugins.registry.profiles import (
    PROFILES,
    Profile,
    features_outside_profiles,
    required_profiles,
)
from imij_plugins.registry.records import (
    DIRECTORY_ATTACHMENTS,
    DIRECTORY_PLANES,
    DIRECTORY_PRIMARY,
    DIRECTORY_TILES,
    FRAME_REFERENCE,
    HEAD_AQ,
    HEAD_BIAS,
    HEAD_BILEVEL,
    HEAD_DC32,
    HEAD_EXACT,
    HEAD_EXPLICIT,
    HEAD_KEEP,
    HEAD_LAYOUTS,
    HEAD_NATIVE_COMPONENTS,
    HEAD_NEAR,
    HEAD_SMALL_TRANSFORMS,
    HEAD_SUPERBLOCKS,
    HEAD_TEMPLATE,
    HEAD_TRANSFORM,
    HEAD_UNIT_ORDINALS,
    HEAD_UNIT_RESERVE,
    HEAD_UNIT_TABLE,
    HEADER_CHECKSUM,
    HEADER_LOCATOR,
    OVERLAPS,
    RECORDS,
    RETIRED_HEADER_IDS,
    UNIT_AC,
    UNIT_AC_SIDE,
    UNIT_ALPHA,
    UNIT_ALPHA_SIDE,
    UNIT_DC,
    UNIT_DC_SIDE,
    UNIT_EXACT,
    UNIT_EXACT_SIDE,
    UNIT_NATIVE_COMPONENTS,
    UNIT_NATIVE_COMPONENTS_SIDE,
    UNIT_STRIPE,
    UNIT_STRIPE_SIDE,
    RecordId,
    records_in,
)
from imij_plugins.registry.records import is_critical as is_critical_record

__all__ = [
    # submodules
    "chunks", "features", "profiles", "records",
    # features (0.1)
    "FEATURES", "MAX_KNOWN_FEATURE", "Feature", "FeatureId", "feature_id", "feature_name", "is_known_feature",
    # profiles (0.2)
    "PROFILES", "Profile", "features_outside_profiles", "required_profiles",
    # records (1)
    "OVERLAPS", "RECORDS", "RETIRED_HEADER_IDS", "RecordId", "is_critical_record", "records_in",
    "HEADER_CHECKSUM", "HEADER_LOCATOR",
    "HEAD_UNIT_TABLE", "HEAD_UNIT_RESERVE", "HEAD_EXACT", "HEAD_AQ", "HEAD_KEEP", "HEAD_DC32",
    "HEAD_EXPLICIT", "HEAD_BIAS", "HEAD_TRANSFORM", "HEAD_NEAR", "HEAD_SUPERBLOCKS",
    "HEAD_SMALL_TRANSFORMS", "HEAD_BILEVEL", "HEAD_TEMPLATE", "HEAD_UNIT_ORDINALS", "HEAD_LAYOUTS",
    "HEAD_NATIVE_COMPONENTS", "UNIT_NATIVE_COMPONENTS", "UNIT_NATIVE_COMPONENTS_SIDE", "FRAME_REFERENCE",
    "UNIT_DC", "UNIT_ALPHA", "UNIT_AC", "UNIT_EXACT", "UNIT_STRIPE",
    "UNIT_DC_SIDE", "UNIT_ALPHA_SIDE", "UNIT_AC_SIDE", "UNIT_EXACT_SIDE", "UNIT_STRIPE_SIDE",
    "DIRECTORY_PRIMARY", "DIRECTORY_TILES", "DIRECTORY_PLANES", "DIRECTORY_ATTACHMENTS",
    # chunks (1.1)
    "CHUNK_TAGS", "ChunkTag", "KNOWN_TAGS", "ONCE", "SMDT_MAX", "BEFORE_DATA", "AFTER_DATA",
    "is_critical_tag", "is_public", "is_safe_to_copy", "is_valid_tag", "reserved_bit_set",
    "DATA", "ICCP", "CORG", "EXIF", "XMP", "MDCV", "DWHI", "CLLI", "PRVW", "GMAP", "ANIM", "FRAM",
    "CSUM", "PSUM", "CALB", "AXES", "CORD", "SMDT", "CATG", "UIDX", "KVMD", "MCMP", "PDAT", "PIDX", "SLOC",
]
