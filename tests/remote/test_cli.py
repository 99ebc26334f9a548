"""``imij info`` and ``imij verify`` on URLs: the header by ranges, every unit for verify, typed failures."""

from __future__ import annotations

import json

from extras import require

from imij_plugins.cli import main
from remote.server import FileServer, Served

require("aiohttp")  # the 'remote' extra, for HTTP


def test_info_fetches_the_header_only(server: FileServer, served: Served, large, capsys) -> None:
    served.files["/big.imi"] = large[1]
    assert main(["info", server.url("big.imi")]) == 0
    out = capsys.readouterr().out
    assert "4096 x 4096" in out and "1024 units (64 stripes of 64 rows x 16 groups)" in out
    assert served.bytes <= 0.02 * len(large[1])  # the size, then the first 64 KiB


def test_verify_reads_every_unit(server: FileServer, served: Served, small, capsys) -> None:
    served.files["/s.imi"] = small[1]
    assert main(["verify", server.url("s.imi")]) == 0
    assert "s.imi: OK (1 frame, 512x512 RGB uint8" in capsys.readouterr().out
    assert served.bytes == len(small[1])


def test_verify_reports_corrupt_and_transport_failures(server: FileServer, served: Served, small, capsys) -> None:
    data = small[1]
    served.files["/bad.imi"] = data[: len(data) // 2] + bytes(b ^ 0x5A for b in data[len(data) // 2 :])
    assert main(["verify", server.url("bad.imi"), server.url("missing.imi")]) == 1
    out = capsys.readouterr().out
    assert "bad.imi: FAILED: Corrupt" in out and "missing.imi: FAILED: FileNotFoundError" in out


def test_storage_options_reach_the_filesystem(server: FileServer, served: Served, small, capsys) -> None:
    """``--storage-option KEY=VALUE``, VALUE as JSON: here HTTP headers the server requires."""
    served.files["/s.imi"] = small[1]
    served.required = {"X-Token": "sesame"}
    headers = json.dumps({"X-Token": "sesame"})
    assert main(["verify", server.url("s.imi"), "--storage-option", f"headers={headers}"]) == 0
    assert main(["info", server.url("s.imi")]) == 1
    assert "s.imi: error:" in capsys.readouterr().err
