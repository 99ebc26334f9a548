"""``imij desktop install|uninstall``: the MIME type and thumbnailer entry, written into a temporary XDG folder."""

from __future__ import annotations

import configparser
import os
import re
import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import imij_plugins
from imij_plugins.cli import main

NS = "{http://www.freedesktop.org/standards/shared-mime-info}"
SIGNATURE = b"IMIJ\r\n\x87\n"  # the IMI specification, version 2, section 1
SYSTEM_PYTHON = "/usr/bin/python3"


def tree(root: Path) -> dict[str, bytes | None]:
    """Every folder (None) and file (its bytes) under ``root``."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in root.rglob("*")}


def unescape(value: str) -> bytes:
    """A shared-mime-info string match value as bytes (\\xHH escapes, other characters as themselves)."""
    return re.sub(rb"\\x([0-9a-fA-F]{2})", lambda m: bytes([int(m.group(1), 16)]), value.encode("latin-1"))


@pytest.fixture
def xdg(tmp_path, monkeypatch) -> Path:
    """A user data folder holding another program's MIME package and thumbnailer, which must survive."""
    home = tmp_path / "share"
    (home / "mime" / "packages").mkdir(parents=True)
    (home / "mime" / "packages" / "other.xml").write_text("<mime-info/>")
    (home / "thumbnailers").mkdir()
    (home / "thumbnailers" / "other.thumbnailer").write_text("[Thumbnailer Entry]\n")
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def test_install_writes_the_type_and_the_thumbnailer(xdg, capsys):
    assert main(["desktop", "install", "--user", "--no-update-database"]) == 0
    package = xdg / "mime" / "packages" / "imij-plugins.xml"
    thumbnailer = xdg / "thumbnailers" / "imij.thumbnailer"
    assert f"wrote {package}" in capsys.readouterr().out
    mime_type = ET.parse(package).getroot().find(f"{NS}mime-type")
    assert mime_type is not None and mime_type.get("type") == "image/x-imi"
    assert [g.get("pattern") for g in mime_type.iter(f"{NS}glob")] == ["*.imi"]
    (match,) = mime_type.iter(f"{NS}match")
    assert match.get("type") == "string" and match.get("offset") == "0"
    assert unescape(match.get("value", "")) == SIGNATURE
    entry = configparser.ConfigParser(interpolation=None)
    entry.read(thumbnailer)
    section = entry["Thumbnailer Entry"]
    assert section["Exec"].endswith(" thumbnail %i %o %s")
    assert "image/x-imi" in section["MimeType"].split(";")
    assert os.access(section["TryExec"], os.X_OK)


def test_the_thumbnailer_command_runs(xdg, tmp_path):
    """What a file manager does with the entry: substitute %i %o %s in Exec and run it."""
    assert main(["desktop", "install", "--user", "--no-update-database"]) == 0
    entry = configparser.ConfigParser(interpolation=None)
    entry.read(xdg / "thumbnailers" / "imij.thumbnailer")
    src, out = tmp_path / "photo.imi", tmp_path / "thumb.png"
    imij_plugins.write(src, np.full((30, 60, 3), 200, np.uint8))
    fields = {"%i": str(src), "%o": str(out), "%s": "32"}
    command = [fields.get(arg, arg) for arg in shlex.split(entry["Thumbnailer Entry"]["Exec"])]
    subprocess.run(command, check=True, capture_output=True)
    with Image.open(out) as thumb:
        assert (thumb.format, thumb.size) == ("PNG", (32, 16))


def test_uninstall_leaves_the_folder_as_it_was(xdg, capsys):
    before = tree(xdg)
    assert main(["desktop", "install", "--user", "--no-update-database"]) == 0
    assert tree(xdg) != before
    assert main(["desktop", "uninstall", "--user", "--no-update-database"]) == 0
    assert tree(xdg) == before
    assert main(["desktop", "uninstall", "--user", "--no-update-database"]) == 0
    assert "nothing to remove" in capsys.readouterr().out


def test_prefix_install_and_uninstall(tmp_path):
    assert main(["desktop", "install", "--prefix", str(tmp_path), "--no-update-database"]) == 0
    assert (tmp_path / "share" / "thumbnailers" / "imij.thumbnailer").is_file()
    assert (tmp_path / "share" / "mime" / "packages" / "imij-plugins.xml").is_file()
    assert main(["desktop", "uninstall", "--prefix", str(tmp_path), "--no-update-database"]) == 0
    assert list((tmp_path / "share").iterdir()) == []  # the folders it made held only its files


NO_DATABASE_TOOL = shutil.which("update-mime-database") is None


@pytest.mark.skipif(NO_DATABASE_TOOL, reason="update-mime-database (shared-mime-info) not installed")
def test_the_database_knows_the_type_until_uninstall(xdg):
    assert main(["desktop", "install", "--user"]) == 0
    assert SIGNATURE in (xdg / "mime" / "magic").read_bytes()
    assert "image/x-imi:*.imi" in (xdg / "mime" / "globs2").read_text()
    assert main(["desktop", "uninstall", "--user"]) == 0
    assert b"image/x-imi" not in (xdg / "mime" / "magic").read_bytes()
    assert "image/x-imi" not in (xdg / "mime" / "globs2").read_text()
    assert (xdg / "mime" / "packages" / "other.xml").exists()


def _gio_available() -> bool:
    if NO_DATABASE_TOOL or not os.path.exists(SYSTEM_PYTHON):
        return False
    probe = "import gi; gi.require_version('Gio', '2.0')"
    return subprocess.run([SYSTEM_PYTHON, "-c", probe], capture_output=True).returncode == 0


@pytest.mark.skipif(not _gio_available(), reason="GLib's Gio (python3-gi) or update-mime-database not installed")
def test_gio_recognises_an_imi_file_by_name_and_by_content(xdg, tmp_path):
    """What file managers ask: GLib's content-type guess, from the name and from the bytes alone."""
    assert main(["desktop", "install", "--user"]) == 0
    path = tmp_path / "photo.imi"
    imij_plugins.write(path, np.zeros((4, 4, 3), np.uint8))
    code = (
        "import sys; from gi.repository import Gio; data = open(sys.argv[1], 'rb').read(); "
        "print(Gio.content_type_guess(sys.argv[1], data)[0]); print(Gio.content_type_guess(None, data)[0])"
    )
    env = {**os.environ, "XDG_DATA_HOME": str(xdg), "XDG_DATA_DIRS": "/usr/share"}
    done = subprocess.run([SYSTEM_PYTHON, "-c", code, str(path)], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.split() == ["image/x-imi", "image/x-imi"]


def test_a_folder_that_cannot_be_written_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "share").write_text("a file where the data folder should be")
    assert main(["desktop", "install", "--prefix", str(tmp_path), "--no-update-database"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"imij desktop install: cannot change {tmp_path / 'share'}")
