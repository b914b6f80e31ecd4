"""Image detection and sizing for ``read`` and ``@file`` (pi 0.73.1 ``utils/mime.ts``,
``image-resize.ts``, ``exif-orientation.ts``).

pi sniffs the first 4100 bytes with the ``file-type`` package and treats PNG (not APNG), JPEG
(not JPEG-LS), GIF and WebP as images. It then decodes the image with Photon (Rust/WASM),
turning it upright by its EXIF orientation (JPEG and WebP only), and sends it unchanged when it
is at most 2000x2000 pixels and its base64 text under 4.5MB. Otherwise it rescales it (Lanczos)
to fit 2000x2000 and re-encodes it, trying a PNG and then JPEGs of falling quality and taking
the first whose base64 text is under 4.5MB; when none is, it shrinks the size by a quarter and
tries again, down to 1x1. An image it cannot decode, or cannot get under the limit, is left out.

:func:`fit_image` does the same with Pillow. The pixels differ from Photon's (another Lanczos,
another PNG deflater), but the sizes, the order of the attempts, the JPEG settings (4:4:4, the
IJG tables at the same quality) and so the type and size the model sees follow pi. Two
differences: Pillow refuses images over ``2 * PIL.Image.MAX_IMAGE_PIXELS`` pixels (about 179
million) as decompression bombs, which are then left out; and it reads EXIF orientation with its
own parser. :func:`image_dimensions` reads the size from the header alone, for callers that need
it without decoding.
"""

from __future__ import annotations

import base64
import io
import math
import struct
from decimal import ROUND_HALF_UP, Decimal
from typing import Final

import attrs
from PIL import Image

SNIFF_BYTES: Final = 4100
"""Bytes read to recognise an image (file-type's sample size, as pi uses it)."""
MAX_WIDTH: Final = 2000
"""Widest image pi sends unscaled, in pixels."""
MAX_HEIGHT: Final = 2000
"""Tallest image pi sends unscaled, in pixels."""
MAX_BASE64_BYTES: Final = int(4.5 * 1024 * 1024)
"""Largest base64 payload pi sends, headroom below Anthropic's 5MB limit."""

JPEG_QUALITY: Final = 80
"""The first JPEG quality pi tries."""
JPEG_QUALITY_STEPS: Final = (85, 70, 55, 40)
"""The qualities pi tries after :data:`JPEG_QUALITY` (85 too: pi's list, in pi's order)."""
SHRINK_FACTOR: Final = 0.75
"""How much pi shrinks each side when no encoding of the current size fits."""

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


# ---------------------------------------------------------------------------------------------
# Rescaling (pi's resizeImage)

_PIL_FORMATS: Final = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
}
_EXIF_ORIENTATION_TAG: Final = 0x0112
# EXIF orientation -> the transposition that makes the image upright (pi's flips and turns).
_UPRIGHT: Final = {
    2: (Image.Transpose.FLIP_LEFT_RIGHT,),
    3: (Image.Transpose.ROTATE_180,),
    4: (Image.Transpose.FLIP_TOP_BOTTOM,),
    5: (Image.Transpose.TRANSPOSE,),
    6: (Image.Transpose.ROTATE_270,),  # 90 degrees clockwise
    7: (Image.Transpose.TRANSVERSE,),
    8: (Image.Transpose.ROTATE_90,),  # 90 degrees anticlockwise
}


@attrs.frozen(kw_only=True)
class FittedImage:
    """An image within pi's limits, as :func:`fit_image` returns it."""

    data: str
    """The image to send, base64-encoded."""
    mime_type: str
    """``image/png`` or ``image/jpeg`` when re-encoded, else the file's own type."""
    original_width: int
    """Width of the file's image, upright, in pixels."""
    original_height: int
    """Height of the file's image, upright, in pixels."""
    width: int
    """Width of the image sent."""
    height: int
    """Height of the image sent."""
    was_resized: bool
    """Whether the image was re-encoded (possibly at its own size, to meet the byte limit)."""


def base64_length(byte_count: int) -> int:
    """Length of the base64 text of ``byte_count`` bytes (padding included)."""
    return 4 * ((byte_count + 2) // 3)


def js_round(value: float) -> int:
    """``Math.round``: the nearest integer, halves towards plus infinity."""
    whole = math.floor(value)
    return whole + 1 if value - whole >= 0.5 else whole


def js_to_fixed(value: float, digits: int) -> str:
    """``Number.prototype.toFixed`` for a non-negative number: the binary value rounded half
    up (Python's ``format`` rounds half to even: 1.125 is "1.12" there and "1.13" in pi)."""
    exact = Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{exact:.{digits}f}"


def dimension_note(fitted: FittedImage) -> str | None:
    """pi's note telling the model how a resized image maps to the original, or ``None``."""
    if not fitted.was_resized:
        return None
    scale = js_to_fixed(fitted.original_width / fitted.width, 2)
    return (
        f"[Image: original {fitted.original_width}x{fitted.original_height}, displayed at "
        f"{fitted.width}x{fitted.height}. Multiply coordinates by {scale} to map to original "
        "image.]"
    )


def fit_image(
    data: bytes,
    mime_type: str,
    *,
    max_width: int = MAX_WIDTH,
    max_height: int = MAX_HEIGHT,
    max_base64_bytes: int = MAX_BASE64_BYTES,
    jpeg_quality: int = JPEG_QUALITY,
) -> FittedImage | None:
    """Return the image of ``data`` within pi's limits, rescaled if needed, or ``None`` when it
    cannot be decoded or made small enough (pi then leaves it out with a note).

    CPU-bound and blocking: call it in a worker thread.
    """
    image = _decode(data, mime_type)
    if image is None:
        return None
    width, height = image.size
    if width <= max_width and height <= max_height and base64_length(len(data)) < max_base64_bytes:
        return FittedImage(
            data=base64.b64encode(data).decode("ascii"),
            mime_type=mime_type,
            original_width=width,
            original_height=height,
            width=width,
            height=height,
            was_resized=False,
        )
    target_width, target_height = width, height
    if target_width > max_width:
        target_height = js_round(target_height * max_width / target_width)
        target_width = max_width
    if target_height > max_height:
        target_width = js_round(target_width * max_height / target_height)
        target_height = max_height
    qualities = tuple(dict.fromkeys((jpeg_quality, *JPEG_QUALITY_STEPS)))
    current_width, current_height = target_width, target_height
    while True:
        if current_width < 1 or current_height < 1:
            # A very thin image rounds to no pixels on one side; Photon fails on it, so pi
            # leaves the image out.
            return None
        fitted = _first_fit(image, current_width, current_height, qualities, max_base64_bytes)
        if fitted is not None:
            encoded, fitted_type = fitted
            return FittedImage(
                data=encoded,
                mime_type=fitted_type,
                original_width=width,
                original_height=height,
                width=current_width,
                height=current_height,
                was_resized=True,
            )
        if current_width == 1 and current_height == 1:
            return None
        next_width = 1 if current_width == 1 else max(1, math.floor(current_width * SHRINK_FACTOR))
        next_height = (
            1 if current_height == 1 else max(1, math.floor(current_height * SHRINK_FACTOR))
        )
        if (next_width, next_height) == (current_width, current_height):
            return None
        current_width, current_height = next_width, next_height


def _decode(data: bytes, mime_type: str) -> Image.Image | None:
    """Decode to upright RGBA pixels (what Photon holds), or ``None`` if Pillow cannot."""
    try:
        with Image.open(io.BytesIO(data), formats=[_PIL_FORMATS[mime_type]]) as opened:
            opened.load()
            orientation = 1
            if mime_type in ("image/jpeg", "image/webp"):
                # pi looks for EXIF in these two formats only.
                orientation = opened.getexif().get(_EXIF_ORIENTATION_TAG, 1)
            image = _to_rgba(opened)
    except Exception:  # pi catches every Photon failure: the image is left out
        return None
    for method in _UPRIGHT.get(orientation, ()):
        image = image.transpose(method)
    return image


def _to_rgba(image: Image.Image) -> Image.Image:
    if image.mode == "I" or image.mode.startswith("I;16"):
        # Pillow takes 16-bit greyscale to 8 bits by clipping (all white above 255); Photon's
        # image crate scales it, as this does.
        image = image.point(lambda value: value / 256, "F").convert("L")
    return image.convert("RGBA")


def _first_fit(
    image: Image.Image,
    width: int,
    height: int,
    qualities: tuple[int, ...],
    max_base64_bytes: int,
) -> tuple[str, str] | None:
    """The first of a PNG and JPEGs at ``qualities`` whose base64 text is under the limit, as
    ``(base64, mime type)``; pi encodes all of them first, which picks the same one."""
    resized = image.resize((width, height), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    resized.save(buffer, "PNG")
    if base64_length(buffer.tell()) < max_base64_bytes:
        return base64.b64encode(buffer.getvalue()).decode("ascii"), "image/png"
    # Photon's JPEG drops the alpha channel and does not subsample the colours (4:4:4).
    rgb = resized.convert("RGB")
    for quality in qualities:
        buffer = io.BytesIO()
        rgb.save(buffer, "JPEG", quality=quality, subsampling=0)
        if base64_length(buffer.tell()) < max_base64_bytes:
            return base64.b64encode(buffer.getvalue()).decode("ascii"), "image/jpeg"
    return None
