"""Image detection and sizing for ``read`` (pi 0.73.1 ``utils/mime.ts``, ``image-resize.ts``).

pi sniffs the first 4100 bytes with the ``file-type`` package and treats PNG (not APNG), JPEG
(not JPEG-LS), GIF and WebP as images. It then decodes the image with Photon (Rust/WASM) and
sends it unchanged when it is at most 2000x2000 pixels and its base64 text under 4.5MB;
otherwise it rescales and re-encodes it.

pitrio reads the dimensions from the image header in pure Python instead of decoding it, and
has no image library to rescale with, so an image over those limits is not resized: one whose
base64 text still fits is sent as it is with a note, a larger one is left out with pi's own
"could not be resized" note (sending it would exceed the providers' size limits).
"""

from __future__ import annotations

import struct
from typing import Final

SNIFF_BYTES: Final = 4100
"""Bytes read to recognise an image (file-type's sample size, as pi uses it)."""
MAX_WIDTH: Final = 2000
"""Widest image pi sends unscaled, in pixels."""
MAX_HEIGHT: Final = 2000
"""Tallest image pi sends unscaled, in pixels."""
MAX_BASE64_BYTES: Final = int(4.5 * 1024 * 1024)
"""Largest base64 payload pi sends, headroom below Anthropic's 5MB limit."""

_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_MAX_PNG_CHUNKS: Final = 512


def detect_image_mime_type(head: bytes) -> str | None:
    """Return ``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp`` for a file whose
    first :data:`SNIFF_BYTES` bytes are ``head``, or ``None`` for anything else."""
    if len(head) < 2:
        return None
    if head.startswith(b"\xef\xbb\xbf"):
        # file-type strips a UTF-8 BOM and looks again.
        head = head[3:]
    if head.startswith(b"GIF"):
        return "image/gif"
    if head.startswith(b"\xff\xd8\xff"):
        return None if head[3:4] == b"\xf7" else "image/jpeg"  # 0xF7: JPEG-LS
    if head.startswith(_PNG_SIGNATURE):
        return "image/png" if _is_plain_png(head) else None
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _is_plain_png(data: bytes) -> bool:
    # file-type walks the chunks before the first IDAT: an acTL chunk makes it APNG, which pi
    # does not count as an image; a malformed header makes it no file type at all.
    pos = len(_PNG_SIGNATURE)
    seen_header = False
    for _ in range(_MAX_PNG_CHUNKS):
        if pos + 8 > len(data):
            return False
        (length,) = struct.unpack(">i", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        if length < 0:
            return False
        if kind == b"IHDR":
            if length != 13:
                return False
            seen_header = True
        if kind == b"IDAT":
            return True
        if kind == b"acTL":
            return False
        if not seen_header and kind != b"CgBI":
            return False
        pos += 8 + length + 4
        if pos + 8 >= len(data):
            break
    return True


def image_dimensions(data: bytes, mime_type: str) -> tuple[int, int] | None:
    """Return ``(width, height)`` from the image header, or ``None`` if it cannot be read."""
    try:
        if mime_type == "image/png":
            return _png_size(data)
        if mime_type == "image/gif":
            width, height = struct.unpack("<HH", data[6:10])
            return width, height
        if mime_type == "image/jpeg":
            return _jpeg_size(data)
        if mime_type == "image/webp":
            return _webp_size(data)
    except (struct.error, IndexError):
        return None
    return None


def _png_size(data: bytes) -> tuple[int, int] | None:
    pos = len(_PNG_SIGNATURE)
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"IHDR":
            width, height = struct.unpack(">II", data[pos + 8 : pos + 16])
            return width, height
        pos += 12 + length
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        (length,) = struct.unpack(">H", data[pos + 2 : pos + 4])
        # Start-of-frame markers carry the size; C4, C8 and CC are other tables.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            return width, height
        pos += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        (bits,) = struct.unpack("<I", data[21:25])
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None
