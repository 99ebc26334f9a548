"""The 2.13 quick-pixel packet stream: QOI's packet families on D = 8, 16, 32, 64-bit words.

``decode_packets`` / ``encode_packets`` dispatch on :func:`imij_plugins._backend.active`: the C
kernels of ``csrc/quick_packets.c`` or the pure-Python references ``_decode_packets_py`` /
``_encode_packets_py`` below, which are written literally from the spec and agree with the C
kernels bit for bit (tests/payload/test_quick_packets.py checks both backends).

Pixel layout on both sides: ``npixels`` pixels row-major, the stored components interleaved
(1: x; 2: x, a; 3: r, g, b; 4: r, g, b, a), each sample ``word_bytes`` bytes little-endian.
"""

from __future__ import annotations

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.kernel_codes import KERNEL_CODES

__all__ = ["decode_packets", "encode_packets", "encode_bound"]

WORD_BYTES = (1, 2, 4, 8)
MAX_RUN = 62  # 2.13: 11xxxxxx outputs xxxxxx+1 pixels, 1-62 (FE/FF are literals)

# The malformed-stream messages: the Python reference raises them, the C kernel's are csrc's
# imij_strerror texts after "quick packets: ", the same, so both backends report identically.
MSG_TRUNCATED = "quick packets: runs past the end of its bytes"
MSG_RUN = "quick packets: run passes the unit's pixel count"
MSG_TRAILING = "quick packets: bytes after the last pixel"
MSG_UNEQUAL = "quick packets: colour components differ in a 1/2-channel unit"


def _bytes_view(data) -> memoryview:
    """A flat unsigned-byte view of any C-contiguous bytes-like object (no copy)."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def _check_args(npixels: int, channels: int, word_bytes: int) -> int:
    """Validate the geometry; return the pixel buffer size npixels*channels*word_bytes."""
    if not isinstance(npixels, int) or npixels < 0:
        raise ValueError(f"quick packets: npixels must be a non-negative int, not {npixels!r}")
    if channels not in (1, 2, 3, 4):
        raise ValueError(f"quick packets: channels must be 1-4, not {channels!r}")
    if word_bytes not in WORD_BYTES:
        raise ValueError(f"quick packets: word_bytes must be 1, 2, 4 or 8, not {word_bytes!r}")
    return npixels * channels * word_bytes


def encode_bound(npixels: int, channels: int, word_bytes: int) -> int:
    """Worst-case encoded size: one literal per pixel (tag plus one word per stored component)."""
    _check_args(npixels, channels, word_bytes)
    return npixels * (1 + channels * word_bytes)


# ---- public API --------------------------------------------------------------------------------


def decode_packets(body, npixels: int, channels: int, word_bytes: int, into: memoryview | None = None) -> bytearray | memoryview:
    """Decode one 2.13 packet stream ``body`` of exactly ``npixels`` pixels (into the writable
    byte buffer ``into`` when given, which is returned).

    Returns ``npixels*channels*word_bytes`` bytes (row-major, components interleaved, samples
    little-endian). Raises :class:`Corrupt` for every malformed stream.
    """
    size = _check_args(npixels, channels, word_bytes)
    src = _bytes_view(body)
    # Every op yields at most MAX_RUN pixels per byte, so a shorter stream must end early;
    # refusing it here also keeps a crafted pixel count from allocating before decoding.
    if npixels > MAX_RUN * src.nbytes:
        raise Corrupt(MSG_TRUNCATED)
    if into is not None and len(into) != size:
        raise ValueError(f"quick packets: a buffer of {len(into)} bytes for {size}")
    if _backend.active() == "c":
        ffi, lib = _backend.ffi, _backend.lib
        out = bytearray(size) if into is None else into
        rc = lib.imij_quick_decode(
            ffi.from_buffer("uint8_t[]", src),
            src.nbytes,
            ffi.from_buffer("uint8_t[]", out, require_writable=True),
            size,
            npixels,
            channels,
            word_bytes,
        )
        if rc != 0:
            raise KERNEL_CODES.error(rc, kernel="quick packets")
        return out
    decoded = _decode_packets_py(src, npixels, channels, word_bytes)
    if into is None:
        return decoded
    into[:] = decoded
    return into


def encode_packets(pixels, npixels: int, channels: int, word_bytes: int, limit: int | None = None) -> bytes | None:
    """Encode ``npixels`` pixels (the layout :func:`decode_packets` returns) as one packet stream;
    with ``limit``, None for a stream longer than ``limit`` bytes (a candidate that cannot win:
    the kernel's buffer is then about ``limit`` bytes, not the worst case, and it stops early)."""
    size = _check_args(npixels, channels, word_bytes)
    src = _bytes_view(pixels)
    if src.nbytes != size:
        raise ValueError(
            f"quick packets: {src.nbytes} pixel bytes, expected {npixels}*{channels}*{word_bytes} = {size}"
        )
    if _backend.active() == "c":
        ffi, lib = _backend.ffi, _backend.lib
        cap = encode_bound(npixels, channels, word_bytes)
        if limit is not None:  # imij_quick_encode: a stream of cap - (2 + C * word bytes) always fits
            cap = min(cap, max(limit, 0) + 2 + channels * word_bytes)
        out = bytearray(cap)
        n = lib.imij_quick_encode(
            ffi.from_buffer("uint8_t[]", src),
            size,
            npixels,
            channels,
            word_bytes,
            ffi.from_buffer("uint8_t[]", out, require_writable=True),
            cap,
        )
        if n == lib.IMIJ_E_SPACE and limit is not None:
            return None
        if n < 0:
            raise KERNEL_CODES.error(n, kernel="quick packets")
        del out[n:]
        stream = bytes(out)
    else:
        stream = _encode_packets_py(src, npixels, channels, word_bytes)
    return None if limit is not None and len(stream) > limit else stream


# ---- references, literally from 2.13 -----------------------------------------------------------


def _fold(w: int, word_bytes: int) -> int:
    # 2.13: "fold sums all bytes of a word"
    return sum((w >> (8 * i)) & 0xFF for i in range(word_bytes))


def _index(t: tuple, word_bytes: int) -> int:
    # 2.13: "Its index is (3*fold(r)+5*fold(g)+7*fold(b)+11*fold(a)) mod 64"
    r, g, b, a = t
    return (
        3 * _fold(r, word_bytes) + 5 * _fold(g, word_bytes) + 7 * _fold(b, word_bytes) + 11 * _fold(a, word_bytes)
    ) % 64


def _stored(t: tuple, channels: int) -> tuple:
    # 2.13: "Emit the storage's 1-4 components"; 1/2-channel storage represents (x,x,x,a),
    # 3/4-channel (x,y,z,a); a missing fourth component is internal state only.
    r, g, b, a = t
    return ((r,), (r, a), (r, g, b), (r, g, b, a))[channels - 1]


def _decode_packets_py(body, npixels: int, channels: int, word_bytes: int) -> bytearray:
    src = bytes(body)
    n = len(src)
    # 2.13: "Let D be the sample storage width (8, 16, 32 or 64). All arithmetic is unsigned
    # modulo 2^D"
    D = 8 * word_bytes
    M = 1 << D
    # 2.13: "Maintain tuple (r,g,b,a), initially (0,0,0,2^D-1), and a 64-entry tuple cache
    # initially all zero."
    r, g, b, a = 0, 0, 0, M - 1
    cache = [(0, 0, 0, 0)] * 64
    out = bytearray()
    pos = 0
    done = 0

    def word() -> int:
        # 2.13: "Literal words are little-endian and D/8 bytes each."
        nonlocal pos
        if n - pos < word_bytes:
            raise Corrupt(MSG_TRUNCATED)
        w = int.from_bytes(src[pos : pos + word_bytes], "little")
        pos += word_bytes
        return w

    while done < npixels:
        if pos >= n:
            raise Corrupt(MSG_TRUNCATED)
        # 2.13: "Read the next byte, testing literal values before the top-two-bit families"
        tag = src[pos]
        pos += 1
        count = 1
        if tag in (0xFE, 0xFF):
            # 2.13 FE: "Read one color word for 1/2-channel images or three for 3/4-channel
            # images; preserve a." FF: "As FE, followed by one word for a."
            # (The whole literal must be present before any of it is used.)
            need = (3 if channels >= 3 else 1) * word_bytes + (word_bytes if tag == 0xFF else 0)
            if n - pos < need:
                raise Corrupt(MSG_TRUNCATED)
            if channels >= 3:
                r, g, b = word(), word(), word()
            else:
                # 2.13: "For 1/2-channel storage, color literals set all three color tuple
                # components to the same word."
                r = g = b = word()
            if tag == 0xFF:
                a = word()
        elif tag >> 6 == 0b00:
            # 2.13 00xxxxxx: "Replace the tuple with cache entry xxxxxx."
            r, g, b, a = cache[tag & 0x3F]
        elif tag >> 6 == 0b01:
            # 2.13 01rrggbb: "Add each two-bit field minus 2 to r,g,b; preserve a."
            r = (r + ((tag >> 4) & 3) - 2) % M
            g = (g + ((tag >> 2) & 3) - 2) % M
            b = (b + (tag & 3) - 2) % M
        elif tag >> 6 == 0b10:
            # 2.13 10gggggg then rrrrbbbb: "Let dg=gggggg-32; add dg+rrrr-8, dg, dg+bbbb-8 to
            # r,g,b; preserve a."
            if pos >= n:
                raise Corrupt(MSG_TRUNCATED)
            second = src[pos]
            pos += 1
            dg = (tag & 0x3F) - 32
            r = (r + dg + (second >> 4) - 8) % M
            g = (g + dg) % M
            b = (b + dg + (second & 0x0F) - 8) % M
        else:
            # 2.13 11xxxxxx (except FE/FF): "Output the previous tuple xxxxxx+1 times (1-62)."
            count = (tag & 0x3F) + 1
            # 2.13: "Runs may cross rows within a unit but MUST NOT exceed its pixel count."
            if done + count > npixels:
                raise Corrupt(MSG_RUN)
        t = (r, g, b, a)
        for _ in range(count):
            # 2.13: "For 1/2-channel images the three color components MUST be equal at every
            # output pixel; otherwise the stream is Corrupt."
            if channels <= 2 and not (r == g == b):
                raise Corrupt(MSG_UNEQUAL)
            for w in _stored(t, channels):
                out += w.to_bytes(word_bytes, "little")
            # 2.13: "After every output pixel, insert its complete tuple into the cache."
            cache[_index(t, word_bytes)] = t
        done += count
    # 2.13 mode 1: "the packet stream below, with exactly that many pixels and no trailing bytes"
    if pos != n:
        raise Corrupt(MSG_TRAILING)
    return out


def _encode_packets_py(pixels, npixels: int, channels: int, word_bytes: int) -> bytes:
    """The greedy encoder (same choices as the C kernel), keeping the decoder's exact state.

    Per pixel: RUN of the previous tuple (flushed at 62 or at the end), else INDEX when the
    pixel's own hash slot holds it, else DIFF, else LUMA (a unchanged), else FE, or FF when a
    changes. For 1/2-channel images r = g = b, so DIFF has three equal fields and LUMA
    rrrr = bbbb = 8: every op written keeps the colour components equal.
    """
    src = bytes(pixels)
    D = 8 * word_bytes
    M = 1 << D
    mask = M - 1
    pxb = channels * word_bytes
    # 2.13: the decoder's initial state: tuple (0,0,0,2^D-1), cache all zero.
    prev = (0, 0, 0, mask)
    cache = [(0, 0, 0, 0)] * 64
    out = bytearray()
    run = 0

    def word(w: int) -> bytes:
        return w.to_bytes(word_bytes, "little")

    for i in range(npixels):
        s = [int.from_bytes(src[i * pxb + k * word_bytes : i * pxb + (k + 1) * word_bytes], "little") for k in range(channels)]
        # 1/2-channel storage represents (x,x,x,a); a missing fourth component stays 2^D-1.
        if channels == 1:
            t = (s[0], s[0], s[0], mask)
        elif channels == 2:
            t = (s[0], s[0], s[0], s[1])
        elif channels == 3:
            t = (s[0], s[1], s[2], mask)
        else:
            t = (s[0], s[1], s[2], s[3])

        if t == prev:
            if i == 0:
                # 2.13: the decoder inserts every output pixel, a run's too: a run opening the
                # stream puts the initial tuple into the cache.
                cache[_index(t, word_bytes)] = t
            run += 1
            if run == MAX_RUN or i == npixels - 1:
                out.append(0xC0 | (run - 1))  # 2.13 11xxxxxx
                run = 0
            continue
        if run:
            out.append(0xC0 | (run - 1))
            run = 0

        h = _index(t, word_bytes)
        if cache[h] == t:
            out.append(h)  # 2.13 00xxxxxx
        else:
            cache[h] = t
            r, g, b, a = t
            pr, pg, pb, pa = prev
            if a == pa:
                # Differences modulo 2^D, biased: a field is in range iff its biased value is.
                dr, dg, db = (r - pr) % M, (g - pg) % M, (b - pb) % M
                fr, fg, fb = (dr + 2) % M, (dg + 2) % M, (db + 2) % M
                lg, lr, lb = (dg + 32) % M, (dr - dg + 8) % M, (db - dg + 8) % M
                if fr <= 3 and fg <= 3 and fb <= 3:
                    out.append(0x40 | fr << 4 | fg << 2 | fb)  # 2.13 01rrggbb
                elif lg <= 63 and lr <= 15 and lb <= 15:
                    out += bytes((0x80 | lg, lr << 4 | lb))  # 2.13 10gggggg rrrrbbbb
                else:
                    out.append(0xFE)
                    out += word(r) + word(g) + word(b) if channels >= 3 else word(r)
            else:
                out.append(0xFF)
                out += word(r) + word(g) + word(b) if channels >= 3 else word(r)
                out += word(a)
        prev = t
    return bytes(out)
