"""The file operations that differ between operating systems, in one place.

Positional reads and writes, durable flushes, the one-writer lock, replacing a file and fork
hooks. Branches are chosen by what the interpreter offers, not by platform name: ``fcntl`` exists
on every POSIX system and ``msvcrt`` only on Windows, and ``os.pread``/``os.fdatasync``/
``os.register_at_fork`` are used wherever they exist.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable

try:
    import fcntl as _fcntl
except ImportError:  # Windows
    _fcntl = None  # type: ignore[assignment]
try:
    import msvcrt as _msvcrt
except ImportError:  # POSIX
    _msvcrt = None  # type: ignore[assignment]

POSIX = _fcntl is not None
# Windows opens os.open files in text mode unless told otherwise (CRLF translation, ^Z ends a read)
BINARY: int = getattr(os, "O_BINARY", 0)

# -- positional I/O ---------------------------------------------------------------------------

_fd_locks: dict[int, threading.Lock] = {}
_fd_locks_guard = threading.Lock()


def _fd_lock(fd: int) -> threading.Lock:
    """The lock that serialises seek-then-transfer on one descriptor (its file position is shared)."""
    lock = _fd_locks.get(fd)
    if lock is None:
        with _fd_locks_guard:
            lock = _fd_locks.setdefault(fd, threading.Lock())
    return lock


def seek_pread(fd: int, length: int, offset: int) -> bytes:
    """``os.pread`` where the OS has none (Windows): seek and read under the descriptor's lock.

    Returns ``length`` bytes, or fewer only when the file ends first (a read may stop early, e.g.
    at 2 GiB on Windows, so it loops).
    """
    parts = []
    with _fd_lock(fd):
        os.lseek(fd, offset, os.SEEK_SET)
        while length > 0:
            chunk = os.read(fd, length)
            if not chunk:
                break
            parts.append(chunk)
            length -= len(chunk)
    return b"".join(parts)


def seek_pwrite(fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
    """``os.pwrite`` where the OS has none (Windows): seek and write under the descriptor's lock.

    Returns the count written, which like ``os.pwrite``'s may be short: callers loop.
    """
    with _fd_lock(fd):
        os.lseek(fd, offset, os.SEEK_SET)
        return os.write(fd, data)


pread: Callable[[int, int, int], bytes] = getattr(os, "pread", seek_pread)
pwrite: Callable[[int, bytes | bytearray | memoryview, int], int] = getattr(os, "pwrite", seek_pwrite)

# -- durability -------------------------------------------------------------------------------

_FULLFSYNC: int | None = getattr(_fcntl, "F_FULLFSYNC", None)  # macOS
_datasync: Callable[[int], None] = getattr(os, "fdatasync", os.fsync)  # Windows: fsync is FlushFileBuffers


def fsync_file(fd: int) -> None:
    """Make a file's data and size durable (``fd`` open for writing).

    macOS: ``F_FULLFSYNC``, because its fsync stops at the drive's volatile cache (file systems
    that refuse it get fsync); Linux: fdatasync (data and size, not timestamps); Windows: fsync,
    which Python implements with FlushFileBuffers.
    """
    if _FULLFSYNC is not None:
        try:
            _fcntl.fcntl(fd, _FULLFSYNC)
            return
        except OSError:
            pass
    _datasync(fd)


def fsync_directory(path: str) -> None:
    """Make the directory entry of ``path`` (a file just created or renamed) durable, on POSIX.

    Windows cannot open a directory as a file; there NTFS writes the rename to its journal within
    seconds, and no call from Python forces it sooner.
    """
    if not POSIX:
        return
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- the one-writer lock ----------------------------------------------------------------------

# Windows byte-range locks are mandatory: a locked byte cannot be read through any other handle.
# The lock therefore sits on one byte past the end of any archive we expect (8 TiB), where no
# reader looks; the offset is also one every POSIX file system can seek to (ext4 stops at 16 TiB),
# so the Windows branch runs in tests there.
LOCK_OFFSET = 1 << 43
_HELD = {errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES, errno.EDEADLOCK}


def lock_writer(fd: int, path: str) -> None:
    """Take the advisory one-writer lock on an open file; BlockingIOError when another handle holds it.

    POSIX: ``flock`` on the whole file. Windows: ``msvcrt.locking`` of the byte at ``LOCK_OFFSET``.
    Readers take no lock and are never blocked by it.
    """
    try:
        if _fcntl is not None:
            _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        elif _msvcrt is not None:
            _lock_byte(fd, _msvcrt.LK_NBLCK)
    except OSError as exc:
        if exc.errno not in _HELD:
            raise
        message = f"{path} is open for writing elsewhere (one writer at a time)"
        raise BlockingIOError(errno.EWOULDBLOCK, message) from None


def unlock_writer(fd: int) -> None:
    """Release ``lock_writer``'s lock before ``fd`` is closed.

    Windows frees a closed handle's locks only "depending on available system resources", so a
    writer reopening at once could find its own lock still held; POSIX frees it on close.
    """
    if _fcntl is None and _msvcrt is not None:
        _lock_byte(fd, _msvcrt.LK_UNLCK)


def _lock_byte(fd: int, mode: int) -> None:
    """``msvcrt.locking`` of one byte at ``LOCK_OFFSET`` (it locks from the file position)."""
    with _fd_lock(fd):
        os.lseek(fd, LOCK_OFFSET, os.SEEK_SET)
        _msvcrt.locking(fd, mode, 1)


# -- replacing a file -------------------------------------------------------------------------

# Windows refuses to replace or delete a file that any handle or mapping has open (a reader, a
# virus scanner, a search indexer) with these errors; the holder usually lets go within moments.
_SHARING_ERRORS = {5, 32}  # ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION
_RETRY_DELAYS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


def replace(src: str, dst: str) -> None:
    """``os.replace``, retried for about a second while Windows reports ``dst`` open elsewhere.

    When it stays open: PermissionError naming the cause. Either way ``dst`` is the old file or the
    new one, never a mix, and ``src`` is left for the caller to remove.
    """
    for delay in (*_RETRY_DELAYS, None):
        try:
            os.replace(src, dst)
            return
        except PermissionError as exc:
            if getattr(exc, "winerror", None) not in _SHARING_ERRORS:
                raise
            if delay is None:
                raise PermissionError(
                    errno.EACCES,
                    f"cannot replace {dst}: another program has it open or mapped, or it is read-only "
                    "(Windows replaces neither); it is unchanged",
                    dst,
                ) from exc
            time.sleep(delay)


def replace_unlocked(src: str, dst: str) -> None:
    """``replace`` onto a file no writer holds: BlockingIOError when ``lock_writer`` has ``dst``.

    On POSIX a writer holding the old file would go on committing to it after the rename, into a
    file no name reaches any more; the lock is held across the rename so none can start meanwhile.
    Windows refuses to replace a file any handle has open, this one included, so there the lock is
    only probed and ``replace`` refuses any writer that opens it afterwards.
    """
    try:
        fd = os.open(dst, os.O_RDONLY | BINARY)
    except FileNotFoundError:
        replace(src, dst)
        return
    try:
        lock_writer(fd, dst)
        if not POSIX:
            unlock_writer(fd)
            os.close(fd)
            fd = -1
        replace(src, dst)
    finally:
        if fd >= 0:
            os.close(fd)


# -- fork -------------------------------------------------------------------------------------


def after_fork_in_child(reset: Callable[[], None]) -> None:
    """Run ``reset`` in every forked child; a no-op where processes cannot fork (Windows)."""
    register = getattr(os, "register_at_fork", None)
    if register is not None:
        register(after_in_child=reset)
