"""Windows without Windows: the package with the Unix-only calls gone, and each fallback of
``imij_plugins._platform`` (positional I/O, the writer lock, replacing an open file) on its own.

The end-to-end run happens in a subprocess that, before importing imij_plugins, deletes the
Unix-only ``os`` functions, makes ``fcntl`` unimportable and installs a stand-in ``msvcrt``. It
also plays three Windows rules: ``os.open`` without ``O_BINARY`` is text mode (refused for the
package's own opens), a directory cannot be opened, and a file any ``os.open`` handle still holds
cannot be replaced or deleted (PermissionError with winerror 32).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

import imij_plugins
from imij_plugins import _platform

# msvcrt.locking as the Universal CRT implements it: a byte range from the file position, exclusive
# across handles (even two of one process); a conflict or an unlock of nothing is EACCES.
FAKE_MSVCRT = '''
import errno, os, threading
LK_UNLCK, LK_LOCK, LK_NBLCK, LK_RLCK, LK_NBRLCK = 0, 1, 2, 3, 4
_held = {}
_guard = threading.Lock()

def locking(fd, mode, nbytes):
    st = os.fstat(fd)
    start = os.lseek(fd, 0, os.SEEK_CUR)
    ranges = _held.setdefault((st.st_dev, st.st_ino), [])
    with _guard:
        if mode == LK_UNLCK:
            if (start, nbytes, fd) not in ranges:
                raise OSError(errno.EACCES, "Permission denied")
            ranges.remove((start, nbytes, fd))
        elif mode == LK_NBLCK:
            if any(s < start + nbytes and start < s + n for s, n, _ in ranges):
                raise OSError(errno.EACCES, "Permission denied")
            ranges.append((start, nbytes, fd))
        else:
            raise NotImplementedError(mode)
'''

WINDOWS_LIKE = '''
import errno, os, sys, types, fcntl as _fcntl

for name in ("pread", "pwrite", "preadv", "pwritev", "fdatasync", "register_at_fork", "fork",
             "forkpty", "fchmod", "fchown", "sync", "getuid", "geteuid", "posix_fadvise",
             "posix_fallocate"):
    if hasattr(os, name):
        delattr(os, name)
sys.modules["fcntl"] = None
msvcrt = types.ModuleType("msvcrt")
exec(FAKE_MSVCRT, msvcrt.__dict__)
sys.modules["msvcrt"] = msvcrt
os.O_BINARY = 0x8000

_open, _close, _replace, _unlink, _fsync = os.open, os.close, os.replace, os.unlink, os.fsync
_handles = set()

def _held_open(path):
    """Whether a live os.open handle refers to ``path`` (handles closed by C code drop out)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    for fd in list(_handles):
        try:
            f = os.fstat(fd)
        except OSError:
            _handles.discard(fd)
            continue
        if (f.st_dev, f.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False

def _sharing_violation(path):
    exc = PermissionError(errno.EACCES, "The process cannot access the file", path)
    exc.winerror = 32
    return exc

def fake_open(path, flags, mode=0o777, *, dir_fd=None):
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if flags & os.O_BINARY:
        flags &= ~os.O_BINARY
    elif caller.startswith("imij_plugins"):
        raise AssertionError(f"{caller} opened {path} without O_BINARY (text mode on Windows)")
    if os.path.isdir(path):
        raise PermissionError(errno.EACCES, "Permission denied", path)
    fd = _open(path, flags, mode, dir_fd=dir_fd)
    _handles.add(fd)
    return fd

def fake_close(fd):
    _handles.discard(fd)
    _close(fd)

def fake_replace(src, dst, **kw):
    for p in (src, dst):
        if _held_open(p):
            raise _sharing_violation(p)
    _replace(src, dst, **kw)

def fake_unlink(path, **kw):
    if _held_open(path):
        raise _sharing_violation(path)
    _unlink(path, **kw)

def fake_fsync(fd):
    """FlushFileBuffers needs a handle open for writing."""
    if _fcntl.fcntl(fd, _fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
        raise PermissionError(errno.EBADF, "Bad file descriptor")
    _fsync(fd)

os.open, os.close, os.replace, os.unlink, os.remove, os.fsync = (
    fake_open, fake_close, fake_replace, fake_unlink, fake_unlink, fake_fsync)
'''

SCENARIO = '''
import glob
import numpy as np
from PIL import Image
import imij_plugins
import imij_plugins.imijset as imijset
from imij_plugins import _platform

assert not _platform.POSIX and _platform.pread is _platform.seek_pread
assert _platform.pwrite is _platform.seek_pwrite
d = sys.argv[1]
rng = np.random.default_rng(36)
first = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
second = rng.integers(0, 4096, (30, 20, 1), dtype=np.uint16)

def leftovers():
    return glob.glob(os.path.join(d, ".*tmp"))

# the core writer and reader
imi = os.path.join(d, "a.imi")
imij_plugins.write(imi, first)
assert np.array_equal(imij_plugins.read(imi), first)
held = os.open(imi, os.O_RDONLY | os.O_BINARY)
try:
    imij_plugins.write(imi, second)
    raise AssertionError("replaced a file another handle has open")
except PermissionError as exc:
    assert "open" in str(exc), exc
os.close(held)
assert np.array_equal(imij_plugins.read(imi), first) and not leftovers()
imij_plugins.write(imi, second)
assert np.array_equal(imij_plugins.read(imi), second)

# IMIJ-Set: write, read, append, one writer at a time
arc_path = os.path.join(d, "s.imijset")
raw = b"line\\r\\nend\\x1a\\r\\n" * 50  # text mode would rewrite or cut these bytes
with imijset.open(arc_path, "w") as arc:
    arc.append(1, first, filename="first.imi")
    arc.append(2, raw)
with imijset.open(arc_path, "a") as arc:
    try:
        imijset.open(arc_path, "a")
        raise AssertionError("two writers")
    except BlockingIOError as exc:
        assert "open for writing elsewhere" in str(exc)
    with imijset.open(arc_path) as reader:  # readers take no lock
        assert reader.generation == 1 and reader.get(2) == raw
    arc.append(1, second)
    arc.append(3, b"three")
with imijset.open(arc_path, "a") as arc:  # the lock was released on close
    arc.append(4, b"four")
with imijset.open(arc_path) as arc:
    assert arc.generation == 3 and list(arc.keys()) == [1, 2, 3, 4]
    assert np.array_equal(arc.read(1), second) and arc.get(2) == raw
    assert arc.verify().live == 4

# compaction: a new file, and an existing one held by a reader or a writer is never lost
dst = os.path.join(d, "c.imijset")
with imijset.open(arc_path) as arc:
    assert arc.compact(dst) == 4
    with imijset.open(dst) as reader:
        try:
            arc.compact(dst)
            raise AssertionError("replaced an archive a reader has open")
        except PermissionError as exc:
            assert "open" in str(exc), exc
        assert reader.get(2) == raw
    with imijset.open(dst, "a") as writer:
        try:
            arc.compact(dst)
            raise AssertionError("replaced an archive a writer holds")
        except BlockingIOError:
            pass
        writer.append(9, b"nine")
    assert arc.compact(dst, placement="tail") == 4
with imijset.open(dst) as arc:
    assert arc.generation == 1 and list(arc.keys()) == [1, 2, 3, 4] and arc.verify().live == 4
assert not leftovers()

# Pillow
png_like = os.path.join(d, "p.imi")
Image.fromarray(first).save(png_like)
with Image.open(png_like) as im:
    assert im.format == "IMI" and np.array_equal(np.asarray(im), first)
print("windows-like run: ok")
'''


def test_windows_like_run(tmp_path: Path) -> None:
    """Write, read, append to and compact an IMIJ-Set archive, and round-trip .imi files through the
    core and Pillow, with no Unix-only call available."""
    script = f"FAKE_MSVCRT = {FAKE_MSVCRT!r}\n{WINDOWS_LIKE}\n{SCENARIO}"
    run = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    assert "windows-like run: ok" in run.stdout


def test_no_unix_only_call_outside_the_platform_module() -> None:
    """Every Unix-only call goes through imij_plugins._platform, where each has its fallback."""
    unix_only = re.compile(
        r"os\.(pread|pwrite|fdatasync|register_at_fork|fchmod|fchown|sync|getuid|geteuid|posix_\w+)\b"
        r"|^\s*(import fcntl|from fcntl)|fcntl\.|O_DIRECTORY"
    )
    package = Path(imij_plugins.__file__).parent
    found = [
        f"{path.relative_to(package)}:{n}: {line.strip()}"
        for path in package.rglob("*.py")
        if path.name != "_platform.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if unix_only.search(line)
    ]
    assert found == []


# -- positional I/O fallbacks ------------------------------------------------------------------


@pytest.fixture
def fd(tmp_path: Path):
    data = bytes(range(256)) * 4
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    handle = os.open(p, os.O_RDWR | _platform.BINARY)
    yield handle
    os.close(handle)


def test_seek_pread_stops_only_at_the_end(fd: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = bytes(range(256)) * 4
    assert _platform.seek_pread(fd, 10, 1020) == data[1020:]
    assert _platform.seek_pread(fd, 10, 5000) == b""
    assert _platform.seek_pread(fd, 0, 3) == b""
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda f, n: real_read(f, min(n, 7)))  # reads that stop early
    assert _platform.seek_pread(fd, 500, 3) == data[3:503]
    assert _platform.seek_pread(fd, 100, 1000) == data[1000:]


def test_seek_pwrite_returns_what_it_wrote(fd: int) -> None:
    assert _platform.seek_pwrite(fd, b"abc", 2000) == 3  # past the end: the gap reads as zeros
    assert _platform.seek_pread(fd, 8, 1996) == b"\0\0\0\0abc"
    assert _platform.seek_pwrite(fd, memoryview(b"xyz")[1:], 0) == 2
    assert os.pread(fd, 3, 0) == b"yz\x02"


def test_seek_fallbacks_from_many_threads(fd: int) -> None:
    """Threads writing and reading their own records through one descriptor never see another's."""
    record, per_thread, threads = 61, 40, 8
    failures: list[str] = []

    def work(t: int) -> None:
        for i in range(per_thread):
            offset = (i * threads + t) * record
            payload = bytes([t]) * (record - 1) + bytes([i])
            view = memoryview(payload)
            while view:
                n = _platform.seek_pwrite(fd, view, offset + len(payload) - len(view))
                view = view[n:]
            if _platform.seek_pread(fd, record, offset) != payload:
                failures.append(f"thread {t} record {i}")

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert failures == []
    for t in range(threads):
        for i in range(per_thread):
            offset = (i * threads + t) * record
            assert os.pread(fd, record, offset) == bytes([t]) * (record - 1) + bytes([i])


# -- the writer lock, both branches ------------------------------------------------------------


def _fake_msvcrt() -> types.ModuleType:
    module = types.ModuleType("msvcrt")
    exec(FAKE_MSVCRT, module.__dict__)
    return module


@pytest.fixture(params=["posix", "windows"])
def branch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "windows":
        monkeypatch.setattr(_platform, "_fcntl", None)
        monkeypatch.setattr(_platform, "_msvcrt", _fake_msvcrt())
        monkeypatch.setattr(_platform, "POSIX", False)
    return request.param


def test_second_writer_is_refused(tmp_path: Path, branch: str) -> None:
    p = tmp_path / "a.imijset"
    p.write_bytes(b"committed bytes")
    first, second = (os.open(p, os.O_RDWR | _platform.BINARY) for _ in range(2))
    try:
        _platform.lock_writer(first, str(p))
        with pytest.raises(BlockingIOError, match="open for writing elsewhere"):
            _platform.lock_writer(second, str(p))
        assert _platform.pread(second, 9, 0) == b"committed"  # the lock does not cover the data
        _platform.unlock_writer(first)
        os.close(first)
        first = -1
        _platform.lock_writer(second, str(p))
        _platform.unlock_writer(second)
    finally:
        for handle in (first, second):
            if handle >= 0:
                os.close(handle)


def test_archive_writers_exclude_each_other(tmp_path: Path, branch: str) -> None:
    import imij_plugins.imijset as imijset

    p = tmp_path / "a.imijset"
    with imijset.open(p, "w") as arc:
        arc.append(1, b"x")
        with pytest.raises(BlockingIOError):
            imijset.open(p, "a")
    with imijset.open(p, "a") as arc:  # released on close
        arc.append(2, b"y")
    with imijset.open(p) as arc:
        assert list(arc.keys()) == [1, 2]


def test_compaction_never_replaces_an_archive_a_writer_holds(tmp_path: Path, branch: str) -> None:
    import imij_plugins.imijset as imijset

    src, dst = tmp_path / "src.imijset", tmp_path / "dst.imijset"
    with imijset.open(src, "w") as arc:
        arc.append(1, b"compacted")
    with imijset.open(src) as source, imijset.open(dst, "w") as writer:
        writer.append(5, b"held")
        with pytest.raises(BlockingIOError):
            source.compact(dst)
        writer.commit()
        writer.append(6, b"after")  # its commits still reach the file named dst
    with imijset.open(dst) as arc:
        assert list(arc.keys()) == [5, 6]
    with imijset.open(src) as source:
        assert source.compact(dst) == 1
    with imijset.open(dst) as arc:
        assert list(arc.keys()) == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dst.imijset", "src.imijset"]


def test_a_lock_error_that_is_no_conflict_passes_through(tmp_path: Path, branch: str) -> None:
    p = tmp_path / "a"
    p.write_bytes(b"")
    handle = os.open(p, os.O_RDONLY)
    os.close(handle)
    with pytest.raises(OSError) as caught:
        _platform.lock_writer(handle, str(p))  # a closed descriptor
    assert not isinstance(caught.value, BlockingIOError)


# -- replacing a file that Windows reports open ------------------------------------------------


def _flaky_replace(monkeypatch: pytest.MonkeyPatch, failures: int, winerror: int | None = 32) -> list[int]:
    """os.replace that fails ``failures`` times as Windows does for an open file; returns the call log."""
    calls: list[int] = []
    real = os.replace

    def replace(src: str, dst: str) -> None:
        calls.append(1)
        if len(calls) <= failures:
            exc = PermissionError(13, "The process cannot access the file", dst)
            if winerror is not None:
                exc.winerror = winerror  # type: ignore[attr-defined]
            raise exc
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(_platform, "_RETRY_DELAYS", (0.0, 0.0, 0.0))
    return calls


def test_replace_waits_for_a_reader_to_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _flaky_replace(monkeypatch, failures=2)
    (tmp_path / "new").write_bytes(b"new")
    (tmp_path / "dst").write_bytes(b"old")
    _platform.replace(str(tmp_path / "new"), str(tmp_path / "dst"))
    assert len(calls) == 3 and (tmp_path / "dst").read_bytes() == b"new"


def test_write_atomic_leaves_the_old_file_when_it_stays_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from imij_plugins.container.writer import write_atomic

    calls = _flaky_replace(monkeypatch, failures=99)
    dst = tmp_path / "a.imi"
    dst.write_bytes(b"old")
    with pytest.raises(PermissionError, match="another program has it open"):
        write_atomic(dst, b"new")
    assert len(calls) == 4 and dst.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.imi"]


def test_a_posix_permission_error_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _flaky_replace(monkeypatch, failures=99, winerror=None)
    (tmp_path / "new").write_bytes(b"new")
    with pytest.raises(PermissionError, match="cannot access"):
        _platform.replace(str(tmp_path / "new"), str(tmp_path / "dst"))
    assert len(calls) == 1
