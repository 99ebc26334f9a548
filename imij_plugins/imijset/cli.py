"""``imij set ls|add|get|compact|verify ARCHIVE ...``: the archive subcommands, as ``main_set(argv)``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from imij_plugins.errors import ImijError
from imij_plugins.imijset.archive import open as open_archive


def _ls(args: argparse.Namespace) -> int:
    with open_archive(args.archive) as arc:
        for key, e in arc.items():
            size = f"{e.summary.width}x{e.summary.height}" if e.summary.width else "-"
            line = f"{key:>10}  {e.length:>10}  {size:>11}  {e.filename or ''}"
            if args.long:
                cicp = "/".join(map(str, e.cicp)) if e.cicp else "-"
                attrs = " ".join(f"{k}={v!r}" for k, v in e.attributes.items())
                line += f"  gen={e.generation} cicp={cicp} images={e.image_count or '?'} {attrs}"
            print(line.rstrip())
    return 0


def _add(args: argparse.Namespace) -> int:
    with open_archive(args.archive, "a") as arc:
        last = arc.last_key()
        key = args.key if args.key is not None else (0 if last is None else last + 1)
        for path in args.files:
            with open(path, "rb") as f:
                arc.append(key, f.read(), filename=None if args.no_filename else os.path.basename(path))
            print(f"{key}  {path}")
            key += 1
    return 0


def _get(args: argparse.Namespace) -> int:
    with open_archive(args.archive) as arc:
        data = arc.get(args.key)
    if args.output in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        with open(args.output, "wb") as f:
            f.write(data)
    return 0


def _compact(args: argparse.Namespace) -> int:
    with open_archive(args.archive) as arc:
        count = arc.compact(args.dst, placement="tail" if args.tail else "interleaved")
    print(f"{args.dst}: {count} entries in one segment")
    return 0


def _verify(args: argparse.Namespace) -> int:
    with open_archive(args.archive) as arc:
        r = arc.verify()
    print(
        f"{args.archive}: OK (generation {r.generations}, {r.live} live of {r.indexed} indexed entries, "
        f"{r.blob_bytes} blob bytes, {r.sequence_indexes} sequence indexes, {r.catalog_levels} pyramid levels)"
    )
    return 0


def build_parser(prog: str = "imij set") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="IMIJ-Set archives (.imijset)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ls", help="list live entries in key order")
    p.add_argument("archive")
    p.add_argument("-l", "--long", action="store_true", help="also CICP, image count, generation, attributes")
    p.set_defaults(run=_ls)
    p = sub.add_parser("add", help="append files as one batch (one commit)")
    p.add_argument("archive")
    p.add_argument("files", nargs="+")
    p.add_argument("--key", type=int, help="key of the first file (default: one past the largest key)")
    p.add_argument("--no-filename", action="store_true", help="do not record the files' base names")
    p.set_defaults(run=_add)
    p = sub.add_parser("get", help="write one entry's blob")
    p.add_argument("archive")
    p.add_argument("key", type=int)
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.set_defaults(run=_get)
    p = sub.add_parser("compact", help="rewrite live entries into a new one-segment archive")
    p.add_argument("archive")
    p.add_argument("dst")
    p.add_argument("--tail", action="store_true", help="place all index pages after the last blob")
    p.set_defaults(run=_compact)
    p = sub.add_parser("verify", help="check every page, blob digest, reference and catalog")
    p.add_argument("archive")
    p.set_defaults(run=_verify)
    return parser


def main_set(argv: Sequence[str] | None = None) -> int:
    """Run one ``imij set`` subcommand; 0 on success, 1 on a format or I/O error, 2 on usage."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except KeyError as exc:
        print(f"{args.archive}: no entry with key {exc.args[0]}", file=sys.stderr)
    except (ImijError, OSError, ValueError) as exc:
        print(f"{args.archive}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 1
