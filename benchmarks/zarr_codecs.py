"""zarr 3 arrays of the corpus's 16-bit and float images: the IMI codec against zarr's defaults and
imagecodecs' PNG and JPEG XL.

    python benchmarks/zarr_codecs.py                     # prints the RESULTS.md section
    python benchmarks/zarr_codecs.py --json zarr.json --markdown section.md

Each image is one array in a zarr ``MemoryStore``, chunked (256, 256[, C]) with partial edge chunks,
through each codec: stored bytes (every chunk, no metadata), write MB/s (``z[...] = a``) and read
MB/s (``z[...]``) of raw pixel bytes, medians of timed runs (``run.py``'s timer), every read
checked bit for bit. zarr runs chunks on its thread pool, so every codec uses both cores. The
imagecodecs codecs are their numcodecs classes behind zarr's numcodecs array-to-bytes wrapper.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import zarr
from zarr.codecs import BloscCodec

from imij_plugins.codecs.zarr3 import ImiCodec

HERE = Path(__file__).resolve().parent
CLASSES = ("16-bit", "float")
CHUNK = 256


def _run_module():
    """benchmarks/run.py, for its corpus loader, timer and number formats."""
    if "imij_bench_run" not in sys.modules:
        spec = importlib.util.spec_from_file_location("imij_bench_run", HERE / "run.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["imij_bench_run"] = module
        spec.loader.exec_module(module)
    return sys.modules["imij_bench_run"]


def _imagecodecs_serializers() -> dict[str, tuple[Callable[[], object], Callable[[np.ndarray], bool]]]:
    """PNG and JPEG XL (lossless) as zarr 3 serializers, where imagecodecs is installed."""
    try:
        import imagecodecs.numcodecs as icn
        from zarr.codecs.numcodecs._codecs import _NumcodecsArrayBytesCodec
    except ImportError:
        return {}
    icn.register_codecs()

    class Png(_NumcodecsArrayBytesCodec, codec_name="imagecodecs_png"):
        pass

    class Jpegxl(_NumcodecsArrayBytesCodec, codec_name="imagecodecs_jpegxl"):
        pass

    ints = {np.dtype("u1"), np.dtype("u2")}
    return {
        "PNG (imagecodecs)": (lambda: Png(), lambda a: a.dtype in ints),
        "JPEG XL lossless (imagecodecs)": (lambda: Jpegxl(lossless=True), lambda a: a.dtype in ints | {np.dtype("f4")}),
    }


def codecs() -> dict[str, tuple[Callable[[], dict], Callable[[np.ndarray], bool]]]:
    """name -> (create_array keywords, whether it stores that array)."""
    every = lambda a: True  # noqa: E731
    out: dict = {
        "IMI (imij.imi)": (lambda: {"serializer": ImiCodec(), "compressors": None}, every),
        "IMI quick": (lambda: {"serializer": ImiCodec(codec="quick", effort=1), "compressors": None}, every),
        "zarr default (zstd)": (lambda: {}, every),
        "blosc zstd + shuffle": (lambda: {"compressors": BloscCodec(cname="zstd", clevel=5, shuffle="shuffle")}, every),
    }
    for name, (make, supports) in _imagecodecs_serializers().items():
        out[name] = (lambda make=make: {"serializer": make(), "compressors": None}, supports)
    return out


def _stored_bytes(store: zarr.storage.MemoryStore) -> int:
    return sum(len(v) for k, v in store._store_dict.items() if not k.endswith("zarr.json"))


def measure(a: np.ndarray, keywords: dict, timer) -> dict:
    """One image through one codec: stored bytes, write and read seconds, exact or not."""
    store = zarr.storage.MemoryStore()
    chunks = (CHUNK, CHUNK, *a.shape[2:])
    z = zarr.create_array(store=store, shape=a.shape, dtype=a.dtype, chunks=chunks, fill_value=0, **keywords)

    def write() -> None:
        z[...] = a

    _, write_times, _ = timer.measure(write)
    back, read_times, _ = timer.measure(lambda: z[...])
    return {"bytes": _stored_bytes(store), "write_s": float(np.median(write_times)), "read_s": float(np.median(read_times)),
            "exact": back.tobytes() == a.tobytes()}


def run(items: list[tuple[dict, np.ndarray]], names: list[str] | None, timer) -> list[dict]:
    rows = []
    table = codecs()
    for record, a in items:
        for name, (keywords, supports) in table.items():
            if names and name not in names:
                continue
            if not supports(a):
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # zarr: numcodecs codecs are not in the zarr 3 specification
                row = measure(a, keywords(), timer)
            rows.append({"image": record["name"], "class": record["class"], "raw": a.nbytes, "codec": name, **row})
    return rows


def section(rows: list[dict], machine: dict) -> str:
    """RESULTS.md's section: per class and codec, size against raw and MB/s over the images it stores."""
    r = _run_module()
    lines = [
        "## zarr codecs",
        "",
        "`python benchmarks/zarr_codecs.py`: the corpus's 16-bit and float images as zarr 3 arrays in a",
        f"`MemoryStore`, chunks of {CHUNK} x {CHUNK} (x channels) with partial edges; size is every chunk's",
        "stored bytes over the raw bytes; MB/s of raw bytes per second for `z[...] = a` and `z[...]`",
        "(zarr runs chunks on its thread pool: both cores), totals over the images a codec stores. Every read",
        "is checked bit for bit. Machine: " + ", ".join(f"{k} {machine[k]}" for k in ("cpu", "cores", "python") if k in machine)
        + f"; zarr {zarr.__version__}" + (f", libjxl {machine['libjxl']}" if "libjxl" in machine else "") + ".",
        "",
    ]
    for cls in CLASSES:
        mine = [x for x in rows if x["class"] == cls]
        if not mine:
            continue
        images = sorted({x["image"] for x in mine})
        lines += [f"**{cls}** ({len(images)} images, {sum({x['image']: x['raw'] for x in mine}.values()) / 1e6:.1f} MB raw)", "",
                  "| codec | images | size / raw | write MB/s | read MB/s | exact |", "|---|---:|---:|---:|---:|---|"]
        for codec in dict.fromkeys(x["codec"] for x in mine):
            got = [x for x in mine if x["codec"] == codec]
            raw = sum(x["raw"] for x in got)
            size = sum(x["bytes"] for x in got) / raw
            write = raw / sum(x["write_s"] for x in got) / 1e6
            read = raw / sum(x["read_s"] for x in got) / 1e6
            exact = "yes" if all(x["exact"] for x in got) else "NO"
            lines.append(f"| {codec} | {len(got)} | {r.fmt(size, 3)} | {r.fmt(write)} | {r.fmt(read)} | {exact} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    r = _run_module()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(r.corpus.DEFAULT_DIR), help="a built corpus folder (benchmarks/corpus.py)")
    ap.add_argument("--codecs", default=None, help="comma list of codec names (default: all available)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-repeats", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--single-above", type=float, default=2.0)
    ap.add_argument("--json", default=None, help="write every measurement here")
    ap.add_argument("--markdown", default=None, help="write the RESULTS.md section here (default: print it)")
    args = ap.parse_args(argv)
    items = [(rec, a) for rec, a in r.corpus.load(Path(args.corpus)) if rec["class"] in CLASSES]
    timer = r.Timer(args, r.Memory(enabled=False))
    rows = run(items, args.codecs.split(",") if args.codecs else None, timer)
    machine = r.machine_info()
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    text = section(rows, machine)
    if args.markdown:
        Path(args.markdown).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
