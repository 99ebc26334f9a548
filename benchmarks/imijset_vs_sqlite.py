"""IMIJ-Set vs SQLite: append throughput and warm point-lookup latency on the same small blobs.

Both stores get the same N blobs of SIZE bytes under integer keys 0..N-1, committed in batches of
BATCH (one IMIJ-Set footer / one SQLite transaction per batch, both fsynced: SQLite in WAL mode
with its default synchronous=FULL, IMIJ-Set with durable=True, two syncs per commit, and with
durable="checked", one sync per commit like SQLite's WAL). Lookups read random keys from a
freshly opened reader after a warm-up pass; IMIJ-Set's lookups check the blob digest.

    python benchmarks/imijset_vs_sqlite.py                 # the 1,000,000-entry run
    python benchmarks/imijset_vs_sqlite.py -n 20000 --json  # a quick run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time

import imij_plugins.imijset as imijset
from imij_plugins.imijset.reader import DEFAULT_CACHE_BYTES


def make_blobs(n: int, size: int, seed: int) -> list[bytes]:
    """``n`` distinct pseudo-random blobs (1,000 random bodies, each tagged with its index)."""
    rng = random.Random(seed)
    bodies = [rng.randbytes(size) for _ in range(min(n, 1000))]
    return [i.to_bytes(8, "little") + bodies[i % len(bodies)][8:] for i in range(n)]


def append_imijset(path: str, blobs: list[bytes], batch: int, durable: object) -> float:
    """Appends per second into a new archive."""
    start = time.perf_counter()
    with imijset.open(path, "w", durable=durable) as arc:  # type: ignore[arg-type]
        for i, blob in enumerate(blobs):
            arc.append(i, blob)
            if (i + 1) % batch == 0:
                arc.commit()
    return len(blobs) / (time.perf_counter() - start)


def append_sqlite(path: str, blobs: list[bytes], batch: int) -> float:
    """Appends per second into a new database (WAL, synchronous=FULL, one transaction per batch)."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
    start = time.perf_counter()
    for b in range(0, len(blobs), batch):
        con.execute("BEGIN")
        con.executemany("INSERT INTO blobs VALUES (?, ?)", ((i, blobs[i]) for i in range(b, min(b + batch, len(blobs)))))
        con.execute("COMMIT")
    rate = len(blobs) / (time.perf_counter() - start)
    con.close()
    return rate


def lookup_imijset(path: str, blobs: list[bytes], keys: list[int], warm: int, cache_bytes: int) -> dict:
    with imijset.open(path, "r", cache_bytes=cache_bytes) as arc:
        start = time.perf_counter()
        first = arc.get(keys[0])  # opens the segment key-range index
        open_s = time.perf_counter() - start
        assert first == blobs[keys[0]]
        for k in keys[:warm]:
            arc.get(k)
        start = time.perf_counter()
        for k in keys:
            arc.get(k)
        lookup_s = time.perf_counter() - start
        segments = arc.segments
    with imijset.open(path, "r", cache_bytes=0) as arc:  # every leaf fetched, checked and parsed again
        arc.get(keys[0])
        cold = keys[: max(1, len(keys) // 5)]
        start = time.perf_counter()
        for k in cold:
            arc.get(k)
        uncached_s = time.perf_counter() - start
    return {
        "lookup_us": lookup_s / len(keys) * 1e6,
        "uncached_lookup_us": uncached_s / len(cold) * 1e6,
        "first_lookup_ms": open_s * 1e3,
        "file_bytes": os.path.getsize(path),
        "segments": segments,
    }


def lookup_sqlite(path: str, blobs: list[bytes], keys: list[int], warm: int) -> dict:
    con = sqlite3.connect(path, isolation_level=None)
    query = "SELECT data FROM blobs WHERE id = ?"
    assert con.execute(query, (keys[0],)).fetchone()[0] == blobs[keys[0]]
    for k in keys[:warm]:
        con.execute(query, (k,)).fetchone()
    start = time.perf_counter()
    for k in keys:
        con.execute(query, (k,)).fetchone()
    lookup_s = time.perf_counter() - start
    con.close()
    size = sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))
    return {"lookup_us": lookup_s / len(keys) * 1e6, "file_bytes": size}


def run(n: int, size: int, batch: int, lookups: int, directory: str, cache_bytes: int, rounds: int = 3, seed: int = 1) -> dict:
    """Appends: ``rounds`` rounds, each writing every store once in turn (the VM's sync latency
    drifts over seconds, so the stores take turns), medians reported; lookups on the last files."""
    blobs = make_blobs(n, size, seed)
    rng = random.Random(seed + 1)
    keys = [rng.randrange(n) for _ in range(lookups)]
    warm = min(lookups, 20000)
    imij_path, lite_path = os.path.join(directory, "bench.imijset"), os.path.join(directory, "bench.sqlite")
    rates: dict[str, list[float]] = {"durable": [], "checked": [], "sqlite": []}
    for _ in range(rounds):
        rates["checked"].append(append_imijset(imij_path, blobs, batch, "checked"))
        rates["sqlite"].append(append_sqlite(lite_path, blobs, batch))
        rates["durable"].append(append_imijset(imij_path, blobs, batch, True))
    imij = lookup_imijset(imij_path, blobs, keys, warm, cache_bytes)
    lite = lookup_sqlite(lite_path, blobs, keys, warm)
    imij["appends_per_s"] = statistics.median(rates["durable"])
    imij["checked_appends_per_s"] = statistics.median(rates["checked"])
    lite["appends_per_s"] = statistics.median(rates["sqlite"])
    return {
        "n": n,
        "blob_bytes": size,
        "batch": batch,
        "lookups": lookups,
        "rounds": rounds,
        "cache_bytes": cache_bytes,
        "append_rates": rates,
        "imijset": imij,
        "sqlite": lite,
        "append_ratio": imij["appends_per_s"] / lite["appends_per_s"],
        "checked_append_ratio": imij["checked_appends_per_s"] / lite["appends_per_s"],
        "lookup_ratio": imij["lookup_us"] / lite["lookup_us"],
    }


def report(r: dict) -> str:
    i, s = r["imijset"], r["sqlite"]
    return "\n".join(
        [
            f"{r['n']:,} blobs of {r['blob_bytes']} bytes, batches of {r['batch']:,}, {r['lookups']:,} random warm lookups; "
            f"appends: median of {r['rounds']} rounds, the stores taking turns",
            "",
            "| | IMIJ-Set | SQLite (WAL) | IMIJ-Set / SQLite |",
            "|---|---:|---:|---:|",
            f"| appends/s, durable=True | {i['appends_per_s']:,.0f} | {s['appends_per_s']:,.0f} | {r['append_ratio']:.2f}x |",
            f"| appends/s, durable=\"checked\" | {i['checked_appends_per_s']:,.0f} | {s['appends_per_s']:,.0f} "
            f"| {r['checked_append_ratio']:.2f}x |",
            f"| lookup µs | {i['lookup_us']:.1f} | {s['lookup_us']:.1f} | {r['lookup_ratio']:.2f}x |",
            f"| file bytes | {i['file_bytes']:,} | {s['file_bytes']:,} | {i['file_bytes'] / s['file_bytes']:.2f}x |",
            "",
            f"IMIJ-Set: {i['segments']:,} segments; first lookup (builds the segment key-range index) "
            f"{i['first_lookup_ms']:.0f} ms; parsed-page cache {r['cache_bytes'] >> 20} MiB; with no page cache "
            f"(every leaf read, digest-checked and parsed per lookup) {i['uncached_lookup_us']:.1f} µs per lookup.",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="blobs to append")
    parser.add_argument("--size", type=int, default=200, help="bytes per blob")
    parser.add_argument("--batch", type=int, default=1000, help="blobs per commit")
    parser.add_argument("--lookups", type=int, default=100_000, help="timed random lookups")
    parser.add_argument("--rounds", type=int, default=3, help="append rounds (medians reported)")
    parser.add_argument("--cache-bytes", type=int, default=DEFAULT_CACHE_BYTES, help="IMIJ-Set parsed-page cache size")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed afterwards)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        result = run(args.n, args.size, args.batch, args.lookups, directory, args.cache_bytes, args.rounds)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
