"""The key parser: legacy escapes, controls, bracketed paste and the Kitty protocol."""

from __future__ import annotations

import pytest

from pitrio.tui._keys import Key, KeyParser, Paste, normalize_key


def parse(*chunks: bytes, flush: bool = False) -> list[Key | Paste]:
    parser = KeyParser()
    events: list[Key | Paste] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    if flush:
        events += parser.flush()
    return events


def names(*chunks: bytes, flush: bool = False) -> list[str]:
    return [
        e.name if isinstance(e, Key) else f"paste:{e.text}" for e in parse(*chunks, flush=flush)
    ]


def test_plain_text_types_characters() -> None:
    assert parse(b"aB ") == [Key("a", "a"), Key("shift+b", "B"), Key("space", " ")]


def test_utf8_split_across_reads_waits_for_its_bytes() -> None:
    encoded = "é€".encode()
    assert parse(encoded[:1], encoded[1:3], encoded[3:]) == [Key("é", "é"), Key("€", "€")]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\r", "enter"),
        (b"\t", "tab"),
        (b"\x7f", "backspace"),
        (b"\x03", "ctrl+c"),
        (b"\x01", "ctrl+a"),
        (b"\x1b[A", "up"),
        (b"\x1b[B", "down"),
        (b"\x1bOC", "right"),
        (b"\x1b[1;5D", "ctrl+left"),
        (b"\x1b[1;3A", "alt+up"),
        (b"\x1b[3~", "delete"),
        (b"\x1b[5~", "pageUp"),
        (b"\x1b[Z", "shift+tab"),
        (b"\x1b\r", "alt+enter"),
        (b"\x1bb", "alt+b"),
        (b"\x1b\x7f", "alt+backspace"),
        (b"\x1b[13;2u", "shift+enter"),
        (b"\x1b[13;3u", "alt+enter"),
        (b"\x1b[99;5u", "ctrl+c"),
        (b"\x1b[27u", "escape"),
        (b"\x1b[112;6u", "ctrl+shift+p"),
        (b"\x1b[1;5A", "ctrl+up"),
    ],
)
def test_sequences(data: bytes, expected: str) -> None:
    assert names(data) == [expected]


def test_kitty_release_is_dropped_and_repeat_counts() -> None:
    assert names(b"\x1b[97;1:3u", b"\x1b[97;1:2u") == ["a"]


def test_kitty_shifted_letter_types_upper_case() -> None:
    assert parse(b"\x1b[97;2u") == [Key("shift+a", "A")]


def test_lone_escape_waits_then_flushes() -> None:
    parser = KeyParser()
    assert parser.feed(b"\x1b") == []
    assert parser.pending
    assert parser.flush() == [Key("escape")]


def test_sequence_split_across_reads() -> None:
    assert names(b"\x1b[", b"1;5", b"C") == ["ctrl+right"]


def test_bracketed_paste_is_one_event_with_newlines() -> None:
    assert parse(b"\x1b[200~line1\r\nline2\x1b[A\x1b[201~x") == [
        Paste("line1\nline2\x1b[A"),
        Key("x", "x"),
    ]


def test_paste_end_marker_split_across_reads() -> None:
    assert parse(b"\x1b[200~abc\x1b[20", b"1~") == [Paste("abc")]


def test_query_replies_are_not_keys() -> None:
    assert names(b"\x1b[?1u", b"\x1b[?62;c") == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("Shift+Ctrl+P", "ctrl+shift+p"),
        ("alt+Enter", "alt+enter"),
        ("esc", "escape"),
        ("pageup", "pageUp"),
        ("ctrl+-", "ctrl+-"),
    ],
)
def test_normalize_key(spec: str, expected: str) -> None:
    assert normalize_key(spec) == expected
