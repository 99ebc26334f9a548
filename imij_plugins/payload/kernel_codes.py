"""The C kernels' return codes as Python errors: one table per family of codes in csrc/*.h
(``IMIJ_QUICK_E_*``, ``IMIJ_ENT_E_*``, ``IMIJ_LVL_E_*``, ``IMIJ_TBL_E_*``, ``IMIJ_ENC_E_*``), keyed by
the constants cffi's ``lib`` exposes, so a code renumbered in C follows here
(tests/payload/test_kernel_codes.py: every constant of a family has its entry).

A rule of the spec that the input breaks is ``Corrupt``; a call the kernel refuses (bad
arguments, a buffer smaller than what it writes) is a bug on this side of the boundary,
``RuntimeError`` (the encoders' refusals stay ``ValueError``, as the encoder has always raised).
"""

from __future__ import annotations

from imij_plugins import _backend

Entry = tuple[type[Exception], str]

# A unit this small whose kernel fails is decoded again by the Python reference, which names the
# exact rule broken; larger ones report the kernel's code (the reference is ~100x slower: a
# damaged file of many units must not take seconds per unit to refuse).
EXPLAIN_PIXELS = 1 << 12


class KernelCodes:
    """One family's codes: ``entries`` maps each constant's name after ``prefix`` (``"E_SIZE"``
    for ``IMIJ_ENT_E_SIZE``) to the error class and message of that code."""

    def __init__(self, prefix: str, entries: dict[str, Entry]):
        self.prefix = prefix
        self.entries = entries
        lib = _backend.lib
        self.by_code: dict[int, Entry] = {} if lib is None else {
            getattr(lib, prefix + name): entry for name, entry in entries.items()
        }

    def code(self, name: str) -> int:
        """The value of constant ``prefix + name`` (``"E_SPACE"``), from the C header."""
        return getattr(_backend.lib, self.prefix + name)

    def error(self, code: int, kernel: str = "") -> Exception:
        """The exception for return code ``code`` (its message after ``kernel: `` when given)."""
        cls, message = self.by_code.get(code, (RuntimeError, f"unknown return code {code}"))
        return cls(f"{kernel}: {message}" if kernel else message)


# csrc/imij_kernels.h IMIJ_ENC_E_*: the encoders' kernels (payload/counts.py and the encoder's modules of payload/entropy/);
# SPACE and MANY are outcomes their callers act on, raised only if one escapes them
ENCODER = KernelCodes("IMIJ_ENC_", {
    "E_ARGS": (ValueError, "bad arguments"),
    "E_SPACE": (ValueError, "the stream does not fit its buffer"),
    "E_FREQ": (ValueError, "a symbol without a frequency in its table"),
    "E_MANY": (ValueError, "more than 256 distinct tuples"),
    "E_VALUE": (ValueError, "a value of 2^depth or more"),
    "E_SIZE": (RuntimeError, "a buffer is smaller than the kernel writes"),
})
