"""Remote reads over a real local HTTP server: request and byte bounds, and typed transport errors."""

from __future__ import annotations

import numpy as np
import pytest
from extras import require

import imij_plugins as ip
from imij_plugins.remote import RangeUnsupported, RemoteChanged, RemoteError, RemoteTimeout, RemoteTruncated
from remote.server import FileServer, Served

require("aiohttp")  # the 'remote' extra, for HTTP


def gets(served: Served) -> list[str | None]:
    return [rng for command, rng in served.log if command == "GET"]


def test_region_of_the_bound_file(server: FileServer, served: Served, large) -> None:
    """Issue 40's bound: a 64x64 region of the 4096x4096 file in at most 2% of its bytes and 12 requests."""
    img, data = large
    served.files["/big.imi"] = data
    with ip.open(server.url("big.imi")) as f:
        for x, y in ((0, 0), (2000, 1000), (4000, 4000), (1000, 3000)):  # one unit, two, four
            served.reset()
            np.testing.assert_array_equal(f.read(region=(x, y, 64, 64)), img[y : y + 64, x : x + 64])
            assert served.requests <= 2  # each read: the units it overlaps, merged per stripe
    served.reset()
    with ip.open(server.url("big.imi")) as f:
        f.read(region=(2000, 1000, 64, 64))
    assert served.requests <= 12
    assert served.bytes <= 0.02 * len(data)


def test_full_read_fetches_the_file_once(server: FileServer, served: Served, large) -> None:
    img, data = large
    served.files["/big.imi"] = data
    with ip.open(server.url("big.imi")) as f:
        f.read(region=(100, 100, 64, 64))
        np.testing.assert_array_equal(f.read(), img)
        np.testing.assert_array_equal(f.read(region=(3000, 3000, 500, 500)), img[3000:3500, 3000:3500])
    assert served.bytes == len(data)  # nothing fetched twice
    ranges = gets(served)
    assert len(ranges) > 4 and all(r is not None for r in ranges)  # in parallel ranges


def test_small_file_equal_local(server: FileServer, served: Served, small) -> None:
    img, data = small
    served.files["/s.imi"] = data
    url = server.url("s.imi")
    np.testing.assert_array_equal(ip.read(url, region=(17, 300, 200, 100)), ip.read(data, region=(17, 300, 200, 100)))
    np.testing.assert_array_equal(ip.read(url), img)


def test_server_without_range_support(server: FileServer, served: Served, large) -> None:
    served.files["/big.imi"] = large[1]
    served.ranges = False
    with pytest.raises(RangeUnsupported):
        ip.open(server.url("big.imi"))


def test_file_replaced_between_requests(server: FileServer, served: Served, large) -> None:
    img, data = large
    served.files["/big.imi"] = data
    with ip.open(server.url("big.imi")) as f:
        served.replace_after = len(gets(served))  # the next GET sees another file
        with pytest.raises(RemoteChanged):
            f.read(region=(64, 64, 64, 64))


def test_response_cut_short(server: FileServer, served: Served, large) -> None:
    served.files["/big.imi"] = large[1]
    with ip.open(server.url("big.imi")) as f:
        served.cut_after = len(gets(served))
        with pytest.raises(RemoteTruncated):
            f.read(region=(64, 64, 64, 64))


def test_a_server_that_stalls_times_out(server: FileServer, served: Served, large) -> None:
    """``timeout`` (seconds, a storage option) bounds the size request and each batch of ranges."""
    served.files["/big.imi"] = large[1]
    options = {"timeout": 0.5}
    with ip.open(server.url("big.imi"), storage_options=options) as f:
        served.stall = True
        with pytest.raises(RemoteTimeout):
            f.read(region=(64, 64, 64, 64))
        with pytest.raises(TimeoutError):  # also a builtin TimeoutError, and an OSError
            f.read(region=(2000, 1000, 64, 64))
    with pytest.raises(RemoteTimeout):
        ip.open(server.url("big.imi"), storage_options=options)


def test_missing_and_unreachable(server: FileServer) -> None:
    with pytest.raises(FileNotFoundError):
        ip.open(server.url("none.imi"))
    port = server.httpd.server_address[1]
    server.close()
    with pytest.raises(OSError):
        ip.open(f"http://127.0.0.1:{port}/gone.imi")


def test_transport_errors_are_oserrors() -> None:
    assert issubclass(RemoteError, OSError) and not issubclass(RemoteError, ip.ImijError)


def test_storage_options_headers_on_every_request(server: FileServer, served: Served, small) -> None:
    """Headers from storage_options go with the size request and every range (with If-Match)."""
    img, data = small
    served.files["/s.imi"] = data
    served.required = {"X-Token": "sesame"}
    options = {"headers": {"X-Token": "sesame"}}
    np.testing.assert_array_equal(ip.read(server.url("s.imi"), region=(300, 100, 64, 64), storage_options=options),
                                  img[100:164, 300:364])
    with pytest.raises(OSError):  # fsspec's HTTP size request reports a 403 as FileNotFoundError
        ip.read(server.url("s.imi"), storage_options={"headers": {"X-Token": "wrong"}})
