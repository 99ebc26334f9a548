"""Where an entropy-coded file's bytes go, per unit kind: the payload head (maps,
models, records) and the unit records by their stripe layout byte (2.4 regular stripes, 2.5
palette stripes, 2.10 bilevel and 2.14 template palette stripes), per image and per corpus class,
at the efforts asked for, beside PNG (Pillow, level 9) and WebP lossless (Pillow, method 6) sizes.

    python benchmarks/unit_kinds.py [--classes screenshot graphics] [--efforts 5,9]
"""

from __future__ import annotations

import argparse
import io
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import load  # noqa: E402

from imij_plugins.container.header import Header  # noqa: E402
from imij_plugins.payload.entropy.encoder import encode_tuned  # noqa: E402
from imij_plugins.payload.head import read_lossless_head  # noqa: E402
from imij_plugins.payload.units import walk_units  # noqa: E402
from imij_plugins.pixels.dtypes import layout_code, sample_code  # noqa: E402
from imij_plugins.wire.cursor import Cursor  # noqa: E402

KINDS = ("head", "regular", "palette", "bilevel", "template")


def kind_of(layout: int) -> str:
    """2.4 / 2.5 / 2.10 / 2.14: a unit's kind from its stripe layout byte."""
    if layout <= 3:
        return "regular"
    if layout == 0x80:
        return "palette"
    return "bilevel" if layout in (0x81, 0x82) else "template"


def payload_bytes(image: np.ndarray, effort: int) -> tuple[Counter, Counter]:
    """Bytes and unit counts per kind of the entropy payload ``encode`` writes at ``effort``."""
    enc = encode_tuned(image, effort=effort)
    a = image if image.ndim == 3 else image[:, :, None]
    header = Header(a.shape[1], a.shape[0], sample=sample_code(a.dtype), channels=layout_code(a.shape[2], None),
                    mask=enc.features_used)
    head = read_lossless_head(Cursor(enc.payload, 0, len(enc.payload), "DATA head"), header)
    sizes, counts = Counter(head=head.end), Counter()
    for unit in walk_units(enc.payload, head, len(enc.payload)):
        kind = kind_of(enc.payload[unit.body_start])
        sizes[kind] += unit.span
        counts[kind] += 1
    return sizes, counts


def other_sizes(image: np.ndarray) -> tuple[int, int]:
    """PNG (level 9) and WebP lossless (method 6) file sizes of an 8-bit image."""
    a = image if image.ndim == 3 else image[:, :, None]
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[a.shape[2]]
    im = Image.fromarray(a[:, :, 0] if mode == "L" else a, mode)
    png, webp = io.BytesIO(), io.BytesIO()
    im.save(png, "PNG", compress_level=9)
    (im.convert("RGB") if mode == "L" else im).save(webp, "WEBP", lossless=True, method=6, exact=True)
    return png.tell(), webp.tell()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parent / ".corpus"))
    ap.add_argument("--classes", nargs="*", default=["screenshot", "graphics"])
    ap.add_argument("--efforts", default="5,9")
    args = ap.parse_args()
    efforts = [int(e) for e in args.efforts.split(",")]
    for cls in args.classes:
        images = [(r["name"], a) for r, a in load(Path(args.corpus)) if r["class"] == cls and a.dtype == np.uint8]
        print(f"\n### {cls} ({len(images)} images)\n")
        print("| image | effort | bytes | " + " | ".join(KINDS) + " | units (reg/pal/bil/tpl) | × PNG 9 | × WebP |")
        print("|---|---:|---:|" + "---:|" * len(KINDS) + "---|---:|---:|")
        totals = {e: Counter() for e in efforts}
        ratios = {e: ([], []) for e in efforts}
        for name, a in images:
            png, webp = other_sizes(a)
            for e in efforts:
                sizes, counts = payload_bytes(a, e)
                total = sum(sizes.values())
                totals[e].update(sizes)
                ratios[e][0].append(total / png)
                ratios[e][1].append(total / webp)
                shares = " | ".join(f"{100 * sizes[k] / total:.0f}%" for k in KINDS)
                units = "/".join(str(counts[k]) for k in KINDS[1:])
                print(f"| {name} | {e} | {total:,} | {shares} | {units} | {total / png:.2f} | {total / webp:.2f} |")
        for e in efforts:
            total = sum(totals[e].values())
            shares = " | ".join(f"{100 * totals[e][k] / total:.0f}%" for k in KINDS)
            gm = [math.exp(sum(map(math.log, r)) / len(r)) for r in ratios[e]]
            print(f"| **all** | {e} | {total:,} | {shares} | | {gm[0]:.2f} | {gm[1]:.2f} |")


if __name__ == "__main__":
    main()
