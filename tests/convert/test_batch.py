"""A batch of 200 small mixed files with -j 2: bad files reported, the rest converted, a rerun resumes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import tifffile
from PIL import Image

import imij_plugins
from imij_plugins.cli import main

from .conftest import noise


def write_mixed(root: Path, count: int) -> list[Path]:
    """``count`` small files cycling through PNG, JPEG, GIF, 16-bit TIFF and float .npy, in two folders."""
    paths = []
    for i in range(count):
        folder = root / f"part{i % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        kind = i % 5
        path = folder / f"f{i:03}.{['png', 'jpg', 'gif', 'tif', 'npy'][kind]}"
        if kind == 0:
            Image.fromarray(noise((6, 7, 4))).save(path)
        elif kind == 1:
            Image.fromarray(noise((8, 8, 3))).save(path, quality=80)
        elif kind == 2:
            Image.fromarray(noise((5, 6, 3))).quantize(8).save(path)
        elif kind == 3:
            tifffile.imwrite(path, noise((6, 5), np.uint16))
        else:
            np.save(path, noise((4, 6, 2), np.float32))
        paths.append(path)
    return paths


def test_two_hundred_mixed_files_with_a_corrupt_one_and_a_non_image(tmp_path, capsys):
    sources = write_mixed(tmp_path / "in", 198)
    (tmp_path / "in" / "part0" / "cut.png").write_bytes(sources[0].read_bytes()[:40])
    (tmp_path / "in" / "part1" / "readme.txt").write_text("not an image\n")
    out = tmp_path / "out"
    assert main(["convert", str(tmp_path / "in"), "-o", str(out), "-j", "2", "--json"]) == 1
    *records, last = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) == 200
    totals = last["summary"]
    assert (totals["planned"], totals["converted"], totals["failed"], totals["not_converted"]) == (200, 198, 2, 0)
    assert sorted(Path(p).name for p in totals["failed_reasons"]) == ["cut.png", "readme.txt"]
    failed = sorted(Path(r["input"]).name for r in records if r["status"] == "failed")
    assert failed == ["cut.png", "readme.txt"]
    written = sorted(out.rglob("*"))
    assert len([p for p in written if p.is_file()]) == 198
    for src in sources[::17]:  # a sample of each kind reads back as its source
        imi = out / src.parent.name / (src.stem + ".imi")
        assert imij_plugins.read(imi).shape[:2] == (np.load(src) if src.suffix == ".npy" else np.asarray(Image.open(src))).shape[:2]

    assert main(["convert", str(tmp_path / "in"), "-o", str(out), "-j", "2", "--skip-existing", "--json"]) == 1
    captured = capsys.readouterr()
    statuses = [json.loads(line)["status"] for line in captured.out.splitlines()[:-1]]
    assert statuses.count("skipped") == 198 and statuses.count("failed") == 2 and "converted" not in statuses
    assert captured.err.startswith("converted 0, skipped 198, failed 2")
