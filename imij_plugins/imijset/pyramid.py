"""The optional flat pyramid catalog (IMIJPAT\\x01 at key 0): levels, tile grids and tile keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.imijset.columns import U64_MAX, uvarint
from imij_plugins.wire.cursor import Cursor

if TYPE_CHECKING:
    from imij_plugins.imijset.archive import Archive

CATALOG_KEY = 0  # "may record its level catalog at key 0 (CATALOG_KEY)"
MAGIC = b"IMIJPAT\x01"
MAX_LEVELS = 64  # "level_count varint 1..=64"
U32_MAX = (1 << 32) - 1
ROW_MAJOR, MORTON = 0, 1  # "0 = row-major (ty * cols + tx), 1 = Morton Z-order (interleaved tx, ty)"


def morton(tx: int, ty: int) -> int:
    """Interleaved bits: bit i of ``tx`` becomes bit 2i, bit i of ``ty`` bit 2i + 1."""
    out = 0
    i = 0
    while tx >> i or ty >> i:
        out |= ((tx >> i) & 1) << (2 * i) | ((ty >> i) & 1) << (2 * i + 1)
        i += 1
    return out


@dataclass(frozen=True)
class PyramidLevel:
    """One catalog level: its size, tile grid, tile order and the key of its first tile."""

    level_id: int
    width: int
    height: int
    tile_width: int
    tile_height: int
    order: int
    key_base: int

    @property
    def cols(self) -> int:
        return -(-self.width // self.tile_width)

    @property
    def rows(self) -> int:
        return -(-self.height // self.tile_height)

    def tile_index(self, tx: int, ty: int) -> int:
        if not (0 <= tx < self.cols and 0 <= ty < self.rows):
            raise IndexError(f"tile ({tx}, {ty}) outside the {self.cols}x{self.rows} grid of level {self.level_id}")
        return ty * self.cols + tx if self.order == ROW_MAJOR else morton(tx, ty)

    def tile_key(self, tx: int, ty: int) -> int:
        """ "tile keys are key_base + tile_index" """
        return self.key_base + self.tile_index(tx, ty)

    @property
    def key_span(self) -> int:
        """How many keys from ``key_base`` the level's tile indices can reach."""
        return self.tile_index(self.cols - 1, self.rows - 1) + 1


def encode_catalog(levels: Sequence[PyramidLevel]) -> bytes:
    """The catalog blob; a level that breaks a rule raises ValueError."""
    out = bytearray(MAGIC) + uvarint(len(levels))
    for level in levels:
        out += b"".join(uvarint(v) for v in (level.level_id, level.width, level.height, level.tile_width, level.tile_height))
        out.append(level.order)
        out += uvarint(level.key_base)
    try:
        decode_catalog(bytes(out))
    except (Corrupt, Unsupported) as exc:
        raise ValueError(str(exc)) from None
    return bytes(out)


def decode_catalog(buf: bytes) -> list[PyramidLevel]:
    """Parse and check a catalog blob (the whole blob: trailing bytes are Corrupt)."""
    if buf[:8] != MAGIC:
        raise Corrupt("pyramid catalog: bad magic")
    cur = Cursor(buf, 8, len(buf), "pyramid catalog")
    count = cur.varint("level_count")
    if not 1 <= count <= MAX_LEVELS:
        raise Corrupt(f"pyramid catalog: {count} levels (1 ..= {MAX_LEVELS})")
    levels: list[PyramidLevel] = []
    for _ in range(count):
        level_id = cur.varint("level_id")
        sizes = [cur.varint(name) for name in ("width", "height", "tile_width", "tile_height")]
        order = cur.u8("order")
        key_base = cur.varint("key_base")
        if level_id > U32_MAX or (levels and level_id <= levels[-1].level_id):
            raise Corrupt(f"pyramid catalog: level_id {level_id} not a u32 above the previous one")
        if not all(1 <= v <= U32_MAX for v in sizes):
            raise Corrupt(f"pyramid catalog level {level_id}: sizes {sizes} must be u32 above zero")
        if order not in (ROW_MAJOR, MORTON):
            raise Unsupported(f"pyramid catalog level {level_id}: tile order {order}")
        if key_base == 0:  # "key_base varint u64 (> 0)"
            raise Corrupt(f"pyramid catalog level {level_id}: key_base 0 is the catalog's own key")
        level = PyramidLevel(level_id, *sizes, order, key_base)
        if key_base + level.key_span - 1 > U64_MAX:  # checked arithmetic: every tile key fits u64
            raise Corrupt(f"pyramid catalog level {level_id}: tile keys overflow u64")
        levels.append(level)
    cur.expect_end("trailing bytes after the last level")
    return levels


def plan_levels(shapes: Sequence[tuple[int, int]], tile_width: int, tile_height: int, order: int = ROW_MAJOR) -> list[PyramidLevel]:
    """Levels for images of (height, width) ``shapes``, finest first, keys packed after the catalog."""
    levels = []
    key_base = CATALOG_KEY + 1
    for level_id, (height, width) in enumerate(shapes):
        level = PyramidLevel(level_id, width, height, tile_width, tile_height, order, key_base)
        levels.append(level)
        key_base += level.key_span
    return levels


def append_pyramid(archive: Archive, images: Sequence[np.ndarray], tile_width: int, tile_height: int, order: int = ROW_MAJOR) -> list[PyramidLevel]:
    """Append the catalog at key 0 and every tile as an IMI image, in key order, to the current batch."""
    levels = plan_levels([img.shape[:2] for img in images], tile_width, tile_height, order)
    archive.append(CATALOG_KEY, encode_catalog(levels))
    for level, image in zip(levels, images):
        tiles = sorted(
            (level.tile_index(tx, ty), tx, ty) for ty in range(level.rows) for tx in range(level.cols)
        )
        for index, tx, ty in tiles:
            x, y = tx * tile_width, ty * tile_height
            archive.append(level.key_base + index, np.ascontiguousarray(image[y : y + tile_height, x : x + tile_width]))
    return levels


def read_tile(archive: Archive, level: PyramidLevel, tx: int, ty: int) -> np.ndarray:
    """Decode one tile through its key."""
    return archive.read(level.tile_key(tx, ty))
