"""Tokens (3.2): the hybrid-integer value scheme and the zero-run scheme of one model.

A model's parameters k and m and its slot depth n fix two schemes: value tokens code a zigzag
residual u, run tokens (which follow the value tokens in the alphabet) code a zero run of len
positions as len - 1. Both split a token into a base and nb extra bits the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property

from imij_plugins.errors import Corrupt

MAX_ALPHABET = 256  # 3.2: value + run tokens
RUN_CAP = 1 << 15  # 3.2: a single run token never exceeds 2^15 positions
RUN_MSB_LIMIT = 24  # 3.2: run tokens 2^rk + (24 - rk) * 2^m


def split_token(t: int, kp: int, m: int) -> tuple[int, int]:
    """3.2: token t of a scheme with parameters (k', m) as (base, nb)."""
    if t < (1 << kp):
        return t, 0
    q = t - (1 << kp)
    msb = kp + (q >> m)
    nb = msb - m
    return ((1 << m) | (q & ((1 << m) - 1))) << nb, nb


def join_token(v: int, kp: int, m: int) -> tuple[int, int, int]:
    """The inverse of split_token: the token, nb and extra bits e with base + e = v."""
    if v < (1 << kp):
        return v, 0, 0
    msb = v.bit_length() - 1
    nb = msb - m
    top = v >> nb  # m + 1 bits: the leading one and m mantissa bits
    t = (1 << kp) + ((msb - kp) << m) + (top - (1 << m))
    return t, nb, v & ((1 << nb) - 1)


def clamped_k(k: int, m: int, n: int) -> int:
    """3.2: kv = min(max(k, m), n)."""
    return min(max(k, m), n)


@dataclass(frozen=True)
class Scheme:
    """The value and run schemes of a model with parameters (k, m) at slot depth n (3.2)."""

    n: int
    k: int  # already the clamped kv (3.3 makes any other k corrupt)
    m: int

    @property
    def value_tokens(self) -> int:
        # 3.2: 2^n if kv >= n, else 2^kv + (n - kv) * 2^m
        if self.k >= self.n:
            return 1 << self.n
        return (1 << self.k) + (self.n - self.k) * (1 << self.m)

    @property
    def rk(self) -> int:
        return max(self.k, self.m)  # 3.2: rk = max(kv, m), rm = m

    @property
    def run_tokens(self) -> int:
        return (1 << self.rk) + (RUN_MSB_LIMIT - self.rk) * (1 << self.m)  # 3.2

    @property
    def alphabet(self) -> int:
        return self.value_tokens + self.run_tokens

    def token(self, t: int) -> tuple[bool, int, int]:
        """Symbol t of the alphabet as (is_run, base, nb) (3.2)."""
        return self.tokens[t]

    @cached_property
    def tokens(self) -> tuple[tuple[bool, int, int], ...]:
        """Every symbol of the alphabet as (is_run, base, nb) (3.2), computed once per scheme."""
        vt = self.value_tokens
        out = [(False, *split_token(t, self.k, self.m)) for t in range(vt)]
        out += [(True, *split_token(t, self.rk, self.m)) for t in range(self.run_tokens)]
        return tuple(out)  # type: ignore[arg-type]

    def run_token_past_cap(self, t: int) -> bool:
        """3.3: a run token whose shortest run (base + 1) exceeds the cap can never be valid.

        Token ranges are aligned powers of two, so a run token either stays within 2^15
        positions for every extra-bits value or exceeds it for every one.
        """
        is_run, base, _ = self.token(t)
        return is_run and base + 1 > RUN_CAP

    @cached_property
    def first_capped_run(self) -> int:
        """The first symbol from which every run token is past the cap (the alphabet's end if none)."""
        return next((t for t in range(self.value_tokens, self.alphabet) if self.run_token_past_cap(t)), self.alphabet)

    def value_symbol(self, u: int) -> tuple[int, int, int]:
        """The value token for residual u (0 <= u < 2^n): (symbol, nb, extra bits)."""
        return join_token(u, self.k, self.m)

    def run_symbol(self, length: int) -> tuple[int, int, int]:
        """The run token for a zero run of ``length`` positions (1 ..= 2^15)."""
        t, nb, e = join_token(length - 1, self.rk, self.m)
        return self.value_tokens + t, nb, e


@cache
def checked_scheme(k: int, m: int, n: int) -> Scheme:
    """3.3's parameter rules for a model read at slot depth n; each failure is Corrupt.

    Cached: a scheme is immutable and its token table is computed once per (k, m, n)."""
    if k > 16 or m > 4:  # 3.3
        raise Corrupt(f"model k {k} / m {m} outside k <= 16, m <= 4")
    if k != clamped_k(k, m, n):  # 3.3: writers write the clamped kv
        raise Corrupt(f"model k {k} is not the clamped kv {clamped_k(k, m, n)} (m {m}, depth {n})")
    scheme = Scheme(n, k, m)
    if scheme.alphabet > MAX_ALPHABET:  # 3.3 / 3.2
        raise Corrupt(f"model alphabet of {scheme.alphabet} symbols exceeds 256 (k {k}, m {m}, depth {n})")
    return scheme


def valid_parameters(n: int) -> list[tuple[int, int]]:
    """Every (k, m) a model of slot depth n may carry (3.3), for writers and tests."""
    out = []
    for m in range(5):
        for k in range(17):
            if k == clamped_k(k, m, n) and Scheme(n, k, m).alphabet <= MAX_ALPHABET:
                out.append((k, m))
    return out
