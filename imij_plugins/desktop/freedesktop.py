"""The shared-mime-info type ``image/x-imi`` and the ``imij.thumbnailer`` entry, written and removed.

File managers (GNOME Files, Nautilus, Nemo, Caja, Thunar with tumbler's desktop-thumbnailer plugin)
find ``.imi`` thumbnails through these two files: the MIME type says which files are IMI (by the
``*.imi`` glob and by the signature at offset 0, spec section 1), and the thumbnailer entry says which
command renders them. Both go under one XDG data directory: the user's (``$XDG_DATA_HOME``, default
``~/.local/share``) or a prefix's ``share`` (default ``/usr/local/share``, in the default
``$XDG_DATA_DIRS``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

from imij_plugins.container.writer import write_atomic
from imij_plugins.signature import SIGNATURE

MIME_TYPE = "image/x-imi"
#: The name Pillow's ``get_format_mimetype()`` reports (the spec's x. tree); an alias of MIME_TYPE.
MIME_ALIAS = "image/x.imi"
GLOB = "*.imi"
PACKAGE_FILE = "imij-plugins.xml"  # shared-mime-info asks for <vendor>-<name>.xml under mime/packages
THUMBNAILER_FILE = "imij.thumbnailer"
DEFAULT_PREFIX = "/usr/local"


@dataclass(frozen=True)
class Paths:
    """Where install writes, under one XDG data directory."""

    data_dir: str

    @property
    def mime_dir(self) -> str:
        return os.path.join(self.data_dir, "mime")

    @property
    def mime_package(self) -> str:
        return os.path.join(self.mime_dir, "packages", PACKAGE_FILE)

    @property
    def thumbnailer(self) -> str:
        return os.path.join(self.data_dir, "thumbnailers", THUMBNAILER_FILE)


def data_dir(user: bool, prefix: str | None) -> str:
    """The XDG data directory to write: the user's with ``user``, else ``prefix``/share."""
    if user:
        return os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(prefix or DEFAULT_PREFIX, "share")


def magic_value(signature: bytes) -> str:
    """``signature`` as a shared-mime-info string match value: every byte as a ``\\xHH`` escape."""
    return "".join(f"\\x{b:02x}" for b in signature)


def mime_xml() -> str:
    """The shared-mime-info package: the type, its alias, the glob and the signature at offset 0 as magic."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">
  <mime-type type="{MIME_TYPE}">
    <comment>IMI image</comment>
    <acronym>IMI</acronym>
    <expanded-acronym>IMI image format</expanded-acronym>
    <alias type="{MIME_ALIAS}"/>
    <generic-icon name="image-x-generic"/>
    <magic priority="80">
      <match type="string" offset="0" value={quoteattr(magic_value(SIGNATURE))}/>
    </magic>
    <glob pattern="{GLOB}"/>
  </mime-type>
</mime-info>
"""


def thumbnailer_command() -> list[str]:
    """The ``imij`` that runs this code: the script beside this Python (a venv's bin), else on PATH,
    else this Python with ``-m imij_plugins.cli``. Thumbnailers run with the file manager's PATH,
    which rarely holds a venv."""
    beside = os.path.join(os.path.dirname(sys.executable), "imij")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return [beside]
    found = shutil.which("imij")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "imij_plugins.cli"]


def thumbnailer_entry(command: list[str]) -> str:
    """The thumbnailer key file: ``command thumbnail %i %o %s`` for MIME_TYPE and its alias."""
    exec_args = " ".join(_desktop_quote(arg) for arg in command)
    return (
        "[Thumbnailer Entry]\n"
        f"TryExec={command[0]}\n"
        f"Exec={exec_args} thumbnail %i %o %s\n"
        f"MimeType={MIME_TYPE};{MIME_ALIAS};\n"
    )


def _desktop_quote(arg: str) -> str:
    """An Exec argument quoted as the Desktop Entry Specification asks (double quotes, backslash escapes)."""
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`%='):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg).replace("%", "%%")
    return f'"{escaped}"'


def update_database(mime_dir: str) -> str | None:
    """Run update-mime-database on ``mime_dir``; the reason when it is missing or fails, else None."""
    tool = shutil.which("update-mime-database")
    if tool is None:
        return "update-mime-database not found (install shared-mime-info); the type takes effect once it runs"
    done = subprocess.run([tool, mime_dir], capture_output=True, text=True)
    if done.returncode != 0:
        return f"{shlex.join([tool, mime_dir])} failed: {(done.stderr or done.stdout).strip()}"
    return None


def install(paths: Paths, command: list[str], update: bool = True) -> list[str]:
    """Write the MIME package and the thumbnailer entry, then update the MIME database; the files written."""
    written = []
    for path, text in ((paths.mime_package, mime_xml()), (paths.thumbnailer, thumbnailer_entry(command))):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, text.encode("utf-8"))  # a file manager never reads half a file
        written.append(path)
    if update:
        problem = update_database(paths.mime_dir)
        if problem:
            print(f"note: {problem}", file=sys.stderr)
    return written


def uninstall(paths: Paths, update: bool = True) -> list[str]:
    """Remove the two files install writes, update the MIME database, and remove the folders that
    held only those files; the files removed."""
    removed = [path for path in (paths.mime_package, paths.thumbnailer) if os.path.exists(path)]
    for path in removed:
        os.remove(path)
    if update and paths.mime_package in removed and os.path.exists(os.path.join(paths.mime_dir, "mime.cache")):
        problem = update_database(paths.mime_dir)
        if problem:
            print(f"note: {problem}", file=sys.stderr)
    _prune(os.path.dirname(paths.thumbnailer), paths.data_dir)
    # the packages folder goes only with no database beside it (update-mime-database needs the folder)
    if os.path.isdir(paths.mime_dir) and os.listdir(paths.mime_dir) == ["packages"]:
        _prune(os.path.dirname(paths.mime_package), paths.data_dir)
    return removed


def _prune(directory: str, stop: str) -> None:
    """Remove ``directory`` and its parents below ``stop`` while they are empty."""
    stop = os.path.abspath(stop)
    directory = os.path.abspath(directory)
    while directory.startswith(stop + os.sep) and os.path.isdir(directory) and not os.listdir(directory):
        os.rmdir(directory)
        directory = os.path.dirname(directory)
