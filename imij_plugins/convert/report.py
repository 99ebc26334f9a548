"""What a batch tells its user: a progress bar on a terminal, JSON lines, the final summary."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from imij_plugins.convert.paths import Job
from imij_plugins.convert.pipeline import Record

MB = 1e6
_NUMBER = re.compile(r"\d+")


class Progress:
    """A tqdm bar with files/s and input MB/s, or nothing when ``enabled`` is false."""

    def __init__(self, total: int, enabled: bool) -> None:
        self._bar = None
        self._bytes = 0
        if enabled:
            from tqdm import tqdm  # imported only for a terminal: the package imports fast without it

            self._bar = tqdm(total=total, unit="file", dynamic_ncols=True)

    def update(self, record: Record) -> None:
        """Count one finished file and its input bytes."""
        if self._bar is None:
            return
        self._bytes += record.bytes_in
        elapsed = self._bar.format_dict["elapsed"] or 1e-9
        self._bar.set_postfix_str(f"{self._bytes / MB / elapsed:.1f} MB/s, {record.status}", refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def summary(records: Sequence[Record], seconds: float, interrupted: bool = False,
            renamed: Sequence[Job] = (), planned: int | None = None) -> str:
    """Counts, bytes in and out of the converted files, ratio, time and rate; the outputs named
    after their input's whole name; library warnings counted per kind; each note and each failure."""
    counts = Counter(r.status for r in records)
    done = [r for r in records if r.status == "converted"]
    bytes_in, bytes_out = sum(r.bytes_in for r in done), sum(r.bytes_out for r in done)
    ratio = f"{bytes_out / bytes_in:.3f}" if bytes_in else "-"
    rate = f"{len(done) / seconds:.1f} files/s, {bytes_in / MB / seconds:.2f} MB/s" if seconds > 0 else "-"
    not_done = f", not converted {planned - len(records)}" if interrupted and planned is not None else ""
    lines = [
        f"{'interrupted: ' if interrupted else ''}converted {counts['converted']}, skipped {counts['skipped']}, "
        f"failed {counts['failed']}{not_done} in {seconds:.2f} s ({rate})",
        f"bytes in {bytes_in:,}, out {bytes_out:,} (out/in {ratio})",
    ]
    if renamed:
        lines.append(f"named after the whole input name (inputs sharing a stem): {len(renamed)}")
        lines += [f"  {src} -> {dst}" for src, dst in renamed]
    kinds = warning_kinds(records)
    if kinds:
        lines.append(f"warnings: {sum(kinds.values())} from {sum(1 for r in records if r.warnings)} files")
        lines += [f"  {count} x {kind}" for kind, count in kinds.most_common()]
    notes: dict[str, list[str]] = {}
    for r in records:
        for note in r.notes:
            notes.setdefault(note, []).append(r.input)
    for note, inputs in notes.items():
        lines.append(f"note, {len(inputs)} files: {note}")
        lines += [f"  {name}" for name in inputs]
    failed = [r for r in records if r.status == "failed"]
    if failed:
        lines.append("failed:")
        lines += [f"  {r.input}: {r.reason}" for r in failed]
    return "\n".join(lines)


def warning_kinds(records: Sequence[Record]) -> Counter[str]:
    """Library warnings counted per kind: the message with its numbers replaced by N."""
    return Counter(_NUMBER.sub("N", w) for r in records for w in r.warnings)


def summary_json(records: Sequence[Record], planned: int, renamed: Sequence[Job], seconds: float, interrupted: bool) -> dict[str, object]:
    """The summary as one JSON object (``--json``'s last line): counts, bytes, renamed outputs,
    warnings per kind, notes and failures by input."""
    counts = Counter(r.status for r in records)
    done = [r for r in records if r.status == "converted"]
    return {"summary": {
        "planned": planned,
        "converted": counts["converted"], "skipped": counts["skipped"], "failed": counts["failed"],
        "not_converted": planned - len(records), "interrupted": interrupted, "seconds": seconds,
        "bytes_in": sum(r.bytes_in for r in done), "bytes_out": sum(r.bytes_out for r in done),
        "renamed": {src: dst for src, dst in renamed},
        "warnings": dict(warning_kinds(records).most_common()),
        "notes": {r.input: list(r.notes) for r in records if r.notes},
        "failed_reasons": {r.input: r.reason for r in records if r.status == "failed"},
    }}
