"""``main_set``: the ``imij set`` subcommands the lead wires into ``imij``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import imij_plugins
import imij_plugins.imijset as imijset
from imij_plugins.imijset.cli import main_set


def test_add_ls_get_verify_compact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a.imi"
    a.write_bytes(imij_plugins.encode(np.zeros((6, 8, 3), np.uint8)))
    b = tmp_path / "b.bin"
    b.write_bytes(b"opaque")
    arc = tmp_path / "x.imijset"
    assert main_set(["add", str(arc), str(a), str(b), "--raw"]) == 0
    assert main_set(["add", str(arc), str(b), "--no-filename", "--raw"]) == 0
    assert main_set(["add", str(arc), str(b), "--key", "10", "--raw"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("0  ") and "2  " in out
    assert main_set(["ls", str(arc)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [int(line.split()[0]) for line in lines] == [0, 1, 2, 10]
    assert "8x6" in lines[0] and "a.imi" in lines[0] and lines[2].rstrip().endswith("-")
    assert main_set(["ls", "-l", str(arc)]) == 0
    assert "gen=1 cicp=1/13/0/1" in capsys.readouterr().out
    out_file = tmp_path / "out.imi"
    assert main_set(["get", str(arc), "0", "-o", str(out_file)]) == 0
    assert out_file.read_bytes() == a.read_bytes()
    assert main_set(["verify", str(arc)]) == 0
    assert "OK (generation 3, 4 live of 4 indexed entries" in capsys.readouterr().out
    dst = tmp_path / "c.imijset"
    assert main_set(["compact", str(arc), str(dst), "--tail"]) == 0
    with imijset.open(dst) as c:
        assert list(c.keys()) == [0, 1, 2, 10] and c.segments == 1
    assert main_set(["compact", str(arc)]) == 0  # in place
    assert capsys.readouterr().out.endswith(f"{arc}: 4 entries in one segment\n")
    with imijset.open(arc) as c:
        assert list(c.keys()) == [0, 1, 2, 10] and c.segments == 1 and c.generation == 1


def test_get_to_stdout(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    arc = tmp_path / "x.imijset"
    with imijset.open(arc, "w") as w:
        w.append(4, b"\x00binary\xff")
    assert main_set(["get", str(arc), "4"]) == 0
    assert capfdbinary.readouterr().out == b"\x00binary\xff"


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arc = tmp_path / "x.imijset"
    with imijset.open(arc, "w") as w:
        w.append(1, b"x")
    assert main_set(["get", str(arc), "2"]) == 1
    assert "no entry with key 2" in capsys.readouterr().err
    bad = tmp_path / "bad.imijset"
    bad.write_bytes(b"not an archive" * 20)
    assert main_set(["verify", str(bad)]) == 1
    assert "Corrupt" in capsys.readouterr().err
    assert main_set(["ls", str(tmp_path / "missing.imijset")]) == 1
    with pytest.raises(SystemExit):
        main_set(["frobnicate"])


def test_add_converts_images_in_batches_and_extract_writes_them_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    rng = np.random.default_rng(5)
    images = {f"p{i}.png": rng.integers(0, 256, (5 + i, 7, 3), dtype=np.uint8) for i in range(3)}
    for name, array in images.items():
        Image.fromarray(array).save(src / "sub" / name)
    (src / "notes.txt").write_text("not an image")
    arc = tmp_path / "x.imijset"
    assert main_set(["add", str(arc), str(src), "--batch", "2"]) == 1  # notes.txt fails, the rest are added
    captured = capsys.readouterr()
    assert "notes.txt: UnidentifiedImageError" in captured.err and "added 3, failed 1" in captured.err
    with imijset.open(arc) as a:
        assert a.generation == 2  # a commit after two entries, one at close
        assert [a.entry(k).filename for k in a.keys()] == ["p0.png", "p1.png", "p2.png"]
        assert all(np.array_equal(a.read(k), images[a.entry(k).filename]) for k in a.keys())
    out = tmp_path / "out"
    assert main_set(["extract", str(arc), str(out)]) == 0  # back to PNG by the recorded names
    for name, array in images.items():
        assert np.array_equal(np.asarray(Image.open(out / name)), array)
    assert main_set(["extract", str(arc), str(tmp_path / "npy"), "--to", "npy"]) == 0
    assert np.array_equal(np.load(tmp_path / "npy" / "p1.npy"), images["p1.png"])
    assert "extracted 3, failed 0" in capsys.readouterr().err
