"""Which output each input goes to: files, folders walked recursively, one file to a named file."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from imij_plugins.convert.sinks import EXTENSIONS, format_of, strip_extension

Job = tuple[str, str]  # (input, output)


class Plan(NamedTuple):
    """The jobs, the output format, and the jobs whose output is named after the input's whole
    file name (``a.png.imi``) because inputs with one stem would otherwise write one output."""

    jobs: list[Job]
    fmt: str
    renamed: list[Job]


def plan(sources: Sequence[str], dest: str | None, to: str | None, pattern: str | None = None) -> Plan:
    """The (input, output) pairs and the output format.

    One input file and a DEST with an extension: that file, its format from ``to`` or the
    extension. Otherwise DEST (or, without one, each input's own folder) is a folder: a file
    goes in by name, a walked folder's files (``pattern``, default all) by their path relative
    to it, each with the format's extension (``to``, default imi). A walk never takes the
    outputs themselves. Inputs that share a stem (``a.png``, ``a.jpg``) each keep their whole
    name (``a.png.imi``, ``a.jpg.imi``). Raises ValueError when two inputs would still write one output.
    """
    if len(sources) == 1 and dest is not None and _is_file_target(sources[0], dest):
        fmt = to or format_of(dest)
        if fmt is None:
            raise ValueError(f"no output format: {dest} has no known extension ({', '.join(EXTENSIONS.values())}); pass --to")
        return Plan([(sources[0], dest)], fmt, [])
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
    jobs, renamed = _whole_names_for_shared_stems(jobs, fmt)
    _check_distinct(jobs)
    return Plan(jobs, fmt, renamed)


def _is_file_target(source: str, dest: str) -> bool:
    """Whether DEST names one output file: the input is a file and DEST no folder, with an extension."""
    return not os.path.isdir(source) and not os.path.isdir(dest) and not dest.endswith(os.sep) and bool(Path(dest).suffix)


def _output(path: Path, relative: Path, out_root: Path | None, fmt: str) -> str:
    """Where ``path`` goes: ``relative`` under the output folder, or beside the input, with the format's extension."""
    base = out_root / relative if out_root is not None else path
    return strip_extension(str(base)) + EXTENSIONS[fmt]


def _whole_names_for_shared_stems(jobs: list[Job], fmt: str) -> tuple[list[Job], list[Job]]:
    """The jobs with every output that several inputs share renamed to its input's whole file name
    plus the format's extension, and the renamed jobs."""
    by_output: dict[str, list[int]] = defaultdict(list)
    for index, (_, dst) in enumerate(jobs):
        by_output[os.path.realpath(dst)].append(index)
    shared = {i for indices in by_output.values() if len(indices) > 1 for i in indices}
    jobs = [(src, os.path.join(os.path.dirname(dst), os.path.basename(src) + EXTENSIONS[fmt])) if i in shared else (src, dst)
            for i, (src, dst) in enumerate(jobs)]
    return jobs, [jobs[i] for i in sorted(shared)]


def _check_distinct(jobs: Sequence[Job]) -> None:
    seen: dict[str, str] = {}
    for src, dst in jobs:
        key = os.path.realpath(dst)
        if key in seen:
            raise ValueError(f"{seen[key]} and {src} would both write {dst}")
        seen[key] = src
