"""Spec proof: parse the tables out of the IMI specification, version 2 (the repository's copy,
docs/spec/IMI_SPEC.md) and check every row against the registry.

The registry modules are hand-written data; this test reads the spec's text (tables are
tab-separated lines) independently, so a changed spec row or a registry typo fails here,
and a row missing on either side fails the count checks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from imij_plugins.registry import chunks, features, profiles, records

SPEC_PATH = Path(__file__).parents[2] / "docs" / "spec" / "IMI_SPEC.md"

BULLET = "\u2022"


@pytest.fixture(scope="module")
def spec_text() -> str:
    return SPEC_PATH.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def spec_lines(spec_text: str) -> list[str]:
    return spec_text.splitlines()


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split("\t")]


def read_table(lines: list[str], header: list[str]) -> list[list[str]]:
    """The rows of the one table whose header row is ``header``: tab-separated lines until the table ends.

    Rows may have fewer cells than the header (a trailing empty cell); they are padded.
    """
    want = [h.lower() for h in header]
    starts = [i for i, line in enumerate(lines) if "\t" in line and [c.lower() for c in _cells(line)] == want]
    assert len(starts) == 1, f"expected one table with header {header!r}, found {len(starts)}"
    rows: list[list[str]] = []
    for line in lines[starts[0] + 1:]:
        if "\t" not in line:  # a blank line or prose ends the table
            break
        cells = _cells(line)
        assert len(cells) <= len(header), f"row wider than its header: {line!r}"
        rows.append(cells + [""] * (len(header) - len(cells)))
    assert rows, f"table {header!r} has no rows"
    return rows


def tag_list(text: str) -> set[str]:
    """Tags of an English list such as "iCCP, eXIf and DATA"."""
    found = re.findall(r"\b[A-Za-z]{4}\b", text)
    return {t for t in found if t != "and"}


# ---------------------------------------------------------------- 0.1 features


def test_feature_table(spec_lines: list[str]) -> None:
    rows = read_table(spec_lines, ["id", "name", "declared when", "gates"])
    assert len(rows) == len(features.FEATURES) == len(features.FeatureId)
    for (fid, name, declared, gates), feature in zip(rows, features.FEATURES):
        assert feature == features.Feature(int(fid), name, declared, gates)
        assert features.FeatureId[name.upper()] == int(fid)
        assert features.feature_name(int(fid)) == name
    assert [int(r[0]) for r in rows] == list(range(len(rows)))


def test_unknown_feature_bits_start_after_the_table(spec_text: str) -> None:
    # 0.1: "Unknown feature bits (ids 27 and up, ..."
    m = re.search(r"Unknown feature bits \(ids (\d+) and up", spec_text)
    assert m, "the unknown-feature-bits rule moved"
    assert int(m.group(1)) == features.MAX_KNOWN_FEATURE + 1 == len(features.FEATURES)


# ---------------------------------------------------------------- 0.2 profiles


def _profile_step(text: str, names: set[str]) -> tuple[str, set[str]]:
    """Parse a profile row's features cell into ("same" | "add" | "set", feature names).

    Layouts in the table: "as 0.2 (...)"; "+ a, b"; "+ a: prose"; "a (prose), b";
    "a: prose (...), more prose"; "none: prose". Parenthesized text and anything
    after the first colon is prose; every remaining comma item must be a feature name.
    """
    if re.match(r"as \d+\.\d+\b", text):
        return "same", set()
    kind = "set"
    if text.startswith("+"):
        kind, text = "add", text[1:]
    while True:  # drop parenthesized prose, innermost first
        stripped = re.sub(r"\([^()]*\)", "", text)
        if stripped == text:
            break
        text = stripped
    text = text.split(":", 1)[0]
    items = [i.strip() for i in text.split(",") if i.strip()]
    if items == ["none"]:
        return kind, set()
    unknown = [i for i in items if i not in names]
    assert not unknown, f"profile cell items that are not feature names: {unknown!r}"
    return kind, set(items)


def test_profile_table(spec_lines: list[str]) -> None:
    feature_rows = read_table(spec_lines, ["id", "name", "declared when", "gates"])
    ids = {name: int(fid) for fid, name, _, _ in feature_rows}
    rows = read_table(spec_lines, ["profile", "version", "features", "a header implies"])
    parsed: list[profiles.Profile] = []
    name = ""
    current: set[int] = set()
    for profile, version, text, _implies in rows:
        if profile:  # a new profile starts; later rows of it leave the cell empty
            name, current = profile, set()
        assert name, "the profile table starts with a continuation row"
        assert re.fullmatch(r"\d+\.\d+", version), version
        kind, found = _profile_step(text, set(ids))
        step = {ids[f] for f in found}
        if kind == "set":  # a full list: versions are cumulative, so it keeps the previous set
            assert current <= step, f"{name} {version} drops features of its previous version"
            current = step
        elif kind == "add":
            assert step and not step & current, f"{name} {version}: '+' adds nothing new"
            current = current | step
        parsed.append(profiles.Profile(name, version, frozenset(current)))
    assert len(parsed) == len(profiles.PROFILES)
    for expected, got in zip(parsed, profiles.PROFILES):
        assert got == expected


def test_profiles_outside_sentence(spec_text: str) -> None:
    # 0.2: "mixed_pages and channel_layouts belong to no profile"
    m = re.search(r"^(\w+) and (\w+) belong to no profile", spec_text, re.M)
    assert m
    outside = profiles.features_outside_profiles(range(len(features.FEATURES)))
    for name in m.groups():
        assert features.feature_id(name) in outside


# ---------------------------------------------------------------- 1 records


def test_record_table(spec_lines: list[str]) -> None:
    feature_names = {f.name for f in features.FEATURES}
    rows = read_table(
        spec_lines, ["id", "lists", "meaning", "critical or ignorable", "feature", "constant"]
    )
    assert len(rows) == len(records.RECORDS)
    for (rid, lists, meaning, handling, feature, constant), record in zip(rows, records.RECORDS):
        assert handling in ("critical", "ignorable"), handling
        expected = records.RecordId(
            int(rid), lists, meaning, handling == "critical", None if feature == "none" else feature, constant
        )
        assert record == expected
        assert getattr(records, constant) == int(rid), constant
        assert records.is_critical(int(rid)) == (handling == "critical"), constant
        assert feature == "none" or feature in feature_names, feature
    constants = [r[5] for r in rows]
    assert len(set(constants)) == len(constants), "a constant names two rows"


def test_overlaps_list(spec_lines: list[str]) -> None:
    start = next(i for i, line in enumerate(spec_lines) if line.startswith("Existing overlaps"))
    pairs: set[frozenset[str]] = set()
    for line in spec_lines[start + 1:]:
        if not line.strip():
            if pairs:
                break
            continue
        if not line.startswith(BULLET):
            break
        names = [n.strip() for n in line[len(BULLET):].split("/")]
        assert len(names) == 2 and all(re.fullmatch(r"[A-Z0-9_]+", n) for n in names), line
        pairs.add(frozenset(names))
    assert pairs
    assert pairs == set(records.OVERLAPS)
    for pair in pairs:  # each named pair does share an id
        a, b = sorted(pair)
        assert getattr(records, a) == getattr(records, b), pair


# ---------------------------------------------------------------- 1.1 chunks


def test_chunk_tag_table(spec_lines: list[str]) -> None:
    rows = read_table(spec_lines, ["tag", "payload"])
    assert len(rows) == len(chunks.CHUNK_TAGS)
    for (tag, payload), entry in zip(rows, chunks.CHUNK_TAGS):
        assert re.fullmatch(r"[A-Za-z]{4}", tag), tag
        assert (entry.tag, entry.payload) == (tag, payload)
        assert entry.once == (tag.encode() in chunks.ONCE)
        assert tag.encode() in chunks.KNOWN_TAGS
        constant = "XMP" if tag == "xMPp" else tag.upper()
        assert getattr(chunks, constant) == tag.encode(), constant


def test_once_rules(spec_text: str, spec_lines: list[str]) -> None:
    # 1.1's sentence and 1.5's: "A, B and C occur at most once".
    sentences = re.findall(r"((?:\b[A-Za-z]{4}, )+(?:[A-Za-z]{4},? )?and [A-Za-z]{4}) occur at most once", spec_text)
    assert len(sentences) == 2, sentences
    once = set().union(*(tag_list(s) for s in sentences))
    first = tag_list(sentences[0])
    assert first == {"iCCP", "eXIf", "xMPp", "mDCv", "cLLI", "dWHI", "gMAP", "aNIM", "cSUM", "uIDX", "DATA"}
    # 1.1 table rows that state it themselves ("exactly once", "at most once": DATA, pSUM).
    for tag, payload in read_table(spec_lines, ["tag", "payload"]):
        if re.search(r"\b(exactly|at most) once\b", payload):
            once.add(tag)
    # 1.4.1: "pSUM is optional, ... It occurs at most once"
    assert re.search(r"pSUM is optional[^\n]*It occurs at most once", spec_text)
    assert {t.encode() for t in once} == chunks.ONCE
    m = re.search(r"sMDT occurs at most (\d+) times", spec_text)
    assert m and int(m.group(1)) == chunks.SMDT_MAX


def test_known_tags_outside_the_table(spec_text: str, spec_lines: list[str]) -> None:
    table = {t.encode() for t, _ in read_table(spec_lines, ["tag", "payload"])}
    extra = chunks.KNOWN_TAGS - table
    assert extra == {b"kVMD", b"mCMP", b"pDAT", b"pIDX", b"sLOC"}
    for tag in extra:
        assert re.search(rf"\b{tag.decode()}\b", spec_text), tag
        assert not chunks.is_critical(tag), tag  # all ancillary, as the spec calls them
    assert re.search(r"kVMD[^\n]*ancillary record", spec_text)
    assert re.search(r"pDAT, pIDX and sLOC extension[^\n]*skip these ancillary chunks", spec_text)


def test_letter_case_table(spec_lines: list[str]) -> None:
    rows = read_table(spec_lines, ["letter", "upper case", "lower case"])
    assert [r[0] for r in rows] == ["1st", "2nd", "3rd", "4th"]
    by_letter = {r[0]: (r[1], r[2]) for r in rows}
    assert by_letter["1st"][0].startswith("critical") and by_letter["1st"][1].startswith("ancillary")
    assert by_letter["2nd"][0].startswith("public") and by_letter["2nd"][1] == "private"
    assert "reserved, upper case" in by_letter["3rd"][0]
    assert by_letter["4th"][0].startswith("unsafe to copy") and by_letter["4th"][1] == "safe to copy"

    # Each predicate follows exactly its letter: flip one letter of "ABCD" at a time.
    predicates = {
        0: (chunks.is_critical, True),  # upper -> critical
        1: (chunks.is_public, True),  # upper -> public
        2: (chunks.reserved_bit_set, False),  # upper -> reserved bit clear
        3: (chunks.is_safe_to_copy, False),  # upper -> unsafe to copy
    }
    base = b"ABCD"
    for pos, (pred, when_upper) in predicates.items():
        for other in range(4):
            flipped = bytearray(base)
            flipped[other] |= 0x20
            expected = when_upper if other != pos else not when_upper
            assert pred(bytes(flipped)) == expected, (pred.__name__, bytes(flipped))


def test_table_tags_follow_their_prose(spec_text: str) -> None:
    # The handling the spec spells out for tags agrees with their letters.
    for t in (b"cSUM", b"uIDX", b"pSUM"):
        assert not chunks.is_critical(t) and chunks.is_public(t) and not chunks.is_safe_to_copy(t)
    assert re.search(r"uIDX chunk: ancillary, public, unsafe to copy", spec_text)
    assert re.search(r"pSUM is optional, ancillary, public and unsafe to copy", spec_text)
    assert re.search(r"make the chunk ancillary[^\n]*public, and unsafe to copy", spec_text)
    for entry in chunks.CHUNK_TAGS:
        assert chunks.is_valid_tag(entry.code) and not chunks.reserved_bit_set(entry.code)
        assert chunks.is_public(entry.code)
