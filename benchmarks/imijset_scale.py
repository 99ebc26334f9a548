"""IMIJ-Set at scale against SQLite and LMDB: N entries in C commits, keys interleaved or sequential.

Every store gets the same N blobs of SIZE bytes in the same C batches, one synced commit each:
IMIJ-Set ``durable=True`` (two syncs a commit) and ``durable="checked"`` (one), SQLite in WAL
mode with synchronous=FULL (one transaction a batch, ``executemany``), LMDB with its default
sync (one write transaction a batch, ``putmulti``; keys 8 bytes big-endian). "Interleaved"
shuffles the keys 0..N-1 and commits them in sorted batches, so every batch spans the whole key
space; "sequential" commits increasing keys.

Reading runs in a fresh process per store and file (the OS page cache is warm: the files were
just written): the time to open and answer the first lookup (IMIJ-Set builds its key-range
index, and for interleaved keys its merged key index, then), then LOOKUPS random keys after a
warm-up pass over them, each checked against its blob, and the reader's memory: the growth of
its resident set (VmRSS) from before opening to after the lookups, which counts the file pages a
memory map (LMDB) touched as well as heap.

    python benchmarks/imijset_scale.py                         # the table in RESULTS.md
    python benchmarks/imijset_scale.py -n 100000 --commits 1000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

import lmdb

import imij_plugins.imijset as imijset

STORES = ("imijset", "imijset-checked", "sqlite", "lmdb")
LMDB_MAP = 1 << 34  # address space reserved for the map; the file grows as written


def batches(n: int, commits: int, interleaved: bool, seed: int) -> Iterator[list[int]]:
    """The keys of each commit, in increasing order."""
    keys = list(range(n))
    if interleaved:
        random.Random(seed).shuffle(keys)
    for b in range(commits):
        yield sorted(keys[b * n // commits : (b + 1) * n // commits])


def blob(key: int, body: bytes) -> bytes:
    """The blob stored under ``key``: the key, then a shared random body."""
    return key.to_bytes(8, "little") + body[8:]


def file_bytes(store: str, path: str) -> int:
    if store == "lmdb":
        return os.path.getsize(os.path.join(path, "data.mdb"))
    return sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))


def append(store: str, path: str, n: int, commits: int, interleaved: bool, size: int, seed: int) -> float:
    """Write every batch as one synced commit; return appends per second."""
    body = random.Random(seed + 7).randbytes(size)
    plan = list(batches(n, commits, interleaved, seed))
    start = time.perf_counter()
    if store.startswith("imijset"):
        with imijset.open(path, "w", durable="checked" if store == "imijset-checked" else True) as arc:
            for keys in plan:
                for k in keys:
                    arc.append(k, blob(k, body))
                arc.commit()
    elif store == "sqlite":
        con = sqlite3.connect(path, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
        for keys in plan:
            con.execute("BEGIN")
            con.executemany("INSERT INTO blobs VALUES (?, ?)", [(k, blob(k, body)) for k in keys])
            con.execute("COMMIT")
        con.close()
    else:
        env = lmdb.open(path, map_size=LMDB_MAP)
        for keys in plan:
            with env.begin(write=True) as txn:
                txn.cursor().putmulti([(k.to_bytes(8, "big"), blob(k, body)) for k in keys])
        env.close()
    return n / (time.perf_counter() - start)


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _reader(store: str, path: str) -> tuple[Callable[[int], bytes], Callable[[], None]]:
    """Open ``store`` for reading: a lookup function and a closer."""
    if store.startswith("imijset"):
        arc = imijset.open(path)
        return arc.get, arc.close
    if store == "sqlite":
        con = sqlite3.connect(path, isolation_level=None)
        query = "SELECT data FROM blobs WHERE id = ?"
        return (lambda k: con.execute(query, (k,)).fetchone()[0]), con.close
    env = lmdb.open(path, readonly=True, lock=False, map_size=LMDB_MAP)
    txn = env.begin(buffers=False)
    return (lambda k: txn.get(k.to_bytes(8, "big"))), env.close


def lookups(store: str, path: str, n: int, count: int, size: int, seed: int) -> dict:
    """Run in a fresh process: open, first lookup, warm-up, timed lookups, RSS growth."""
    body = random.Random(seed + 7).randbytes(size)
    rng = random.Random(seed + 1)
    keys = [rng.randrange(n) for _ in range(count)]
    before = _rss()
    start = time.perf_counter()
    get, close = _reader(store, path)
    assert get(keys[0]) == blob(keys[0], body)
    open_s = time.perf_counter() - start
    for k in keys:
        get(k)
    start = time.perf_counter()
    for k in keys:
        if get(k) != blob(k, body):
            raise AssertionError(f"{store}: wrong blob for key {k}")
    lookup_s = time.perf_counter() - start
    rss = _rss() - before
    close()
    return {"open_ms": open_s * 1e3, "lookup_us": lookup_s / count * 1e6, "reader_rss": rss}


def remove(store: str, path: str) -> None:
    """Delete what ``append`` wrote, so the next round starts from nothing."""
    if store == "lmdb":
        shutil.rmtree(path, ignore_errors=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.isfile(path + suffix):
            os.unlink(path + suffix)


def run(
    n: int, commits: int, size: int, count: int, directory: str, stores: tuple[str, ...] = STORES, rounds: int = 1, seed: int = 1
) -> list[dict]:
    """Per key order: ``rounds`` rounds in which the stores take turns appending (the VM's sync
    latency drifts over seconds), the median rate kept; then the reads of the last round's files."""
    rows = []
    for interleaved in (False, True):
        rates: dict[str, list[float]] = {store: [] for store in stores}
        for _ in range(rounds):
            for store in stores:
                path = os.path.join(directory, f"{store}-{'i' if interleaved else 's'}")
                remove(store, path)
                rates[store].append(append(store, path, n, commits, interleaved, size, seed))
        for store in stores:
            path = os.path.join(directory, f"{store}-{'i' if interleaved else 's'}")
            args = [sys.executable, __file__, "--read", store, path, "-n", str(n), "--lookups", str(count),
                    "--size", str(size), "--seed", str(seed)]  # fmt: skip
            read = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
            rows.append({"store": store, "interleaved": interleaved, "appends_per_s": statistics.median(rates[store]),
                         "append_rates": rates[store], "file_bytes": file_bytes(store, path), **read})  # fmt: skip
    return rows


NAMES = {"imijset": "IMIJ-Set", "imijset-checked": 'IMIJ-Set, durable="checked"', "sqlite": "SQLite (WAL)", "lmdb": "LMDB"}


def report(rows: list[dict], n: int, commits: int, size: int, count: int) -> str:
    lines = [
        f"{n:,} blobs of {size} bytes in {commits:,} synced commits; {count:,} random lookups; appends/s: "
        f"median of {len(rows[0]['append_rates'])} rounds",
        "",
        "| keys | store | appends/s | open + first lookup ms | lookup µs | file bytes | reader RSS growth |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {'interleaved' if r['interleaved'] else 'sequential'} | {NAMES[r['store']]} | {r['appends_per_s']:,.0f} "
            f"| {r['open_ms']:,.1f} | {r['lookup_us']:.1f} | {r['file_bytes']:,} | {r['reader_rss'] / 2**20:,.1f} MiB |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="entries")
    parser.add_argument("--commits", type=int, default=10_000, help="synced commits (batches)")
    parser.add_argument("--size", type=int, default=64, help="bytes per blob")
    parser.add_argument("--lookups", type=int, default=100_000, help="timed random lookups")
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    parser.add_argument("--rounds", type=int, default=3, help="append rounds per key order (medians reported)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed afterwards)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--read", nargs=2, metavar=("STORE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.read:
        print(json.dumps(lookups(args.read[0], args.read[1], args.n, args.lookups, args.size, args.seed)))
        return 0
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        rows = run(args.n, args.commits, args.size, args.lookups, directory, tuple(args.stores), args.rounds, args.seed)
    print(json.dumps(rows, indent=2) if args.json else report(rows, args.n, args.commits, args.size, args.lookups))
    return 0


if __name__ == "__main__":
    sys.exit(main())
