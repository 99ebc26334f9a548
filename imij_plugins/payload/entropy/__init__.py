"""Entropy-coded lossless DATA payloads (2, 2.1-2.7, 3, 4): the Python reference decoder and
the syntax-complete writer.

Decoding: ``prepare(header, head)`` once per payload, then ``EntropyPayload.decode_unit`` per
unit record (units are independent, 2.3). Writing: ``encode_entropy_payload``.
"""

from imij_plugins.payload.entropy.decoder import (
    IMPLEMENTED_FEATURES,
    EntropyPayload,
    decode_entropy_payload,
    prepare,
)
from imij_plugins.payload.entropy.writer import (
    EncodedEntropy,
    EntropyOptions,
    MapChoice,
    ModelChoice,
    UnitChoice,
    encode_entropy_payload,
    header_for,
)

__all__ = [
    "IMPLEMENTED_FEATURES",
    "EncodedEntropy",
    "EntropyOptions",
    "EntropyPayload",
    "MapChoice",
    "ModelChoice",
    "UnitChoice",
    "decode_entropy_payload",
    "encode_entropy_payload",
    "header_for",
    "prepare",
]
