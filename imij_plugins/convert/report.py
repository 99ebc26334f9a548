"""What a batch tells its user: a progress bar on a terminal, JSON lines, the final summary."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from imij_plugins.convert.pipeline import Record

MB = 1e6


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


def summary(records: Sequence[Record], seconds: float, interrupted: bool = False) -> str:
    """Counts, bytes in and out of the converted files, ratio, time and rate, then each failure and why."""
    counts = Counter(r.status for r in records)
    done = [r for r in records if r.status == "converted"]
    bytes_in, bytes_out = sum(r.bytes_in for r in done), sum(r.bytes_out for r in done)
    ratio = f"{bytes_out / bytes_in:.3f}" if bytes_in else "-"
    rate = f"{len(done) / seconds:.1f} files/s, {bytes_in / MB / seconds:.2f} MB/s" if seconds > 0 else "-"
    lines = [
        f"{'interrupted: ' if interrupted else ''}converted {counts['converted']}, skipped {counts['skipped']}, "
        f"failed {counts['failed']} in {seconds:.2f} s ({rate})",
        f"bytes in {bytes_in:,}, out {bytes_out:,} (out/in {ratio})",
    ]
    failed = [r for r in records if r.status == "failed"]
    if failed:
        lines.append("failed:")
        lines += [f"  {r.input}: {r.reason}" for r in failed]
    return "\n".join(lines)
