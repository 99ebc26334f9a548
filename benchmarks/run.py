"""Codec comparison in one process: every corpus image through every codec.

    python benchmarks/run.py                      # full run: builds benchmarks/.corpus/ if needed
    python benchmarks/run.py --codecs imi,png --efforts default --repeats 3   # a quick look
    python benchmarks/run.py --corpus benchmarks/.corpus-desktop --corpus-no-build --section "Desktop corpus"

For each image and codec: bits per pixel, encode and decode MB/s of raw pixel bytes (median of
repeats), the peak memory of one encode and one decode, and a lossless round-trip check (bit for
bit). This package runs at each codec option and effort level, with 1 thread and with all
cores; the files the two thread counts write are compared too. It writes one section of
benchmarks/RESULTS.md (default "Codec comparison"; other sections are left as they are) and
every measurement as JSON (default: results.json in the corpus folder).

This file is the command line only: measure.py times and measures (its docstring has the
method), report.py turns a JSON run into the markdown section.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import measure  # noqa: E402
import report  # noqa: E402

# benchmarks/zarr_codecs.py reaches these through this module
Memory, Timer, machine_info, fmt = measure.Memory, measure.Timer, measure.machine_info, report.fmt


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, measure (or load a saved run) and write the JSON and the section."""
    ap = argparse.ArgumentParser(description="Codec comparison: every corpus image through every codec, in one process.")
    ap.add_argument("--corpus", default=str(corpus.DEFAULT_DIR), help="corpus folder (built there when missing)")
    ap.add_argument("--corpus-no-build", action="store_true", help="fail instead of building a missing corpus")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"), help="markdown file whose section is (re)written")
    ap.add_argument("--json", default=None, help="all measurements as JSON (default: results.json in the corpus folder)")
    ap.add_argument("--report-only", default=None, metavar="JSON", help="rewrite the section from a saved JSON run")
    ap.add_argument("--section", default=report.SECTION,
                    help=f"name of the RESULTS.md section to (re)write (default {report.SECTION!r})")
    ap.add_argument("--codecs", default=None, help="comma list of families/names/variants, e.g. 'imi,png,qoi,jxl e1'")
    ap.add_argument("--imi-codecs", default=None, help="comma list of this package's codec options (default: all found)")
    ap.add_argument("--efforts", default="all", help="'all' (default), 'default' or a comma list")
    ap.add_argument("--threads", default=None, help="this package's thread counts, e.g. '1,all' (default)")
    ap.add_argument("--classes", nargs="*", default=None, choices=corpus.CLASSES)
    ap.add_argument("--images", nargs="*", default=None, help="substrings of image names to keep")
    ap.add_argument("--repeats", type=int, default=5, help="at most this many timed runs per measurement")
    ap.add_argument("--min-repeats", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.3, help="seconds of runs to reach before stopping")
    ap.add_argument("--single-above", type=float, default=1.0, help="one run when a run takes longer (seconds)")
    ap.add_argument("--slow-mbps", type=float, default=1.0, help="probe speed below which a configuration is slow")
    ap.add_argument("--slow-max-bytes", type=int, default=450_000, help="largest image (raw bytes) a slow one codes")
    ap.add_argument("--no-memory", action="store_true", help="do not measure peak memory")
    ap.add_argument("--traced-max-seconds", type=float, default=0.5,
                    help="tracemalloc run of this package only for calls at most this long (it slows them ~5x)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    args.classes = set(args.classes) if args.classes else None

    if args.report_only:
        data = json.loads(Path(args.report_only).read_text())
    else:
        data = measure.run(args)
        out = Path(args.json) if args.json else Path(args.corpus) / "results.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1, default=str))
        print(f"measurements: {out}", file=sys.stderr)
    report.write_section(Path(args.results), report.report(data, corpus.CLASSES, args.section), args.section)
    print(f"wrote the '{args.section}' section of {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
