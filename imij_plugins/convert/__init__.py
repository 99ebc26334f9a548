"""Converting image collections into and out of IMI: readers by content, sinks, the per-file job."""

from imij_plugins.convert.pipeline import ConvertOptions, Record, convert_file, difference
from imij_plugins.convert.sinks import FORMATS, format_of
from imij_plugins.convert.sources import Decoded, Metadata, read_source

__all__ = ["FORMATS", "ConvertOptions", "Decoded", "Metadata", "Record", "convert_file", "difference", "format_of", "read_source"]
