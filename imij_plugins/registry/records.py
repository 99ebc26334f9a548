"""The record and tag registry (spec section 1) as data: record ids, their lists and constants.

Every record list (header, payload heads, unit records, frame controls, the plane
directory) uses one framing: ``id varint, len varint, payload``. An odd id is critical
(an unknown one is Unsupported), an even id ignorable (skipped). Header and payload
head ids share one id space; unit records, frame records and plane-directory entries
overlap it only in the spec's closed list of named pairs (OVERLAPS).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RecordId:
    """One row of the section 1 registry table; the text columns are the spec's words.

    ``feature`` is the gating feature's spec name, or None where the table says "none".
    """

    id: int
    lists: str
    meaning: str
    critical: bool
    feature: str | None
    constant: str


# 1: "Record and tag registry", in table order
# (columns: id, lists, meaning, critical or ignorable, feature, constant).
RECORDS: tuple[RecordId, ...] = (
    RecordId(2, 'header', 'file checksum announcement', False, None, 'HEADER_CHECKSUM'),
    RecordId(4, 'header', 'DATA locator', False, None, 'HEADER_LOCATOR'),
    RecordId(10, 'lossless and lossy heads', 'unit table hint', False, None, 'HEAD_UNIT_TABLE'),
    RecordId(12, 'lossless and lossy heads', 'unit table reservation', False, None, 'HEAD_UNIT_RESERVE'),
    RecordId(5, 'lossy head', 'exact blocks declaration', True, 'exact_blocks', 'HEAD_EXACT'),
    RecordId(7, 'lossy head', 'AQ block codes', True, 'lossy', 'HEAD_AQ'),
    RecordId(9, 'lossy head', 'keep blocks', True, 'lossy', 'HEAD_KEEP'),
    RecordId(11, 'lossy head', 'i32 DC image', True, 'samples_32', 'HEAD_DC32'),
    RecordId(13, 'lossy head', 'explicit quantization tables', True, 'explicit_tables', 'HEAD_EXPLICIT'),
    RecordId(15, 'lossy head', 'reconstruction bias', True, 'recon_bias', 'HEAD_BIAS'),
    RecordId(17, 'lossy head', 'color transform', True, 'color_transform', 'HEAD_TRANSFORM'),
    RecordId(19, 'lossless head', 'near-lossless bounds', True, 'near_lossless', 'HEAD_NEAR'),
    RecordId(21, 'lossy head', 'superblocks declaration', True, 'superblocks', 'HEAD_SUPERBLOCKS'),
    RecordId(23, 'lossy head', 'joint superblock and small-transform map', True, 'small_transforms', 'HEAD_SMALL_TRANSFORMS'),
    RecordId(25, 'lossless head', 'bilevel probability table', True, 'bilevel', 'HEAD_BILEVEL'),
    RecordId(35, 'lossless head', 'template palette tables', True, 'template_palettes', 'HEAD_TEMPLATE'),
    RecordId(37, 'lossless and lossy heads', 'unit record ordinals', True, 'unit_ordinals', 'HEAD_UNIT_ORDINALS'),
    RecordId(27, 'lossy head', 'channel layouts', True, 'channel_layouts', 'HEAD_LAYOUTS'),
    RecordId(29, 'native head', 'native component tables and band geometry', True, 'native_components', 'HEAD_NATIVE_COMPONENTS'),
    RecordId(31, 'unit records', 'native component MCU row band', True, 'native_components', 'UNIT_NATIVE_COMPONENTS'),
    RecordId(33, 'frame records', 'earlier image ordinal and decoded raster hash', True, 'sequence_items', 'FRAME_REFERENCE'),
    RecordId(30, 'unit side records', 'native component band side record', False, None, 'UNIT_NATIVE_COMPONENTS_SIDE'),
    RecordId(1, 'unit records', 'DC image stripe', True, 'lossy', 'UNIT_DC'),
    RecordId(3, 'unit records', 'alpha image stripe', True, 'lossy', 'UNIT_ALPHA'),
    RecordId(5, 'unit records', 'AC stripe', True, 'lossy', 'UNIT_AC'),
    RecordId(7, 'unit records', 'exact image stripes', True, 'exact_blocks', 'UNIT_EXACT'),
    RecordId(9, 'unit records', 'lossless stripe', True, None, 'UNIT_STRIPE'),
    RecordId(0, 'unit side records', 'DC side record', False, None, 'UNIT_DC_SIDE'),
    RecordId(2, 'unit side records', 'alpha side record', False, None, 'UNIT_ALPHA_SIDE'),
    RecordId(4, 'unit side records', 'AC side record', False, None, 'UNIT_AC_SIDE'),
    RecordId(6, 'unit side records', 'exact side record', False, None, 'UNIT_EXACT_SIDE'),
    RecordId(8, 'unit side records', 'lossless stripe side record', False, None, 'UNIT_STRIPE_SIDE'),
    RecordId(1, 'plane directory', 'primary image', True, None, 'DIRECTORY_PRIMARY'),
    RecordId(3, 'plane directory', 'tile data', True, None, 'DIRECTORY_TILES'),
    RecordId(5, 'plane directory', 'plane descriptions', True, None, 'DIRECTORY_PLANES'),
    RecordId(7, 'plane directory', 'attachments', True, None, 'DIRECTORY_ATTACHMENTS'),
)

# 1: one module constant per registry row, named by its constant column.
HEADER_CHECKSUM: int = 2
HEADER_LOCATOR: int = 4
HEAD_UNIT_TABLE: int = 10
HEAD_UNIT_RESERVE: int = 12
HEAD_EXACT: int = 5
HEAD_AQ: int = 7
HEAD_KEEP: int = 9
HEAD_DC32: int = 11
HEAD_EXPLICIT: int = 13
HEAD_BIAS: int = 15
HEAD_TRANSFORM: int = 17
HEAD_NEAR: int = 19
HEAD_SUPERBLOCKS: int = 21
HEAD_SMALL_TRANSFORMS: int = 23
HEAD_BILEVEL: int = 25
HEAD_TEMPLATE: int = 35
HEAD_UNIT_ORDINALS: int = 37
HEAD_LAYOUTS: int = 27
HEAD_NATIVE_COMPONENTS: int = 29
UNIT_NATIVE_COMPONENTS: int = 31
FRAME_REFERENCE: int = 33
UNIT_NATIVE_COMPONENTS_SIDE: int = 30
UNIT_DC: int = 1
UNIT_ALPHA: int = 3
UNIT_AC: int = 5
UNIT_EXACT: int = 7
UNIT_STRIPE: int = 9
UNIT_DC_SIDE: int = 0
UNIT_ALPHA_SIDE: int = 2
UNIT_AC_SIDE: int = 4
UNIT_EXACT_SIDE: int = 6
UNIT_STRIPE_SIDE: int = 8
DIRECTORY_PRIMARY: int = 1
DIRECTORY_TILES: int = 3
DIRECTORY_PLANES: int = 5
DIRECTORY_ATTACHMENTS: int = 7

# 1: "Existing overlaps (named pairs, no wildcard exemptions)": the closed list of
# constants that share an id across lists. No new assignment may add to it.
OVERLAPS: frozenset[frozenset[str]] = frozenset(
    frozenset(pair)
    for pair in (
        ("HEADER_CHECKSUM", "UNIT_ALPHA_SIDE"),
        ("HEADER_LOCATOR", "UNIT_AC_SIDE"),
        ("HEAD_EXACT", "UNIT_AC"),
        ("HEAD_EXACT", "DIRECTORY_PLANES"),
        ("HEAD_AQ", "UNIT_EXACT"),
        ("HEAD_AQ", "DIRECTORY_ATTACHMENTS"),
        ("HEAD_KEEP", "UNIT_STRIPE"),
        ("UNIT_DC", "DIRECTORY_PRIMARY"),
        ("UNIT_ALPHA", "DIRECTORY_TILES"),
        ("UNIT_AC", "DIRECTORY_PLANES"),
        ("UNIT_EXACT", "DIRECTORY_ATTACHMENTS"),
    )
)

BY_CONSTANT: dict[str, RecordId] = {r.constant: r for r in RECORDS}

# 1.0: header ids 1 and 3 held version 1's required-profiles record and mixed-pages
# capability; they are retired (never reused), so a file carrying them is Unsupported.
RETIRED_HEADER_IDS: frozenset[int] = frozenset({1, 3})

# The single lists the table's "lists" column names ("lossless and lossy heads" is two).
LISTS: tuple[str, ...] = (
    "header",
    "lossless head",
    "lossy head",
    "native head",
    "unit records",
    "unit side records",
    "frame records",
    "plane directory",
)


def _lists_of(row: RecordId) -> frozenset[str]:
    """The single lists a row's "lists" cell names."""
    if row.lists == "lossless and lossy heads":
        return frozenset({"lossless head", "lossy head"})
    return frozenset({row.lists})


def records_in(list_name: str) -> dict[int, RecordId]:
    """The registry rows of one list (one of LISTS), by id: the ids a reader of it knows."""
    if list_name not in LISTS:
        raise KeyError(list_name)
    return {r.id: r for r in RECORDS if list_name in _lists_of(r)}


def is_critical(record_id: int) -> bool:
    """Whether a record id is critical (1: odd ids are critical, even ids ignorable)."""
    return record_id & 1 == 1


def side_record_id(main_id: int) -> int:
    """The id of a main unit record's optional side record (2.7: kind - 1, even, ignorable)."""
    if not is_critical(main_id):
        raise ValueError(f"unit record {main_id} is not a main (odd) record")
    return main_id - 1
