"""The C kernels' status codes (``enum imij_status`` in csrc/imij_kernels.h) as Python errors: one
table keyed by the constants cffi's ``lib`` exposes, so a code renumbered in C follows here, with
every message taken from csrc's ``imij_strerror`` (tests/payload/test_kernel_codes.py: every
constant has its entry).

A rule of the spec that the input breaks is ``Corrupt``. A call the kernel refuses or cannot
complete as given (``IMIJ_E_ARGS``, ``IMIJ_E_LAYOUT``, ``IMIJ_E_SPACE``) is a bug or a choice on
this side of the boundary, of the caller's class (``refused``: ``RuntimeError`` for the decoders,
the head's table and record readers among them, ``ValueError`` for the encoders); a buffer sized short
(``IMIJ_E_SIZE``) is always ``RuntimeError``; what an encoder cannot code of its input
(``IMIJ_E_FREQ``, ``IMIJ_E_MANY``, ``IMIJ_E_RANGE``) is ``ValueError``.
"""

from __future__ import annotations

from imij_plugins import _backend
from imij_plugins.errors import Corrupt

# A unit this small whose kernel fails is decoded again by the Python reference, which names the
# exact rule broken; larger ones report the kernel's code (the reference is ~100x slower: a
# damaged file of many units must not take seconds per unit to refuse).
EXPLAIN_PIXELS = 1 << 12


class KernelCodes:
    """The status table: ``classes`` maps each constant's name (``"IMIJ_E_SIZE"``) to its error
    class, None where the class is the caller's (``refused``)."""

    def __init__(self, classes: dict[str, type[Exception] | None]):
        self.classes = classes
        lib = _backend.lib
        self.by_code: dict[int, type[Exception] | None] = {} if lib is None else {
            getattr(lib, name): cls for name, cls in classes.items()
        }

    @staticmethod
    def message(code: int) -> str:
        """csrc's ``imij_strerror`` text of ``code``."""
        return _backend.ffi.string(_backend.lib.imij_strerror(code)).decode()

    def error(self, code: int, *, kernel: str, refused: type[Exception] = RuntimeError) -> Exception:
        """The exception for status ``code`` of ``kernel`` (its message's prefix): the code's class,
        ``refused`` for a call refused, ``RuntimeError`` for a code C does not define."""
        if code not in self.by_code:
            return RuntimeError(f"{kernel}: {self.message(code)} {code}")
        return (self.by_code[code] or refused)(f"{kernel}: {self.message(code)}")


KERNEL_CODES = KernelCodes({
    "IMIJ_E_ARGS": None,
    "IMIJ_E_SIZE": RuntimeError,
    "IMIJ_E_SPACE": None,
    "IMIJ_E_FREQ": ValueError,
    "IMIJ_E_MANY": ValueError,
    "IMIJ_E_RANGE": ValueError,
    "IMIJ_E_LAYOUT": None,
    **{name: Corrupt for name in (
        "IMIJ_E_TRUNCATED", "IMIJ_E_VARINT", "IMIJ_E_FEATURE", "IMIJ_E_DECOR", "IMIJ_E_PREDICTOR",
        "IMIJ_E_LENGTHS", "IMIJ_E_PALETTE", "IMIJ_E_ENTRY", "IMIJ_E_DEPTH", "IMIJ_E_RECORD", "IMIJ_E_SLOT",
        "IMIJ_E_COUNT", "IMIJ_E_SHARED", "IMIJ_E_ROWS", "IMIJ_E_RUN", "IMIJ_E_TRAILING", "IMIJ_E_UNEQUAL",
        "IMIJ_E_STATE", "IMIJ_E_WORDS", "IMIJ_E_VALUE", "IMIJ_E_LAST", "IMIJ_E_GAMMA", "IMIJ_E_EXPONENT",
        "IMIJ_E_CAP", "IMIJ_E_EMPTY", "IMIJ_E_SCHEME", "IMIJ_E_CROSS",
    )},
})
