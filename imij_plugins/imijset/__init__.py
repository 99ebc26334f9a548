"""IMIJ-Set archives (.imijset): crash-safe append-only archives of IMI blobs with indexed queries.

``open(path, mode)`` returns an ``Archive``; see docs/IMIJSET.md for the API and its guarantees.
"""

from imij_plugins.imijset.archive import Archive, VerifyReport, open
from imij_plugins.imijset.autocompact import AutoCompact
from imij_plugins.imijset.entries import Description, Entry, Summary, describe
from imij_plugins.imijset.metadata import I64, Metadata
from imij_plugins.imijset.pyramid import (
    CATALOG_KEY,
    PyramidLevel,
    append_pyramid,
    decode_catalog,
    encode_catalog,
    read_tile,
)
from imij_plugins.imijset.query import ANY
from imij_plugins.imijset.sequence import SequenceIndex, SequenceRecord, SequenceReference, encode_sequence_index

__all__ = [
    "ANY",
    "CATALOG_KEY",
    "Archive",
    "AutoCompact",
    "Description",
    "Entry",
    "I64",
    "Metadata",
    "PyramidLevel",
    "SequenceIndex",
    "SequenceRecord",
    "SequenceReference",
    "Summary",
    "VerifyReport",
    "append_pyramid",
    "decode_catalog",
    "describe",
    "encode_catalog",
    "encode_sequence_index",
    "open",
    "read_tile",
]
