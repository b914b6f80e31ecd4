"""The payload of a session stream's entry (see :mod:`pitrio.host.ws._cluster`)."""

from __future__ import annotations

import struct
import time
from typing import Final

import attrs

__all__ = ["StreamEntry", "decode_payload", "encode_closed", "encode_event", "encode_snapshot"]

_STAMP: Final = struct.Struct("<d")


@attrs.frozen
class StreamEntry:
    """One entry of a session's stream."""

    epoch: int
    seq: int
    payload: bytes


def encode_event(wire: bytes, now: float | None = None) -> bytes:
    """A stream payload for an event's JSON."""
    return b"E" + _STAMP.pack(time.time() if now is None else now) + wire


def encode_snapshot(frame: str, now: float | None = None) -> bytes:
    """A stream payload for a whole ``snapshot`` frame."""
    return b"S" + _STAMP.pack(time.time() if now is None else now) + frame.encode()


def encode_closed(now: float | None = None) -> bytes:
    """The stream payload that ends a session's epoch: its owner closed it."""
    return b"C" + _STAMP.pack(time.time() if now is None else now)


def decode_payload(payload: bytes) -> tuple[str, float, bytes]:
    """``(tag, owner's wall time, body)`` of a stream payload."""
    (stamp,) = _STAMP.unpack_from(payload, 1)
    return payload[:1].decode(), stamp, payload[1 + _STAMP.size :]
