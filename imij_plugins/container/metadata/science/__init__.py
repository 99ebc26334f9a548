"""Science records (1.5): cALB, aXES, cORD, sMDT and cATG, their cross-record rules, and the plane-set attachment.

Each record type parses from and writes to its chunk payload. A parse raises ``UnknownRecord`` for a
record the reader skips (an unknown version, an sMDT of unknown format) and ``MalformedRecord`` for any
other violation; ``science_records`` turns both into per-record reports, because a malformed record
never fails an image decode (1.5).
"""

from imij_plugins.container.metadata.science._common import MAX_CHANNELS, VERSION, MalformedRecord, UnknownRecord
from imij_plugins.container.metadata.science.axes import (
    BIND_CHANNELS,
    BIND_COLUMNS,
    BIND_COORDINATE,
    BIND_FRAMES,
    BIND_ROWS,
    KIND_CHANNEL,
    KIND_OTHER,
    KIND_SPACE,
    KIND_TIME,
    MAX_AXES,
    MAX_LEVELS,
    Axes,
    Axis,
    AxisLevel,
)
from imij_plugins.container.metadata.science.calibration import MAX_NODATA, Calibration, ChannelCalibration
from imij_plugins.container.metadata.science.categories import MAX_CATEGORIES, Categories, Category
from imij_plugins.container.metadata.science.coordinates import MAX_COORDINATES, Coordinates
from imij_plugins.container.metadata.science.plane_sets import (
    AttachmentEntry,
    PlaneSetRecords,
    encode_attachment,
    plane_set_records,
    read_attachment,
)
from imij_plugins.container.metadata.science.reports import (
    MALFORMED,
    PARSED,
    SCIENCE_TAGS,
    UNKNOWN,
    Record,
    RecordReport,
    ScienceRecords,
    Status,
    parse_record,
    science_chunks,
    science_records,
)
from imij_plugins.container.metadata.science.structured import (
    FORMAT_CBOR,
    FORMAT_JSON,
    FORMAT_TEXT,
    MAX_SCHEMA,
    StructuredMetadata,
)

__all__ = [
    "AttachmentEntry",
    "Axes",
    "Axis",
    "AxisLevel",
    "BIND_CHANNELS",
    "BIND_COLUMNS",
    "BIND_COORDINATE",
    "BIND_FRAMES",
    "BIND_ROWS",
    "Calibration",
    "Categories",
    "Category",
    "ChannelCalibration",
    "Coordinates",
    "encode_attachment",
    "FORMAT_CBOR",
    "FORMAT_JSON",
    "FORMAT_TEXT",
    "KIND_CHANNEL",
    "KIND_OTHER",
    "KIND_SPACE",
    "KIND_TIME",
    "MALFORMED",
    "MalformedRecord",
    "MAX_AXES",
    "MAX_CATEGORIES",
    "MAX_CHANNELS",
    "MAX_COORDINATES",
    "MAX_LEVELS",
    "MAX_NODATA",
    "MAX_SCHEMA",
    "parse_record",
    "PARSED",
    "plane_set_records",
    "PlaneSetRecords",
    "read_attachment",
    "Record",
    "RecordReport",
    "science_chunks",
    "science_records",
    "SCIENCE_TAGS",
    "ScienceRecords",
    "Status",
    "StructuredMetadata",
    "UNKNOWN",
    "UnknownRecord",
    "VERSION",
]
