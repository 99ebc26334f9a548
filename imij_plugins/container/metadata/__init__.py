"""Typed parsers and writers for metadata chunk payloads (1.1, 1.1.1, 1.2, 1.3 kVMD, 1.5): pure functions over bytes.

iCCP and xMPp payloads stay raw bytes (1.1) and have no module here; eXIf payloads stay raw bytes
too, and ``exif`` edits them in place (dpi tags) without moving any IFD.
"""

from imij_plugins.container.metadata.gainmap import GainMap
from imij_plugins.container.metadata.hdr import ContentLightLevel, DiffuseWhite, MasteringDisplay
from imij_plugins.container.metadata.item import Attribute, AttrType, ItemMetadata, read_item_metadata
from imij_plugins.container.metadata.origin import ColorOrigin, read_color_origin
from imij_plugins.container.metadata.science import (
    AttachmentEntry,
    Axes,
    Axis,
    AxisLevel,
    Calibration,
    Categories,
    Category,
    ChannelCalibration,
    Coordinates,
    MalformedRecord,
    PlaneSetRecords,
    RecordReport,
    ScienceRecords,
    StructuredMetadata,
    UnknownRecord,
    encode_attachment,
    parse_record,
    plane_set_records,
    read_attachment,
    science_chunks,
    science_records,
)

__all__ = [
    "AttachmentEntry",
    "AttrType",
    "Attribute",
    "Axes",
    "Axis",
    "AxisLevel",
    "Calibration",
    "Categories",
    "Category",
    "ChannelCalibration",
    "ColorOrigin",
    "ContentLightLevel",
    "Coordinates",
    "DiffuseWhite",
    "GainMap",
    "ItemMetadata",
    "MalformedRecord",
    "MasteringDisplay",
    "PlaneSetRecords",
    "RecordReport",
    "ScienceRecords",
    "StructuredMetadata",
    "UnknownRecord",
    "encode_attachment",
    "parse_record",
    "plane_set_records",
    "read_attachment",
    "read_color_origin",
    "read_item_metadata",
    "science_chunks",
    "science_records",
]
