"""Transport errors of remote reads: OSError subclasses, apart from the spec's ImijError classes.

Bytes that arrive whole and break the spec are still ``Corrupt``; these say the bytes did not
arrive as asked, so no pixel is decoded from them.
"""


class RemoteError(OSError):
    """A ranged read of a remote file failed (connection, timeout, HTTP status)."""


class RangeUnsupported(RemoteError):
    """The server answered a ranged request with more bytes than asked (it ignores Range)."""


class RemoteChanged(RemoteError):
    """The remote file changed between requests (its ETag or length no longer matches)."""


class RemoteTruncated(RemoteError):
    """A response carried fewer bytes than the range asked for."""


class RemoteTimeout(RemoteError, TimeoutError):
    """A request (or a batch of concurrent ones) took longer than the ``timeout`` storage option."""
