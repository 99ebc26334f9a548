"""``imij convert``: the command-line front of the batch converter."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable

from imij_plugins import EncodeOptions
from imij_plugins.convert.cluster import run_dask
from imij_plugins.convert.compression import DEFAULT_COMPRESSION, TIFF_COMPRESSIONS, check_compression
from imij_plugins.convert.paths import plan
from imij_plugins.convert.pipeline import ConvertOptions, Record
from imij_plugins.convert.report import Progress, summary, summary_json
from imij_plugins.convert.runner import Batch, default_workers, run
from imij_plugins.convert.sinks import FORMATS
from imij_plugins.options import CODECS

_DEFAULTS = EncodeOptions()  # the writer's defaults, shown as the options' defaults
INTERRUPTED = 130  # the shell's status for a command ended by SIGINT


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``convert`` subcommand and its options."""
    p = sub.add_parser(
        "convert",
        help="convert image files and folders to or from IMI (PNG, JPEG, GIF, WebP, BMP, TIFF, .npy, ...)",
        description="Convert files and folders (walked recursively) to imi, png, tiff or npy. Each input's reader is "
        "chosen by its content. Every output is decoded again and compared with the input before it is written.",
    )
    p.add_argument("sources", nargs="+", metavar="SRC", help="input files or folders")
    p.add_argument("-o", "--output", metavar="DEST", help="output folder, or output file for one input file (default: beside each input)")
    p.add_argument("--to", choices=FORMATS, help="output format (default: DEST's extension, else imi)")
    p.add_argument("--glob", metavar="PATTERN", help="files to take from folders (default: all), e.g. '*.png'")
    p.add_argument("-j", "--jobs", type=int, default=default_workers(), metavar="N", help="worker processes (default: all cores)")
    p.add_argument("--dask", metavar="ADDRESS", help="convert on this Dask distributed scheduler instead (extra [dask])")
    p.add_argument("--effort", type=int, default=_DEFAULTS.effort, metavar="E",
                   help=f"IMI effort 1 (fast) .. 9 (smallest), default {_DEFAULTS.effort}")
    p.add_argument("--codec", choices=CODECS, default=_DEFAULTS.codec, help=f"IMI codec (default {_DEFAULTS.codec})")
    p.add_argument("--max-error", type=float, default=_DEFAULTS.max_error, metavar="B",
                   help=f"IMI near-lossless bound per sample (default {_DEFAULTS.max_error}: exact)")
    p.add_argument("--checksum", action="store_true", help="add the IMI file checksum (cSUM)")
    p.add_argument("--compression", choices=TIFF_COMPRESSIONS, default=DEFAULT_COMPRESSION,
                   help="TIFF and OME-TIFF outputs: deflate (default, with a predictor), zstd (needs imagecodecs), lzma or none")
    p.add_argument("--no-verify", action="store_true", help="skip decoding each output again to compare it with its input")
    existing = p.add_mutually_exclusive_group()
    existing.add_argument("--overwrite", action="store_true", help="replace outputs that exist")
    existing.add_argument("--skip-existing", action="store_true", help="leave outputs that exist (resume a batch)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary; failures still go to stderr")
    p.add_argument("--json", action="store_true",
                   help="one JSON record per file on stdout, then one JSON summary line (the text summary goes to stderr)")
    p.set_defaults(func=cmd_convert)


def cmd_convert(args: argparse.Namespace) -> int:
    """Plan, convert in parallel (processes or a Dask cluster) with progress, report; 1 when a file
    failed, 2 on bad arguments or an unreachable cluster, 130 on Ctrl-C."""
    try:
        encode = EncodeOptions(effort=args.effort, codec=args.codec, max_error=args.max_error, checksum=args.checksum)
        check_compression(args.compression)
        jobs, fmt, renamed = plan(args.sources, args.output, args.to, args.glob)
        options = ConvertOptions(fmt, encode, not args.no_verify, args.overwrite, args.skip_existing, compression=args.compression)
        batch = run_dask(jobs, options, args.dask) if args.dask else run(jobs, options, args.jobs)
    except (ValueError, ImportError, OSError) as exc:  # bad arguments, no [dask] extra, no scheduler
        print(f"imij convert: {exc}", file=sys.stderr)
        return 2
    progress = Progress(len(jobs), sys.stdout.isatty() and not (args.quiet or args.json))
    records: list[Record] = []

    def take(record: Record) -> None:
        records.append(record)
        progress.update(record)
        if args.json:
            print(json.dumps(record.as_json()), flush=True)

    start = time.perf_counter()
    try:
        interrupted = _drain(batch, take)
    finally:
        progress.close()
    seconds = time.perf_counter() - start
    failed = [r for r in records if r.status == "failed"]
    if args.json:
        print(json.dumps(summary_json(records, len(jobs), renamed, seconds, interrupted)), flush=True)
    if args.quiet:
        for r in failed:
            print(f"{r.input}: {r.reason}", file=sys.stderr)
    else:
        text = summary(records, seconds, interrupted, renamed, len(jobs))
        print(text, file=sys.stderr if args.json else sys.stdout)
    return INTERRUPTED if interrupted else 1 if failed else 0


def _drain(batch: Batch, take: Callable[[Record], None]) -> bool:
    """Hand every record to ``take``; on Ctrl-C cancel the files not started and still take the
    records of those being converted (a second Ctrl-C stops waiting). Whether it was interrupted."""
    with contextlib.closing(batch):
        try:
            for record in batch:
                take(record)
            return False
        except KeyboardInterrupt:
            batch.cancel()
        try:
            for record in batch:
                take(record)
        except KeyboardInterrupt:
            pass
        return True
