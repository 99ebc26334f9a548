"""The commit footer: every rule that invalidates one, the backward scan, its budget and the chain."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import imij_plugins.imijset as imijset
from imij_plugins.errors import Corrupt, ImijError, TooLarge
from tests.imijset.build import U64_MAX, FileBuilder, basic_leaf, footer_bytes

Opener = Callable[..., imijset.Archive]


def one_generation(**footer: object) -> FileBuilder:
    fb = FileBuilder()
    entries = [fb.blob(b"blob-%d" % k, k) for k in (1, 2, 3)]
    root = fb.page(basic_leaf(entries))
    fb.commit(**{"root": root, "entries": 3, **footer})
    return fb


def two_generations(**second: object) -> FileBuilder:
    fb = one_generation()
    entries = [fb.blob(b"new-2", 2), fb.blob(b"new-9", 9)]
    root = fb.page(basic_leaf(entries))
    fb.commit(**{"root": root, "entries": 2, **second})
    return fb


def test_valid_generations(open_bytes: Opener) -> None:
    arc = open_bytes(one_generation().buf)
    assert arc.generation == 1 and list(arc.keys()) == [1, 2, 3] and arc.get(2) == b"blob-2"
    arc = open_bytes(two_generations().buf)
    assert arc.generation == 2 and arc.segments == 2
    assert list(arc.keys()) == [1, 2, 3, 9] and arc.get(2) == b"new-2" and arc.get(1) == b"blob-1"


def test_empty_file_has_no_generation(open_bytes: Opener) -> None:
    arc = open_bytes(b"")
    assert arc.generation == 0 and list(arc.keys()) == [] and len(arc) == 0


@pytest.mark.parametrize("data", [b"x", b"not an archive at all" * 10, b"IMIJSET\x01" + bytes(72)])
def test_not_an_archive(open_bytes: Opener, data: bytes) -> None:
    with pytest.raises(Corrupt):
        open_bytes(data)


def _root_of(fb: FileBuilder) -> tuple[int, int, int]:
    """The root descriptor the last footer of ``fb`` records."""
    import struct

    return struct.unpack_from("<3Q", fb.buf, len(fb.buf) - 80 + 24)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(level=16), "root level 16"),
        (dict(generation=0), "generation 0"),
        (dict(generation=2), "generation 2 with previous end"),
        (dict(magic=b"IMIJSET\x02"), "no commit footer"),
        (dict(end=12345), "no commit footer"),  # not where its committed-end field says: not a candidate
    ],
)
def test_footer_field_rules(open_bytes: Opener, change: dict, message: str) -> None:
    with pytest.raises(Corrupt, match=message):
        open_bytes(one_generation(**change).buf)


def test_footer_digest(open_bytes: Opener) -> None:
    fb = one_generation()
    fb.buf[-80 + 56] ^= 1  # the entries field, under the digest
    with pytest.raises(Corrupt, match="digest mismatch"):
        open_bytes(fb.buf)


def test_first_generation_with_a_previous_end(open_bytes: Opener) -> None:
    with pytest.raises(Corrupt, match="generation 1 with previous end"):
        open_bytes(one_generation(previous=80).buf)


@pytest.mark.parametrize(
    "root, message",
    [
        (lambda r: (r[0], 3, r[2]), "page length 3"),
        (lambda r: (r[0], 65537, r[2]), "page length 65537"),
        (lambda r: (r[0] + 20, r[1], r[2]), "does not end before"),  # overlaps the footer
        (lambda r: (r[0], r[1], r[2] ^ 1), "fails its digest"),
        (lambda r: (r[0] + 1, r[1] - 1, r[2]), "fails its digest"),
    ],
)
def test_root_checks(open_bytes: Opener, root: Callable, message: str) -> None:
    good = one_generation()
    fb = one_generation(root=root(_root_of(good)))
    with pytest.raises(Corrupt, match=message):
        open_bytes(fb.buf)


def test_root_level_must_match(open_bytes: Opener) -> None:
    with pytest.raises(Corrupt, match="level 0, its footer says 1"):
        open_bytes(one_generation(level=1).buf)


@pytest.mark.parametrize(
    "change",
    [dict(level=16), dict(root=(0, 3, 0)), dict(magic=b"IMIJSET\x00"), dict(previous=10), dict(generation=1)],
)
def test_a_bad_newest_footer_falls_back_to_the_previous_generation(open_bytes: Opener, change: dict) -> None:
    arc = open_bytes(two_generations(**change).buf)
    assert arc.generation == 1 and list(arc.keys()) == [1, 2, 3] and arc.get(2) == b"blob-2"


def test_chain_generation_must_decrease_by_one(open_bytes: Opener) -> None:
    fb = one_generation(generation=2, previous=U64_MAX)  # invalid alone...
    with pytest.raises(Corrupt):
        open_bytes(fb.buf)
    fb = one_generation()
    fb.generation = 2  # the next commit says generation 3 after generation 1
    fb.commit(fb.page(basic_leaf([fb.blob(b"z", 50)])), 1)
    with pytest.raises(Corrupt, match="generation 1 before generation 3"):
        open_bytes(fb.buf)


@pytest.mark.parametrize(
    "previous, message",
    [(10, "not an earlier footer's end"), (79, "not an earlier footer's end"), (10**6, "not an earlier footer's end"), (81, "bad magic")],
)
def test_chain_previous_end_must_be_an_earlier_footer(open_bytes: Opener, previous: int, message: str) -> None:
    """A lone generation-2 footer: its previous end must be a footer's end before it."""
    with pytest.raises(Corrupt, match=message):
        open_bytes(one_generation(generation=2, previous=previous).buf)


def test_chain_break_after_a_valid_newest_footer_is_corrupt(open_bytes: Opener) -> None:
    with pytest.raises(Corrupt, match="generation 1 before generation 7"):
        open_bytes(two_generations(generation=7).buf)


def test_previous_footer_damaged(open_bytes: Opener) -> None:
    fb = two_generations()
    first_footer = fb.buf.find(b"IMIJSET\x01")
    fb.buf[first_footer + 30] ^= 0xFF
    with pytest.raises(Corrupt, match="digest mismatch"):
        open_bytes(fb.buf)


def test_uncommitted_tail_is_ignored(open_bytes: Opener) -> None:
    fb = one_generation()
    tail = b"garbage" * 100 + b"IMIJSET\x01" + b"half a footer"
    arc = open_bytes(bytes(fb.buf) + tail)
    assert arc.generation == 1 and list(arc.keys()) == [1, 2, 3]


def test_a_footer_copy_in_the_tail_is_not_a_commit(open_bytes: Opener) -> None:
    """The same 80 bytes later in the file sit where their committed-end field does not point."""
    fb = one_generation()
    arc = open_bytes(bytes(fb.buf) + b"pad" + bytes(fb.buf[-80:]))
    assert arc.generation == 1


def test_scan_budget(open_bytes: Opener) -> None:
    fb = one_generation()
    data = bytes(fb.buf) + bytes(5000)
    with pytest.raises(TooLarge, match="scan_budget"):
        open_bytes(data, scan_budget=4096)
    assert open_bytes(data, scan_budget=6000).generation == 1


def test_scan_finds_a_footer_across_window_edges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan reads windows; a footer straddling a window edge is still found."""
    import imij_plugins.imijset.footer as footer_module

    fb = one_generation()
    for window in (13, 64, 80, 81, 100):
        monkeypatch.setattr(footer_module, "_WINDOW", window)
        for pad in range(0, 40, 7):
            p = tmp_path / f"w{window}-{pad}.imijset"
            p.write_bytes(bytes(fb.buf) + b"\x00" * pad)
            with imijset.open(p) as arc:
                assert arc.generation == 1


def test_entry_count_is_checked_by_full_scans(open_bytes: Opener) -> None:
    fb = one_generation(entries=4)
    arc = open_bytes(fb.buf)
    assert arc.get(1) == b"blob-1"  # point lookups do not walk the segment
    with pytest.raises(Corrupt, match="3 entries, its footer says 4"):
        list(arc.keys())


def test_footer_encoding_matches_the_spec_layout() -> None:
    from imij_plugins.imijset.footer import Footer

    f = Footer(end=1000, previous=U64_MAX, root_offset=10, root_length=20, root_digest=30, entries=3, root_level=0, generation=1)
    assert f.encode() == footer_bytes(1000, U64_MAX, (10, 20, 30), 3, 0, 1)
    assert len(f.encode()) == 80


def test_errors_are_imij_errors(open_bytes: Opener) -> None:
    with pytest.raises(ImijError):
        open_bytes(b"\x00" * 200)
