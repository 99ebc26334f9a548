"""Opt-in long fuzz of the C entropy kernel: mutated payloads of random syntax must only raise ImijError.

Run: python benchmarks/fuzz_entropy_kernel.py [seconds]. A crash (segfault) kills the process,
which is the failure this looks for; CI runs the short version in tests/payload/entropy.
"""

from __future__ import annotations

import random
import sys
import time
import warnings

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "tests"))

from payload.entropy.gen import header_of, random_case  # noqa: E402
from payload.entropy.syntax_writer import decode_entropy_payload, encode_entropy_payload  # noqa: E402
from payload.entropy.test_entropy_mutation import _mutate  # noqa: E402

from imij_plugins import _backend  # noqa: E402
from imij_plugins.errors import ImijError  # noqa: E402


def main(seconds: float) -> None:
    _backend.set_backend("c")
    rng = random.Random(12345)
    end = time.time() + seconds
    cases = mutations = 0
    warnings.simplefilter("error")
    while time.time() < end:
        case = random_case(rng.randrange(1 << 30))
        encoded = encode_entropy_payload(case.image, options=case.options, reference=case.reference)
        header = header_of(case, encoded.features_used)
        cases += 1
        for _ in range(200):
            data = _mutate(rng, encoded.payload, encoded.head_len)
            try:
                decode_entropy_payload(data, header, case.reference)
            except ImijError:
                pass
            mutations += 1
    print(f"{cases} payloads, {mutations} mutations, no crash")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60)
