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


# --------------------------------------------------------------------------- against the rules


def reference_decode(stream: bytes) -> list[SSEEvent]:
    """The format's rules line by line, written plainly (with pi's dispatch at the end)."""
    text = stream.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    events: list[SSEEvent] = []
    name: str | None = None
    data: list[str] = []
    last_id: str | None = None
    retry: int | None = None
    for line in [*text.split("\n")[:-1], ""] if text.endswith("\n") else [*text.split("\n"), ""]:
        if not line:
            if data:
                events.append(SSEEvent(name or "message", "\n".join(data), last_id, retry))
            if data or name is not None:
                name, data, retry = None, [], None
            continue
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
        elif field == "id" and "\0" not in value:
            last_id = value
        elif field == "retry" and value.isdigit():
            retry = int(value)
    return events


LINES = st.sampled_from(
    [
        b'data: {"type":"content_block_delta"}',
        b"data:tight",
        b"data",
        b"data: ",
        b"event: content_block_delta",
        b"event:",
        b"event: ",
        b": comment",
        b"id: 7",
        b"retry: 1500",
        b"retry: soon",
        b"unknown: field",
        b"data: caf\xc3\xa9",
        b"",
    ]
)


COMMON_BLOCKS = st.sampled_from(
    [
        [b"event: content_block_delta", b'data: {"delta":"hi"}'],
        [b"event: ping", b"data: {}"],
        [b"event: ", b"data: x"],
        [b'data: {"choices":[]}'],
        [b"data: [DONE]"],
    ]
)
BLOCKS = st.one_of(COMMON_BLOCKS, st.lists(LINES, max_size=4))


@given(
    st.lists(st.tuples(BLOCKS, st.sampled_from([b"\n", b"\r\n", b"\r"])), max_size=12),
    st.lists(st.integers(min_value=0, max_value=600), max_size=10),
)
def test_any_stream_and_chunking_decodes_as_the_line_rules_say(
    blocks: list[tuple[list[bytes], bytes]], cuts: list[int]
) -> None:
    """Events of one data line, an event line then a data line (the decoder's short path) and
    every other shape, each ended by a blank line, cut anywhere, come out as the format's line
    rules give them."""
    stream = b"".join(b"".join(line + end for line in [*lines, b""]) for lines, end in blocks)
    bounds = [0, *sorted(c for c in cuts if c <= len(stream)), len(stream)]
    pieces = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode(pieces) == reference_decode(stream)
