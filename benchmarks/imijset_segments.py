"""IMIJ-Set point lookups against the number of segments, with batches whose keys interleave.

N entries of SIZE bytes get the keys 0..N-1 shuffled, then committed in C sorted batches (one
segment each), so every segment's key range spans nearly all keys. Each archive is opened fresh,
warmed with one pass over the lookup keys, then timed; the first lookup (which builds the merged
key index when one is needed) is reported on its own, with the index's size. ``--index-bytes 0``
disables the index (the key-range path alone). A "sequential" row commits increasing keys.
``--auto`` also writes the largest interleaved case with ``compact="auto"`` (durable=False, as
every case here) and reports its rewrites: bytes rewritten per byte appended (the size of the
same archive written without it), and the time against plain appends.

    python benchmarks/imijset_segments.py                      # the table in RESULTS.md
    python benchmarks/imijset_segments.py --commits 1 2000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

import imij_plugins.imijset as imijset
from imij_plugins.imijset.reader import DEFAULT_INDEX_BYTES


def write(path: str, n: int, size: int, commits: int, interleave: bool, seed: int, **options: object) -> dict:
    """N entries in ``commits`` sorted batches; keys shuffled across batches when ``interleave``.

    Returns the seconds taken and the bytes automatic compaction rewrote (the file's size after
    each commit that left one segment behind more than one).
    """
    rng = random.Random(seed)
    keys = list(range(n))
    if interleave:
        rng.shuffle(keys)
    body = rng.randbytes(size)
    rewritten = rewrites = 0
    start = time.perf_counter()
    with imijset.open(path, "w", durable=False, **options) as arc:  # type: ignore[arg-type]
        for b in range(commits):
            before = arc.segments
            for k in sorted(keys[b * n // commits : (b + 1) * n // commits]):
                arc.append(k, k.to_bytes(8, "little") + body[8:])
            arc.commit()
            if arc.segments == 1 and before >= 1:
                rewrites += 1
                rewritten += os.path.getsize(path)
    return {"seconds": time.perf_counter() - start, "rewrites": rewrites, "rewritten": rewritten}


def measure(path: str, n: int, lookups: int, index_bytes: int, seed: int) -> dict:
    rng = random.Random(seed + 1)
    keys = [rng.randrange(n) for _ in range(lookups)]
    with imijset.open(path, "r", index_bytes=index_bytes) as arc:
        start = time.perf_counter()
        arc.get(keys[0])
        first_s = time.perf_counter() - start
        for k in keys:  # warm the page cache
            arc.get(k)
        start = time.perf_counter()
        for k in keys:
            arc.get(k)
        lookup_s = time.perf_counter() - start
        stats = arc.key_index
        return {
            "segments": arc.segments,
            "lookup_us": lookup_s / len(keys) * 1e6,
            "first_lookup_ms": first_s * 1e3,
            "index_keys": stats.entries if stats else 0,
            "index_bytes": stats.nbytes if stats else 0,
            "index_build_ms": stats.build_seconds * 1e3 if stats else 0.0,
        }


def run(n: int, size: int, commits: list[int], lookups: int, index_bytes: int, directory: str, seed: int = 1) -> list[dict]:
    rows = []
    cases = [(c, True) for c in commits] + [(max(commits), False)]
    for c, interleave in cases:
        path = os.path.join(directory, f"seg-{c}-{int(interleave)}.imijset")
        write(path, n, size, c, interleave, seed)
        row = {"commits": c, "keys": "interleaved" if interleave else "sequential", "n": n, "blob_bytes": size}
        row.update(measure(path, n, lookups, index_bytes, seed))
        rows.append(row)
        os.unlink(path)
    return rows


def auto_cost(n: int, size: int, commits: int, directory: str, seed: int = 1) -> dict:
    """Interleaved commits with and without ``compact="auto"``: rewrites and their cost."""
    path = os.path.join(directory, "auto.imijset")
    plain = write(path, n, size, commits, True, seed)
    appended = os.path.getsize(path)
    auto = write(path, n, size, commits, True, seed, compact="auto")
    final_bytes = os.path.getsize(path)
    os.unlink(path)
    return {
        "commits": commits,
        "rewrites": auto["rewrites"],
        "rewritten_per_appended": auto["rewritten"] / appended,
        "seconds_plain": plain["seconds"],
        "seconds_auto": auto["seconds"],
        "final_file_bytes": final_bytes,
    }


def report(rows: list[dict]) -> str:
    base = rows[0]["lookup_us"]
    lines = [
        f"{rows[0]['n']:,} entries of {rows[0]['blob_bytes']} bytes, warm random lookups (`get`, digest checked)",
        "",
        "| commits | keys | segments | lookup µs | vs first row | first lookup ms | index build ms | index keys | index bytes |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['commits']:,} | {r['keys']} | {r['segments']:,} | {r['lookup_us']:.1f} | {r['lookup_us'] / base:.2f}x "
            f"| {r['first_lookup_ms']:.1f} | {r['index_build_ms']:.1f} | {r['index_keys']:,} | {r['index_bytes']:,} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20_000, help="entries")
    parser.add_argument("--size", type=int, default=64, help="bytes per blob")
    parser.add_argument("--commits", type=int, nargs="+", default=[1, 100, 1000, 2000], help="batches to commit")
    parser.add_argument("--lookups", type=int, default=20_000, help="timed random lookups")
    parser.add_argument("--index-bytes", type=int, default=DEFAULT_INDEX_BYTES, help="key index budget (0: none)")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed afterwards)")
    parser.add_argument("--auto", action="store_true", help='also measure compact="auto"')
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        rows = run(args.n, args.size, args.commits, args.lookups, args.index_bytes, directory)
        auto = auto_cost(args.n, args.size, max(args.commits), directory) if args.auto else None
    if args.json:
        print(json.dumps({"lookups": rows, "auto": auto}, indent=2))
        return 0
    print(report(rows))
    if auto is not None:
        print(
            f"\ncompact=\"auto\", {auto['commits']:,} interleaved commits (durable=False): {auto['rewrites']} rewrites, "
            f"{auto['rewritten_per_appended']:.2f} bytes rewritten per byte appended, "
            f"{auto['seconds_auto']:.2f} s against {auto['seconds_plain']:.2f} s without, final file {auto['final_file_bytes']:,} bytes"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
