"""The incremental SSE decoder: framing rules and arbitrary chunk boundaries."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from pitrio.providers._sse import SSEDecoder, SSEEvent

STREAM = (
    b"event: message_start\r\n"
    b'data: {"type":"message_start"}\r\n'
    b"\r\n"
    b": keep-alive comment\n"
    b"\n"
    b"id: 7\n"
    b"data: first line\n"
    b"data: second line\n"
    b"\n"
    b"event: ping\r"
    b"data:no space\r"
    b"\r"
    b"retry: 1500\n"
    b"data: \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80\n"
    b"\n"
)

EXPECTED = [
    SSEEvent("message_start", '{"type":"message_start"}'),
    SSEEvent("message", "first line\nsecond line", "7"),
    SSEEvent("ping", "no space", "7"),
    SSEEvent("message", "\u00e9t\u00e9 \U0001f600", "7", 1500),
]


def decode(pieces: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for piece in pieces:
        events.extend(decoder.feed(piece))
    events.extend(decoder.close())
    return events


def test_decodes_fields_comments_ids_and_all_line_endings() -> None:
    assert decode([STREAM]) == EXPECTED


def test_every_single_byte_split_gives_the_same_events() -> None:
    assert decode([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    pieces = [STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode(pieces) == EXPECTED


def test_crlf_split_between_reads_is_one_line_ending() -> None:
    # A "\r" at the end of one read and "\n" at the start of the next must not count as two
    # line endings (which would dispatch an event early and lose nothing but order).
    assert decode([b"data: a\r", b"\ndata: b\r\n\r\n"]) == [SSEEvent("message", "a\nb")]


def test_empty_read_between_cr_and_lf_changes_nothing() -> None:
    # Found by hypothesis: an empty read used to forget the pending "\r".
    assert decode([b"data: a\r", b"", b"\n\r\n"]) == [SSEEvent("message", "a")]


def test_unterminated_last_event_is_still_dispatched_at_close() -> None:
    # As pi's parser: a server that omits the final blank line still delivers its last event.
    assert decode([b"data: done\n\ndata: last"]) == [
        SSEEvent("message", "done"),
        SSEEvent("message", "last"),
    ]
    assert decode([b"data: done\n\nevent: x\ndata: last\n"]) == [
        SSEEvent("message", "done"),
        SSEEvent("x", "last"),
    ]


def test_event_without_data_is_not_dispatched() -> None:
    assert decode([b"event: empty\n\ndata: x\n\n"]) == [SSEEvent("message", "x")]
