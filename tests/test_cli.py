"""The ``imij`` command: info, verify, demo and --help."""

import numpy as np
import pytest

import imij_plugins
from imij_plugins.cli import main


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.imi"
    imij_plugins.write(path, np.arange(48, dtype=np.uint16).reshape(4, 4, 3), exif=b"II*\x00", stripe_rows=2, codec="quick")
    return path


def test_info(good, capsys):
    assert main(["info", str(good)]) == 0
    out = capsys.readouterr().out
    for expected in ("4 x 4", "u16", "RGB", "quick_pixels", "Lossless 0.1", "eXIf", "DATA", "frames      1", "2 units"):
        assert expected in out


def test_verify_good_and_bad(good, tmp_path, capsys):
    bad = tmp_path / "bad.imi"
    bad.write_bytes(good.read_bytes()[:-3])
    assert main(["verify", str(good)]) == 0
    assert main(["verify", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "good.imi: OK" in out and "bad.imi: FAILED: Corrupt" in out
    assert "cSUM absent; pSUM absent" in out


def test_verify_reports_checksums_per_frame(tmp_path, capsys):
    path = tmp_path / "anim.imi"
    frames = [np.full((3, 3), i, np.uint8) for i in range(3)]
    imij_plugins.write(path, frames, checksum=True, pixel_checksum=True)
    assert main(["verify", str(path)]) == 0
    assert "cSUM verified; pSUM verified, verified, verified" in capsys.readouterr().out


def test_info_reports_errors(tmp_path, capsys):
    missing = tmp_path / "missing.imi"
    assert main(["info", str(missing)]) == 1
    assert "missing.imi: error" in capsys.readouterr().err


def test_demo_writes_and_reads_samples(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "round-tripped exactly" in out and str(tmp_path) in out
    assert sorted(p.suffix for p in tmp_path.iterdir()).count(".imi") == 4
    assert main(["verify", *map(str, tmp_path.glob("*.imi"))]) == 0


@pytest.mark.parametrize("args", [["--help"], ["info", "--help"], ["verify", "--help"], ["demo", "--help"]])
def test_help(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 0
    assert "usage: imij" in capsys.readouterr().out


def test_set_subcommands(tmp_path, good, capsys):
    archive = str(tmp_path / "a.imijset")
    assert main(["set", "add", archive, str(good)]) == 0
    assert main(["set", "ls", archive]) == 0
    assert "good.imi" in capsys.readouterr().out
    out = tmp_path / "back.imi"
    assert main(["set", "get", archive, "0", "-o", str(out)]) == 0
    assert out.read_bytes() == good.read_bytes()
    assert main(["set", "verify", archive]) == 0
    with pytest.raises(SystemExit) as exc:
        main(["set", "--help"])
    assert exc.value.code == 0
