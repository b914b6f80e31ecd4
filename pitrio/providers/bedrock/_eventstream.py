"""The ``application/vnd.amazon.eventstream`` binary framing, decoded incrementally.

Each message on the wire is::

    total length (u32) | headers length (u32) | prelude CRC32 (u32)
    headers (headers length bytes) | payload | message CRC32 (u32)

all integers big-endian. The prelude CRC covers the first 8 bytes; the message CRC covers every
byte before it. A header is ``name length (u8) | name | value type (u8) | value``; Bedrock
sends string values (type 7, a u16 length then UTF-8), and the decoder reads every type the
format defines so that an unexpected header cannot desynchronise it.

:class:`EventStreamDecoder` takes the body in pieces of any size (a frame may be cut anywhere,
even inside the prelude) and returns the whole messages each piece completes; the work per
byte is constant (at most one join of a cut message's pieces, one CRC pass, one payload copy).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping
from typing import Final, TypeAlias

import attrs

from pitrio.providers._http import InvalidStreamError

PRELUDE_LENGTH: Final = 12
"""Bytes of the prelude: total length, headers length, prelude CRC."""
MESSAGE_CRC_LENGTH: Final = 4
MIN_MESSAGE_LENGTH: Final = PRELUDE_LENGTH + MESSAGE_CRC_LENGTH
MAX_MESSAGE_LENGTH: Final = 16 * 1024 * 1024
"""Largest message accepted (the format's own limit); a larger length means a corrupt stream."""
MAX_HEADERS_LENGTH: Final = 128 * 1024

HEADER_CACHE_SIZE: Final = 64
"""Distinct header blocks a decoder remembers decoded (a stream uses about ten)."""

_U32: Final = struct.Struct(">I")
_PRELUDE: Final = struct.Struct(">II")
_PRELUDE_CRC: Final = struct.Struct(">III")
_FIXED_SIZES: Final = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8}
"""Header value types of fixed size: byte, short, integer, long, timestamp."""


class EventStreamError(InvalidStreamError):
    """The body is not a valid event stream (bad CRC, impossible length, bad header)."""


HeaderValue: TypeAlias = str | bytes | int | bool


@attrs.frozen
class EventStreamMessage:
    """One decoded message: its headers (names to values, not to be modified: messages with
    the same header block share it) and its raw payload."""

    headers: Mapping[str, HeaderValue]
    payload: bytes

    def header(self, name: str) -> str | None:
        """The string value of header ``name``, or ``None``."""
        value = self.headers.get(name)
        return value if isinstance(value, str) else None


def prelude_is_valid(data: bytes) -> bool:
    """Whether ``data`` starts with a prelude whose CRC and lengths are plausible."""
    if len(data) < PRELUDE_LENGTH:
        return False
    total, headers = _PRELUDE.unpack_from(data)
    (crc,) = _U32.unpack_from(data, 8)
    return bool(
        zlib.crc32(data[:8]) == crc
        and MIN_MESSAGE_LENGTH <= total <= MAX_MESSAGE_LENGTH
        and headers <= total - MIN_MESSAGE_LENGTH
    )


class EventStreamDecoder:
    """Turns body pieces into :class:`EventStreamMessage` objects.

    Bytes of an incomplete message are kept as a list of pieces and joined only once the
    whole message has come (its length is in the prelude), so a large message cut into many
    small reads costs O(its size), not O(size x reads). Header blocks repeat from message to
    message (the same three headers per event type), so decoded ones are remembered.

    Resource handling: owned by the one task that reads the response; not task-safe.
    """

    __slots__ = ("_headers", "_need", "_pieces", "_size")

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._size = 0  # bytes held in _pieces
        self._need = PRELUDE_LENGTH  # bytes the held message needs before decoding is worth it
        self._headers: dict[bytes, Mapping[str, HeaderValue]] = {}

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole message."""
        return self._size

    def feed(self, data: bytes) -> list[EventStreamMessage]:
        """Add ``data``; return the messages it completes, in order.

        Raises:
            EventStreamError: a CRC does not match, or a length or header is impossible.
        """
        if self._size:
            self._pieces.append(data)
            self._size += len(data)
            if self._size < self._need:
                return []
            data = b"".join(self._pieces)
            self._pieces = []
            self._size = 0
        messages: list[EventStreamMessage] = []
        size = len(data)
        position = 0
        need = PRELUDE_LENGTH
        view = memoryview(data)
        try:
            while size - position >= PRELUDE_LENGTH:
                total, headers_length, prelude_crc = _PRELUDE_CRC.unpack_from(data, position)
                if zlib.crc32(view[position : position + 8]) != prelude_crc:
                    raise EventStreamError("Event stream prelude CRC mismatch")
                if not MIN_MESSAGE_LENGTH <= total <= MAX_MESSAGE_LENGTH:
                    raise EventStreamError(f"Event stream message length {total} is out of range")
                if headers_length > min(total - MIN_MESSAGE_LENGTH, MAX_HEADERS_LENGTH):
                    raise EventStreamError(
                        f"Event stream headers length {headers_length} does not fit its message"
                    )
                if size - position < total:
                    need = total
                    break
                end = position + total
                crc_at = end - MESSAGE_CRC_LENGTH
                (message_crc,) = _U32.unpack_from(data, crc_at)
                # The message CRC continues the prelude's over the rest of the message.
                if zlib.crc32(view[position + 8 : crc_at], prelude_crc) != message_crc:
                    raise EventStreamError("Event stream message CRC mismatch")
                headers_start = position + PRELUDE_LENGTH
                payload_start = headers_start + headers_length
                raw = data[headers_start:payload_start]
                headers = self._headers.get(raw)
                if headers is None:
                    headers = _decode_headers(raw)
                    if len(self._headers) < HEADER_CACHE_SIZE:
                        self._headers[raw] = headers
                messages.append(EventStreamMessage(headers, data[payload_start:crc_at]))
                position = end
        finally:
            view.release()
        if position < size:
            self._pieces = [data[position:]]
            self._size = size - position
            self._need = need
        return messages


def _decode_headers(data: bytes) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    position = 0
    size = len(data)
    try:
        while position < size:
            name_length = data[position]
            position += 1
            name = data[position : position + name_length].decode()
            position += name_length
            kind = data[position]
            position += 1
            value: str | bytes | int | bool
            if kind in (0, 1):
                value = kind == 0
            elif kind in _FIXED_SIZES:
                width = _FIXED_SIZES[kind]
                chunk = data[position : position + width]
                if len(chunk) != width:
                    raise EventStreamError("Event stream header value is cut short")
                value = int.from_bytes(chunk, "big", signed=True)
                position += width
            elif kind in (6, 7):
                (length,) = struct.unpack_from(">H", data, position)
                position += 2
                raw = data[position : position + length]
                if len(raw) != length:
                    raise EventStreamError("Event stream header value is cut short")
                value = raw.decode() if kind == 7 else raw
                position += length
            elif kind == 9:
                value = str(uuid.UUID(bytes=data[position : position + 16]))
                position += 16
            else:
                raise EventStreamError(f"Unknown event stream header type {kind}")
            headers[name] = value
    except (IndexError, struct.error, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise EventStreamError(f"Malformed event stream header: {exc}") from exc
    return headers
