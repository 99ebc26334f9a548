"""Which output each input goes to: files, folders walked recursively, one file to a named file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from imij_plugins.convert.sinks import EXTENSIONS, format_of, strip_extension

Job = tuple[str, str]  # (input, output)


def plan(sources: Sequence[str], dest: str | None, to: str | None, pattern: str | None = None) -> tuple[list[Job], str]:
    """The (input, output) pairs and the output format.

    One input file and a DEST with an extension: that file, its format from ``to`` or the
    extension. Otherwise DEST (or, without one, each input's own folder) is a folder: a file
    goes in by name, a walked folder's files (``pattern``, default all) by their path relative
    to it, each with the format's extension (``to``, default imi). A walk never takes the
    outputs themselves. Raises ValueError when two inputs would write one output.
    """
    if len(sources) == 1 and dest is not None and _is_file_target(sources[0], dest):
        fmt = to or format_of(dest)
        if fmt is None:
            raise ValueError(f"no output format: {dest} has no known extension ({', '.join(EXTENSIONS.values())}); pass --to")
        return [(sources[0], dest)], fmt
    fmt = to or "imi"
    out_root = Path(dest) if dest is not None else None
    outputs = out_root.resolve() if out_root is not None else None
    jobs: list[Job] = []
    for source in sources:
        root = Path(source)
        if not root.is_dir():
            jobs.append((source, _output(root, Path(root.name), out_root, fmt)))
            continue
        for path in sorted(p for p in root.rglob(pattern or "*") if p.is_file()):
            output = _output(path, path.relative_to(root), out_root, fmt)
            inside_outputs = outputs is not None and outputs in path.resolve().parents
            if not inside_outputs and Path(output).resolve() != path.resolve():
                jobs.append((str(path), output))
    _check_distinct(jobs)
    return jobs, fmt


def _is_file_target(source: str, dest: str) -> bool:
    """Whether DEST names one output file: the input is a file and DEST no folder, with an extension."""
    return not os.path.isdir(source) and not os.path.isdir(dest) and not dest.endswith(os.sep) and bool(Path(dest).suffix)


def _output(path: Path, relative: Path, out_root: Path | None, fmt: str) -> str:
    """Where ``path`` goes: ``relative`` under the output folder, or beside the input, with the format's extension."""
    base = out_root / relative if out_root is not None else path
    return strip_extension(str(base)) + EXTENSIONS[fmt]


def _check_distinct(jobs: Sequence[Job]) -> None:
    seen: dict[str, str] = {}
    for src, dst in jobs:
        key = os.path.realpath(dst)
        if key in seen:
            raise ValueError(f"{seen[key]} and {src} would both write {dst}")
        seen[key] = src
