"""Quick unit mode 2: exact bit-smart byte planes (spec 2.13.1).

A mode-2 unit body (everything after the unit mode byte) holds N = channels * word_bytes
byte planes, in stored component order with the least-significant byte of each sample
first: plane ordinal p = c * word_bytes + b.  The body starts with N minimal LEB128 plane
body lengths, followed by the N bodies back to back, which fill the unit exactly.  Each
body is one kind byte and its content, and reconstructs one byte per pixel:

====  ==============================================================================
kind  content after the kind byte
====  ==============================================================================
0     exactly npixels raw bytes
1     a 2.13 packet stream (one stored component, 8-bit words) of npixels bytes
2     exactly one constant byte
3     base u8, mask u8, ceil(npixels * popcount(mask) / 8) LSB-first compact values
4     base u8, mask u8, the compact values as a one-component 8-bit packet stream
5     entry_count - 1 u8, strictly increasing entries, ceil(npixels * w / 8) packed
      LSB-first indices, w = ceil(log2(entry_count))
6     the kind-5 dictionary prefix, then the indices as a packet stream
7     exactly one earlier plane ordinal whose reconstructed bytes this plane repeats
====  ==============================================================================

Every malformed body raises :class:`~imij_plugins.errors.Corrupt`; an unknown kind raises
:class:`~imij_plugins.errors.Unsupported`.  Nothing else escapes for any body bytes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xxhash

from imij_plugins.errors import Corrupt, TooLarge, Unsupported
from imij_plugins.payload.counts import histogram
from imij_plugins.payload.quick.packets import decode_packets, encode_packets

__all__ = [
    "KIND_RAW",
    "KIND_PACKETS",
    "KIND_CONSTANT",
    "KIND_MASK",
    "KIND_MASK_PACKETS",
    "KIND_DICT",
    "KIND_DICT_PACKETS",
    "KIND_REPEAT",
    "decode_bitsmart",
    "encode_bitsmart",
    "pack_bits",
    "unpack_bits",
]

KIND_RAW = 0
KIND_PACKETS = 1
KIND_CONSTANT = 2
KIND_MASK = 3
KIND_MASK_PACKETS = 4
KIND_DICT = 5
KIND_DICT_PACKETS = 6
KIND_REPEAT = 7

_MAX_VARINT_BYTES = 10
LOOKUP_CHUNK = 1 << 13  # _lookup_into, _lookup, pack_bits: values per step (a multiple of 8)
_MAX_RUN = 62  # 2.13: one packet byte yields at most a 62-pixel run
_U64_LIMIT = 1 << 64
_BYTE_VALUES = np.arange(256, dtype=np.uint16)


# --------------------------------------------------------------------------- bit packing


def _word_dtype_bytes(width: int) -> int:
    """The smallest of 1, 2, 4 or 8 bytes that holds ``width`` bits."""
    for size in (1, 2, 4, 8):
        if width <= 8 * size:
            return size
    raise ValueError(f"bit width {width} exceeds 64")


def pack_bits(values: np.ndarray, width: int) -> bytes:
    """Pack each value into ``width`` bits, densely and LSB-first (spec section 0).

    Value ``i`` occupies stream bits ``i * width`` .. ``i * width + width - 1``, least
    significant bit first; stream bit ``j`` is bit ``j % 8`` of byte ``j // 8``.  The result
    is exactly ``ceil(len(values) * width / 8)`` bytes and its unused final bits are zero.
    Every value must be a non-negative integer below ``2 ** width`` (``width`` 0..64).
    """
    if not 0 <= width <= 64:
        raise ValueError(f"bit width {width} outside 0..64")
    flat = np.asarray(values).reshape(-1)
    if flat.size and flat.dtype.kind not in "ui":
        raise ValueError("pack_bits needs integer values")
    if flat.size and flat.dtype.kind == "i" and int(flat.min()) < 0:
        raise ValueError("pack_bits needs non-negative values")
    if width == 0:
        if flat.size and int(flat.max()) != 0:
            raise ValueError("a value does not fit in 0 bits")
        return b""
    if flat.size and width < 64 and int(flat.max()) >> width:
        raise ValueError(f"a value does not fit in {width} bits")
    size = _word_dtype_bytes(width)
    words = flat.astype(f"<u{size}", copy=False)
    # LOOKUP_CHUNK values (a multiple of 8: whole bytes) at a time: the bit array is a byte per bit
    out = bytearray()
    for start in range(0, words.size, LOOKUP_CHUNK):
        part = words[start : start + LOOKUP_CHUNK]
        bits = np.unpackbits(part.view(np.uint8).reshape(-1, size), axis=1, bitorder="little")
        out += np.packbits(bits[:, :width].reshape(-1), bitorder="little").tobytes()
    return bytes(out)


def unpack_bits(data, count: int, width: int) -> np.ndarray:
    """Read ``count`` values of ``width`` bits, densely packed LSB-first, from ``data``.

    The inverse of :func:`pack_bits`.  Bytes past the ``count * width`` bits are ignored (a
    caller checks the exact length and zero padding); fewer bits than needed is
    :class:`Corrupt`.  The values come back as the smallest unsigned dtype of 8, 16, 32 or
    64 bits that holds ``width`` bits.
    """
    if not 0 <= width <= 64:
        raise ValueError(f"bit width {width} outside 0..64")
    if count < 0:
        raise ValueError("negative value count")
    size = _word_dtype_bytes(max(width, 1))
    if width == 0 or count == 0:
        return np.zeros(count, dtype=f"u{size}")
    need = count * width
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size * 8 < need:
        raise Corrupt(f"bit-smart: {buf.size} packed bytes hold fewer than {count} {width}-bit values")
    bits = np.unpackbits(buf[: (need + 7) // 8], bitorder="little", count=need).reshape(count, width)
    words = np.packbits(bits, axis=1, bitorder="little")  # a value's bytes, its last one zero-padded
    del bits
    if words.shape[1] != size:
        full = np.zeros((count, size), dtype=np.uint8)
        full[:, : words.shape[1]] = words
        words = full
    return words.view(f"<u{size}").reshape(count).astype(f"u{size}", copy=False)


def _check_padding(packed, count: int, width: int, what: str) -> None:
    """Corrupt unless the bits after the ``count * width`` used bits of ``packed`` are zero."""
    used = (count * width) % 8
    if used and packed[-1] >> used:
        raise Corrupt(f"bit-smart: nonzero padding bits after the packed {what}")


# --------------------------------------------------------------------------- mask lookups


def _mask_positions(mask: int) -> list[int]:
    return [bit for bit in range(8) if (mask >> bit) & 1]


def _deposit_table(base: int, mask: int) -> np.ndarray:
    """Byte table: compact value v -> base with v's bit i placed at the i-th set bit of mask."""
    table = np.full(256, base, dtype=np.uint16)
    for index, position in enumerate(_mask_positions(mask)):
        table |= ((_BYTE_VALUES >> index) & 1) << position
    return table.astype(np.uint8)


def _extract_table(mask: int) -> np.ndarray:
    """Byte table: byte x -> its bits at the set bits of mask, gathered from bit 0 upwards."""
    table = np.zeros(256, dtype=np.uint16)
    for index, position in enumerate(_mask_positions(mask)):
        table |= ((_BYTE_VALUES >> position) & 1) << index
    return table.astype(np.uint8)


# --------------------------------------------------------------------------- varints


def _read_length(data, pos: int, ordinal: int) -> tuple[int, int]:
    """One minimal LEB128 plane-body length at ``pos``: (value, position after it)."""
    value = 0
    for index in range(_MAX_VARINT_BYTES):
        if pos >= len(data):
            raise Corrupt(f"bit-smart: plane {ordinal} body length truncated")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            if byte == 0 and index:
                raise Corrupt(f"bit-smart: plane {ordinal} body length is not minimally encoded")
            if value >= _U64_LIMIT:
                raise Corrupt(f"bit-smart: plane {ordinal} body length exceeds 64 bits")
            return value, pos
    raise Corrupt(f"bit-smart: plane {ordinal} body length varint is longer than 10 bytes")


def _write_length(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


# --------------------------------------------------------------------------- decoding


def _plane_count(npixels: int, channels: int, word_bytes: int) -> int:
    if npixels < 0 or channels < 1 or word_bytes < 1:
        raise ValueError(
            f"bit-smart geometry npixels={npixels} channels={channels} word_bytes={word_bytes}"
        )
    return channels * word_bytes


def _packed_size(npixels: int, width: int) -> int:
    return (npixels * width + 7) // 8


def _check_stream_room(stream: memoryview, npixels: int, where: str) -> None:
    """Corrupt when a packet stream is too short for npixels even as 62-pixel runs.

    Checked before the output is allocated, so a tiny body cannot claim a huge plane.
    """
    if npixels > _MAX_RUN * len(stream):
        raise Corrupt(f"bit-smart: {where} packet stream of {len(stream)} bytes is too short")


def _parse_plane(kind: int, content: memoryview, ordinal: int, npixels: int) -> tuple:
    """Structural checks of one plane body that need no pixel work; returns its plan."""
    size = len(content)
    where = f"plane {ordinal} kind {kind}"
    if kind == KIND_RAW:
        if size != npixels:
            raise Corrupt(f"bit-smart: {where} has {size} raw bytes, expected {npixels}")
        return (kind,)
    if kind == KIND_PACKETS:
        _check_stream_room(content, npixels, where)
        return (kind,)
    if kind == KIND_CONSTANT:
        if size != 1:
            raise Corrupt(f"bit-smart: {where} has {size} bytes, expected one constant byte")
        return (kind, content[0])
    if kind in (KIND_MASK, KIND_MASK_PACKETS):
        if size < 2:
            raise Corrupt(f"bit-smart: {where} is missing its base/mask bytes")
        base, mask = content[0], content[1]
        if base & mask:
            raise Corrupt(f"bit-smart: {where} base {base:#04x} overlaps mask {mask:#04x}")
        width = bin(mask).count("1")
        if not 1 <= width <= 7:
            raise Corrupt(f"bit-smart: {where} mask {mask:#04x} has popcount {width}, not 1..7")
        if kind == KIND_MASK_PACKETS:
            _check_stream_room(content[2:], npixels, where)
        else:
            expected = _packed_size(npixels, width)
            if size - 2 != expected:
                raise Corrupt(
                    f"bit-smart: {where} has {size - 2} packed bytes, expected {expected}"
                )
            _check_padding(content[2:], npixels, width, "compact values")
        return (kind, base, mask, width)
    if kind in (KIND_DICT, KIND_DICT_PACKETS):
        if size < 1:
            raise Corrupt(f"bit-smart: {where} is missing its entry count")
        count = content[0] + 1
        if count < 2:
            raise Corrupt(f"bit-smart: {where} dictionary has one entry, needs 2..256")
        if size < 1 + count:
            raise Corrupt(f"bit-smart: {where} dictionary of {count} entries is truncated")
        entries = np.frombuffer(content[1 : 1 + count], dtype=np.uint8)
        if np.any(entries[1:] <= entries[:-1]):
            raise Corrupt(f"bit-smart: {where} dictionary entries are not strictly increasing")
        width = (count - 1).bit_length()
        if kind == KIND_DICT_PACKETS:
            _check_stream_room(content[1 + count :], npixels, where)
        else:
            expected = _packed_size(npixels, width)
            if size - 1 - count != expected:
                raise Corrupt(
                    f"bit-smart: {where} has {size - 1 - count} packed bytes, expected {expected}"
                )
            _check_padding(content[1 + count :], npixels, width, "indices")
        return (kind, entries, width)
    if kind == KIND_REPEAT:
        if size != 1:
            raise Corrupt(f"bit-smart: {where} has {size} bytes, expected one plane ordinal")
        source = content[0]
        if source >= ordinal:
            raise Corrupt(f"bit-smart: {where} repeats plane {source}, not an earlier plane")
        return (kind, source)
    raise Unsupported(f"bit-smart: plane {ordinal} has unknown kind {kind}")


def _packets(content: memoryview, npixels: int, where: str) -> np.ndarray:
    try:
        values = decode_packets(content, npixels, 1, 1)
    except Corrupt as exc:
        raise Corrupt(f"bit-smart: {where}: {exc}") from exc
    if len(values) != npixels:  # the packet decoder's contract; a guard, not wire syntax
        raise Corrupt(f"bit-smart: {where} packet stream gave {len(values)} of {npixels} bytes")
    return np.frombuffer(values, dtype=np.uint8)  # the decoder's buffer itself, not a copy


def _lookup_into(column: np.ndarray, table: np.ndarray, packed, values: np.ndarray | None, width: int,
                 bound: int | None, message: str) -> None:
    """column[i] = table[v_i] for the plane's compact values or indices v: ``values`` (a packet
    stream's) or, when None, ``width``-bit values packed in ``packed``. LOOKUP_CHUNK values at a
    time, each first checked below ``bound`` (Corrupt ``message`` otherwise): numpy's lookup
    widens its indices to intp (8 bytes a value), and unpacking bits makes a byte per bit."""
    npixels = column.shape[0]
    for start in range(0, npixels, LOOKUP_CHUNK):
        n = min(LOOKUP_CHUNK, npixels - start)
        if values is None:  # a whole number of bytes per chunk: LOOKUP_CHUNK is a multiple of 8
            chunk = unpack_bits(packed[start * width // 8 :], n, width)
        else:
            chunk = values[start : start + n]
        if bound is not None and chunk.size and int(chunk.max()) >= bound:
            raise Corrupt(message)
        column[start : start + n] = table.take(chunk)


def _decode_plane(plan: tuple, content: memoryview, grid: np.ndarray, ordinal: int) -> None:
    npixels = grid.shape[0]
    kind = plan[0]
    where = f"plane {ordinal} kind {kind}"
    column = grid[:, ordinal]
    if kind == KIND_RAW:
        column[:] = np.frombuffer(content, dtype=np.uint8)
    elif kind == KIND_PACKETS:
        column[:] = _packets(content, npixels, where)
    elif kind == KIND_CONSTANT:
        column[:] = plan[1]
    elif kind in (KIND_MASK, KIND_MASK_PACKETS):
        _, base, mask, width = plan
        packed = content[2:]
        compact = None if kind == KIND_MASK else _packets(packed, npixels, where)
        # 2.13.1: a packet stream's compact values must fit popcount(mask) bits (packed ones do)
        _lookup_into(column, _deposit_table(base, mask), packed, compact, width,
                     None if compact is None else 1 << width, f"bit-smart: {where} compact value exceeds {width} bits")
    elif kind in (KIND_DICT, KIND_DICT_PACKETS):
        _, entries, width = plan
        count = entries.size
        packed = content[1 + count :]
        indices = None if kind == KIND_DICT else _packets(packed, npixels, where)
        # 2.13.1: every index names one of the entries
        _lookup_into(column, entries, packed, indices, width, count,
                     f"bit-smart: {where} index exceeds its {count} dictionary entries")
    else:  # KIND_REPEAT
        column[:] = grid[:, plan[1]]


def decode_bitsmart(body, npixels: int, channels: int, word_bytes: int,
                    into: memoryview | None = None) -> bytearray | memoryview:
    """Reconstruct a mode-2 unit from ``body``, the unit record after its mode byte.

    Returns ``npixels * channels * word_bytes`` bytes: pixels interleaved, each sample
    little-endian; with ``into`` (a writable byte buffer of that size) they are decoded there
    and ``into`` is returned.  Raises :class:`Corrupt` for malformed bodies, :class:`Unsupported` for an
    unknown plane kind and :class:`TooLarge` when the output cannot be allocated.
    """
    planes = _plane_count(npixels, channels, word_bytes)
    view = memoryview(body).cast("B")
    pos = 0
    lengths = []
    for ordinal in range(planes):
        length, pos = _read_length(view, pos, ordinal)
        if length == 0:
            raise Corrupt(f"bit-smart: plane {ordinal} body is empty (no kind byte)")
        lengths.append(length)
    if sum(lengths) != len(view) - pos:
        raise Corrupt(
            f"bit-smart: plane bodies declare {sum(lengths)} bytes, the unit holds {len(view) - pos}"
        )
    parsed = []
    for ordinal, length in enumerate(lengths):
        content = view[pos + 1 : pos + length]
        parsed.append((_parse_plane(view[pos], content, ordinal, npixels), content))
        pos += length
    if into is not None:
        out = into
    else:
        try:
            out = bytearray(npixels * planes)
        except (MemoryError, OverflowError) as exc:
            raise TooLarge(f"bit-smart: cannot allocate {npixels} x {planes} plane bytes") from exc
    grid = np.frombuffer(out, dtype=np.uint8).reshape(npixels, planes)
    for ordinal, (plan, content) in enumerate(parsed):
        _decode_plane(plan, content, grid, ordinal)
    return out


# --------------------------------------------------------------------------- encoding


def _as_byte_grid(pixels, npixels: int, planes: int) -> np.ndarray:
    if isinstance(pixels, np.ndarray):
        array = pixels
        if array.dtype.itemsize > 1 and array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    else:
        data = np.frombuffer(memoryview(pixels).cast("B"), dtype=np.uint8)
    if data.size != npixels * planes:
        raise ValueError(f"bit-smart: {data.size} pixel bytes, expected {npixels} x {planes}")
    return data.reshape(npixels, planes)


def _packet_floor(npixels: int) -> int:
    """No packet stream of npixels one-component pixels is shorter than this (62-pixel runs)."""
    return (npixels + _MAX_RUN - 1) // _MAX_RUN


def _lookup(table: np.ndarray, plane: np.ndarray) -> np.ndarray:
    """``table[plane]`` for a flat byte plane, LOOKUP_CHUNK values at a time (numpy widens the
    indices of a lookup to intp: 8 bytes a pixel for a whole plane)."""
    out = np.empty(plane.shape, dtype=table.dtype)
    for start in range(0, plane.size, LOOKUP_CHUNK):
        out[start : start + LOOKUP_CHUNK] = table.take(plane[start : start + LOOKUP_CHUNK])
    return out


def _encode_plane(plane: np.ndarray, earlier: int | None, use_packets: bool) -> bytes:
    npixels = plane.size
    if npixels == 0:
        return bytes([KIND_RAW])
    counts = histogram(plane, 8)  # (bincount would widen the plane to int64 first)
    present = np.flatnonzero(counts).astype(np.uint8)
    if present.size == 1:
        return bytes([KIND_CONSTANT, int(present[0])])
    if earlier is not None and earlier < 256:
        return bytes([KIND_REPEAT, earlier])

    # (size, preference, builder): the smallest wins, ties go to the cheaper decode.
    options: list[tuple[int, int, Callable[[], bytes]]] = [
        (1 + npixels, 0, lambda: bytes([KIND_RAW]) + memoryview(plane))
    ]
    base = int(np.bitwise_and.reduce(present))
    mask = int(np.bitwise_or.reduce(present)) ^ base
    width = bin(mask).count("1")  # >= 1: the plane is not constant
    compact = None
    if width <= 7:
        compact = _lookup(_extract_table(mask), plane)
        options.append(
            (
                3 + _packed_size(npixels, width),
                1,
                lambda: bytes([KIND_MASK, base, mask]) + pack_bits(compact, width),
            )
        )
    count = present.size
    index_width = (count - 1).bit_length()
    dictionary = bytes([count - 1]) + present.tobytes()
    lookup = np.zeros(256, dtype=np.uint8)
    lookup[present] = np.arange(count, dtype=np.uint16).astype(np.uint8)
    indices = _lookup(lookup, plane)
    if index_width < 8:
        options.append(
            (
                2 + count + _packed_size(npixels, index_width),
                2,
                lambda: bytes([KIND_DICT]) + dictionary + pack_bits(indices, index_width),
            )
        )

    if use_packets:
        def consider(overhead: int, preference: int, head: bytes, values: np.ndarray) -> None:
            if overhead + _packet_floor(npixels) >= min(options)[0]:
                return
            # a contiguous plane, no copy of it; only a strictly smaller stream can win (ties go
            # to the earlier options, all of lower preference)
            stream = encode_packets(values, npixels, 1, 1, limit=min(options)[0] - overhead - 1)
            if stream is None:
                return
            options.append((overhead + len(stream), preference, lambda: head + stream))

        consider(1, 3, bytes([KIND_PACKETS]), plane)
        # Skip streams identical to one already tried: the compact values equal the bytes
        # when base is 0 and the mask is the low bits; the indices equal the compact values
        # when every masked combination occurs (extraction keeps order) and equal the bytes
        # when the entries are 0..count-1.
        if compact is not None and not (base == 0 and mask == (1 << width) - 1):
            consider(3, 4, bytes([KIND_MASK_PACKETS, base, mask]), compact)
        if int(present[-1]) != count - 1 and not (compact is not None and count == 1 << width):
            consider(1 + len(dictionary), 5, bytes([KIND_DICT_PACKETS]) + dictionary, indices)

    _, _, build = min(options, key=lambda option: option[:2])
    return build()


def encode_bitsmart(
    pixels, npixels: int, channels: int, word_bytes: int, *, packets: bool = True, limit: int | None = None
) -> bytes | None:
    """Encode interleaved little-endian samples as a mode-2 unit body (after the mode byte).

    ``pixels`` is ``npixels * channels * word_bytes`` bytes (any buffer, or a numpy array
    whose bytes are taken in little-endian order).  Each byte plane takes its smallest valid
    body: constant (2), a repeat of an earlier identical plane (7), dense mask (3),
    dictionary (5), raw (0) and, when ``packets`` is true, the packet forms 1, 4 and 6.  Ties
    prefer raw, then mask, dictionary and the packet forms in that order; the output is a
    deterministic function of the input.  With ``limit``, None as soon as the body is known
    to be longer than ``limit`` bytes (a candidate that cannot win).
    """
    planes = _plane_count(npixels, channels, word_bytes)
    grid = _as_byte_grid(pixels, npixels, planes)
    seen: dict[bytes, list[int]] = {}  # a plane's digest -> the earlier planes with it
    bodies = []
    for ordinal in range(planes):
        plane = np.ascontiguousarray(grid[:, ordinal])
        key = xxhash.xxh3_128_digest(plane)  # no copy of the plane is kept; a hit is compared
        earlier = next((e for e in seen.get(key, ()) if np.array_equal(grid[:, e], plane)), None)
        bodies.append(_encode_plane(plane, earlier, packets))
        if earlier is None:
            seen.setdefault(key, []).append(ordinal)
        if limit is not None and sum(map(len, bodies)) > limit:  # the lengths only add to it
            return None
    body = b"".join(_write_length(len(body)) for body in bodies) + b"".join(bodies)
    return None if limit is not None and len(body) > limit else body
