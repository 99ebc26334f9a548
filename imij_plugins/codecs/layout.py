"""``Layout``: the numpy layout of a numcodecs chunk (dtype with byte order, memory order, shape) in kVMD.

IMI stores samples little-endian, row-major and has no bool; numcodecs hands ``decode`` nothing but
the bytes. So ``numcodecs.Imi`` writes the encoded array's layout into the file's item metadata
(1.3, kVMD: text attributes ``numpy.dtype`` such as ``>u2`` or ``|b1``, ``numpy.order`` ``C`` or
``F``, ``numpy.shape`` such as ``2,3,9`` or empty for a scalar), and decode gives back the same
array: its values, dtype, shape and memory order, so its bytes in memory order equal the original's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from imij_plugins.codecs.chunk import DTYPES, conform
from imij_plugins.container.metadata import ItemMetadata, read_item_metadata
from imij_plugins.errors import Corrupt

if TYPE_CHECKING:
    from imij_plugins.reader import ImijFile

DTYPE, ORDER, SHAPE = "numpy.dtype", "numpy.order", "numpy.shape"
KVMD = b"kVMD"
MAX_DIMS = 64  # numpy's own limit


@dataclass(frozen=True)
class Layout:
    """An array's dtype (byte order included), memory order and shape."""

    dtype: np.dtype
    order: Literal["C", "F"]
    shape: tuple[int, ...]

    @classmethod
    def of(cls, a: np.ndarray) -> Layout:
        """``a``'s layout: order F only for an array that is Fortran- and not C-contiguous (any other is C)."""
        order: Literal["C", "F"] = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
        return cls(a.dtype, order, tuple(a.shape))

    def item_metadata(self) -> ItemMetadata:
        """The kVMD attributes that record this layout."""
        return ItemMetadata.from_mapping(
            {DTYPE: self.dtype.str, ORDER: self.order, SHAPE: ",".join(str(n) for n in self.shape)}
        )

    @classmethod
    def from_file(cls, f: ImijFile) -> Layout | None:
        """The layout an IMI file records, None for a file without one (an earlier ``Imi`` or
        another writer); a damaged or impossible record is ``Corrupt``, a later kVMD version ``Unsupported``."""
        item = read_item_metadata([f.container.payload(c) for c in f.container.find(KVMD)])  # only kVMD: cheap
        attributes = item.as_dict() if item is not None else {}
        fields = [attributes.get(k) for k in (DTYPE, ORDER, SHAPE)]
        if all(v is None for v in fields):
            return None
        dtype, order, shape = fields
        if not all(isinstance(v, str) for v in fields) or order not in ("C", "F"):
            raise Corrupt(f"the chunk's numpy layout is not text dtype, order C or F and shape: {fields}")
        try:
            dt = np.dtype(dtype)
            dims = tuple(int(n) for n in shape.split(",")) if shape else ()  # type: ignore[union-attr]
        except (TypeError, ValueError) as exc:
            raise Corrupt(f"the chunk's numpy layout {fields} does not parse: {exc}") from None
        if dt.newbyteorder("=") not in DTYPES or len(dims) > MAX_DIMS or any(n < 0 for n in dims):
            raise Corrupt(f"the chunk's numpy layout {fields} is not one IMI can hold")
        return cls(dt, order, dims)  # type: ignore[arg-type]

    def values(self, a: np.ndarray) -> np.ndarray:
        """What to encode for ``a`` (of this layout): its values in native byte order; a row of one
        zero for an empty array (IMI has no empty image), of one sample for a scalar."""
        native = a.astype(a.dtype.newbyteorder("="), copy=False)
        if native.size == 0:
            return np.zeros(1, native.dtype)
        return native.reshape(1) if native.ndim == 0 else native

    def restore(self, stored: np.ndarray) -> np.ndarray:
        """The array of this layout from the file's samples (``Corrupt`` when they do not fit it)."""
        if math.prod(self.shape) == 0:
            if stored.size != 1:
                raise Corrupt(f"an empty chunk {self.shape} holds {stored.size} samples, not the one placeholder")
            return np.zeros(self.shape, self.dtype, order=self.order)
        if self.dtype == np.bool_ and stored.dtype == np.uint8 and bool((stored > 1).any()):
            raise Corrupt("a bool chunk holds samples other than 0 and 1")
        values = conform(stored, self.shape or (1,), self.dtype).reshape(self.shape)
        return np.asfortranarray(values) if self.order == "F" else values
