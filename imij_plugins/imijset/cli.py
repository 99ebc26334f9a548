"""``imij set ls|add|extract|get|compact|verify ARCHIVE ...``: the archive subcommands, as ``main_set(argv)``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from imij_plugins import EncodeOptions
from imij_plugins.convert.sinks import FORMATS
from imij_plugins.errors import ImijError
from imij_plugins.imijset.archive import open as open_archive
from imij_plugins.options import DEFAULT_EFFORT


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


def _inputs(sources: Sequence[str]) -> list[str]:
    """Files named, and the files of folders named (walked recursively, in name order)."""
    out: list[str] = []
    for source in sources:
        root = Path(source)
        out += [str(p) for p in sorted(root.rglob("*")) if p.is_file()] if root.is_dir() else [source]
    return out


def _add(args: argparse.Namespace) -> int:
    """Append files (folders walked): IMI files as they are, other images converted to IMI by
    ``imij convert``'s verified job (``--raw``: every file's bytes unchanged), committing every
    ``--batch`` entries; a file that does not convert is reported and the others go on."""
    from imij_plugins.convert.pipeline import ConvertOptions, encoded_outputs
    from imij_plugins.convert.sources import sniff

    options = ConvertOptions("imi", EncodeOptions(effort=args.effort))
    failed = added = 0
    with open_archive(args.archive, "a") as arc:
        last = arc.last_key()
        key = args.key if args.key is not None else (0 if last is None else last + 1)
        for path in _inputs(args.files):
            with open(path, "rb") as f:
                data = f.read()
            try:
                raw = args.raw or sniff(data[:16]) == "imi"
                blobs = [(path, data)] if raw else list(encoded_outputs(data, path, "imi", options))
            except Exception as exc:  # one bad file is reported; the batch goes on
                print(f"{path}: {type(exc).__name__}: {exc}", file=sys.stderr)
                failed += 1
                continue
            for name, blob in blobs:
                arc.append(key, blob, filename=None if args.no_filename else os.path.basename(name))
                print(f"{key}  {name}", flush=True)
                key, added = key + 1, added + 1
                if added % args.batch == 0:
                    arc.commit()
    print(f"added {added}, failed {failed}", file=sys.stderr)
    return 1 if failed else 0


def _extract(args: argparse.Namespace) -> int:
    """Write every live entry into DEST by its recorded name (else its key), in ``--to`` or the
    name's format (IMI blobs as they are when the format is imi), through ``imij convert``'s job."""
    from imij_plugins.container.writer import write_atomic
    from imij_plugins.convert.pipeline import ConvertOptions, encoded_outputs
    from imij_plugins.convert.sinks import EXTENSIONS, format_of, strip_extension

    os.makedirs(args.dest, exist_ok=True)
    failed = written = 0
    with open_archive(args.archive) as arc:
        for key, entry in arc.items():
            name = entry.filename or str(key)
            fmt = args.to or format_of(name) or "imi"
            dst = os.path.join(args.dest, os.path.basename(strip_extension(name)) + EXTENSIONS[fmt])
            blob = arc.blob(entry)
            try:
                outputs = [(dst, blob)] if fmt == "imi" else list(encoded_outputs(blob, dst, fmt, ConvertOptions(fmt)))
                for path, data in outputs:
                    write_atomic(path, data)
                    print(f"{key}  {path}", flush=True)
                    written += 1
            except Exception as exc:  # one entry that does not convert is reported; the others go on
                print(f"{key}: {type(exc).__name__}: {exc}", file=sys.stderr)
                failed += 1
    print(f"extracted {written}, failed {failed}", file=sys.stderr)
    return 1 if failed else 0


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
    """Into DST, or (no DST) in place under the writer lock, by ``compact="auto"``'s crash-safe rewrite."""
    placement = "tail" if args.tail else "interleaved"
    with open_archive(args.archive, "r" if args.dst else "a") as arc:
        count = arc.compact(args.dst, placement=placement)
    print(f"{args.dst or args.archive}: {count} entries in one segment")
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
    p = sub.add_parser("add", help="append files and folders, images converted to IMI, in batches")
    p.add_argument("archive")
    p.add_argument("files", nargs="+")
    p.add_argument("--key", type=int, help="key of the first file (default: one past the largest key)")
    p.add_argument("--no-filename", action="store_true", help="do not record the files' base names")
    p.add_argument("--raw", action="store_true", help="store every file's bytes unchanged (no conversion)")
    p.add_argument("--batch", type=int, default=1000, metavar="N", help="commit every N entries (default 1000)")
    p.add_argument("--effort", type=int, default=DEFAULT_EFFORT, metavar="E", help=f"IMI effort of converted images (default {DEFAULT_EFFORT})")
    p.set_defaults(run=_add)
    p = sub.add_parser("extract", help="write every entry into a folder, converted by its name or --to")
    p.add_argument("archive")
    p.add_argument("dest")
    p.add_argument("--to", choices=FORMATS, help="output format (default: the entry name's, else imi)")
    p.set_defaults(run=_extract)
    p = sub.add_parser("get", help="write one entry's blob")
    p.add_argument("archive")
    p.add_argument("key", type=int)
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.set_defaults(run=_get)
    p = sub.add_parser("compact", help="rewrite live entries as one segment, in place or into DST")
    p.add_argument("archive")
    p.add_argument("dst", nargs="?", help="write a new archive here (default: replace ARCHIVE, crash-safe)")
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
