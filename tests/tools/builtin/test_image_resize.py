"""Images over pi's limits are rescaled as pi 0.73.1 does (read tool and ``@file`` arguments).

The cases marked ``pitrioDiffers`` in tests/data/pi/tools/tools.json are the images pi's read
tool rescaled with Photon. pitrio rescales with Pillow, so the pixels differ; what is compared is
what the model can rely on: the note (original and displayed size, scale), the type, the size of
the image sent (decoded from pitrio's answer, read from pi's note) and that it fits the limit.
"""

from __future__ import annotations

import base64
import hashlib
import io
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pitrio.codec import to_wire
from pitrio.sessions.resources import process_file_arguments
from pitrio.tools.builtin import create_tool
from pitrio.tools.builtin._images import (
    MAX_BASE64_BYTES,
    SHRINK_FACTOR,
    base64_length,
    dimension_note,
    fit_image,
    js_round,
    js_to_fixed,
)
from pitrio.tools.builtin._read import create_read_tool

from pi_data import load_json

CAPTURE = load_json("tools/tools.json")
RESIZED_CASES = {case["name"]: case for case in CAPTURE["cases"] if "pitrioDiffers" in case}

# Photon writes PNGs with a fast deflater (fixed codes), about ten times larger than Pillow's for
# this smooth picture: pi's 2000x1500 PNG is over 4.5MB and it falls back to a JPEG; Pillow's
# PNG fits, and a PNG comes first in pi's own order, so pitrio sends a (lossless) PNG.
MIME_DIFFERS = {"read_jpeg_large": "image/png"}


def _gradient(width: int, height: int) -> Image.Image:
    """capture.mjs's gradient(): R = 7x, G = 13y, B = 3(x + y), each mod 256; opaque."""
    red = bytes((x * 7) & 255 for x in range(width))
    green = bytes((y * 13) & 255 for y in range(height))
    diagonal = bytes((k * 3) & 255 for k in range(width + height))
    channels = (
        Image.frombytes("L", (width, 1), red).resize((width, height), Image.Resampling.NEAREST),
        Image.frombytes("L", (1, height), green).resize((width, height), Image.Resampling.NEAREST),
        Image.frombytes(
            "L", (width, height), b"".join(diagonal[y : y + width] for y in range(height))
        ),
        Image.new("L", (width, height), 255),
    )
    return Image.merge("RGBA", channels)


def _noise(width: int, height: int) -> Image.Image:
    """capture.mjs's noise(): RGB from SHAKE-256 of "pitrio-noise"; opaque."""
    rgb = hashlib.shake_256(b"pitrio-noise").digest(width * height * 3)
    return Image.frombytes("RGB", (width, height), rgb).convert("RGBA")


def _exif_segment(orientation: int) -> bytes:
    """An APP1 segment with an EXIF orientation, as capture.mjs's exifSegment()."""
    tiff = (
        b"MM\x00\x2a"
        + struct.pack(">IH", 8, 1)
        + struct.pack(">HHIHH", 0x0112, 3, 1, orientation, 0)
    )
    body = b"Exif\x00\x00" + tiff + b"\x00\x00\x00\x00"
    return b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body


def _encode(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    if fmt == "png":
        image.save(buffer, "PNG")
    else:
        image.convert("RGB").save(buffer, "JPEG", quality=80, subsampling=0)
    return buffer.getvalue()


def _setup_bytes(spec: dict[str, Any]) -> bytes:
    if "base64" in spec:
        return base64.b64decode(spec["base64"])
    image = spec["image"]
    make = _noise if image["pattern"] == "noise" else _gradient
    data = _encode(make(image["width"], image["height"]), image["format"])
    if image.get("exifOrientation"):
        data = data[:2] + _exif_segment(image["exifOrientation"]) + data[2:]
    return data


def _png(width: int, height: int, *, idat: bool = True) -> bytes:
    """A black RGB PNG, or one with a header only (no pixel data) when ``idat`` is false."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    pixels = chunk(b"IDAT", zlib.compress(b"\x00" * (width * 3 + 1) * height)) if idat else b""
    return b"\x89PNG\r\n\x1a\n" + header + pixels + chunk(b"IEND", b"")


def _size_of(data: str) -> tuple[int, int]:
    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        return image.size


async def _read(root: Path, name: str, **options: Any) -> dict[str, Any]:
    tool = create_read_tool(str(root), **options)
    result = await tool.execute("call", {"path": name}, lambda _: None)
    wire: dict[str, Any] = to_wire(result)
    return wire


@pytest.mark.parametrize("name", sorted(RESIZED_CASES))
async def test_resized_image_is_what_pi_sends(name: str, tmp_path: Path) -> None:
    """Note, type and size of the rescaled image are pi's, and its base64 text fits the limit."""
    case = RESIZED_CASES[name]
    (spec,) = case["setup"]
    (tmp_path / spec["path"]).write_bytes(_setup_bytes(spec))
    tool = create_tool("read", str(tmp_path))
    ours = to_wire(await tool.execute("call", case["args"], lambda _: None))
    theirs = case["result"]
    pi_text = theirs["content"][0]["text"]
    if len(theirs["content"]) == 1:
        assert ours == theirs  # left out: text only, and the same text
        return
    pi_mime = theirs["content"][1]["mimeType"]
    mime = MIME_DIFFERS.get(name, pi_mime)
    text, image = ours["content"]
    assert text["text"] == pi_text.replace(f"[{pi_mime}]", f"[{mime}]")
    assert image["mimeType"] == mime
    assert len(image["data"]) < MAX_BASE64_BYTES
    displayed = pi_text.split("displayed at ")[1].split(".")[0]
    width, height = (int(side) for side in displayed.split("x"))
    assert _size_of(image["data"]) == (width, height)


def test_known_differences_are_still_differences() -> None:
    """pi really did send a JPEG where pitrio sends a PNG (the listed difference is current)."""
    for name in MIME_DIFFERS:
        assert RESIZED_CASES[name]["result"]["content"][1]["mimeType"] == "image/jpeg"


async def test_small_image_is_sent_byte_for_byte(tmp_path: Path) -> None:
    """An image within the limits comes back unchanged, with no note."""
    data = _encode(_gradient(300, 200), "jpeg")
    (tmp_path / "small.jpg").write_bytes(data)
    result = await _read(tmp_path, "small.jpg")
    assert result["content"] == [
        {"type": "text", "text": "Read image file [image/jpeg]"},
        {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": "image/jpeg"},
    ]


async def test_undecodable_image_is_left_out(tmp_path: Path) -> None:
    """A PNG with a header but no pixel data is left out with pi's note, as Photon fails on it."""
    (tmp_path / "broken.png").write_bytes(_png(10, 10, idat=False))
    result = await _read(tmp_path, "broken.png")
    assert result["content"] == [
        {
            "type": "text",
            "text": "Read image file [image/png]\n"
            "[Image omitted: could not be resized below the inline image size limit.]",
        }
    ]


async def test_auto_resize_off_sends_the_file(tmp_path: Path) -> None:
    """With auto-resizing off even an image over the limits is sent as it is."""
    data = _png(2400, 3)
    (tmp_path / "wide.png").write_bytes(data)
    result = await _read(tmp_path, "wide.png", auto_resize_images=False)
    assert result["content"][1]["data"] == base64.b64encode(data).decode()


@pytest.mark.parametrize("fmt", ["GIF", "WEBP"])
def test_gif_and_webp_are_re_encoded_as_png(fmt: str) -> None:
    """Like Photon, a rescaled GIF or WebP comes back as a PNG (or JPEG), never its own type."""
    buffer = io.BytesIO()
    _gradient(2400, 30).convert("RGB").save(buffer, fmt)
    fitted = fit_image(buffer.getvalue(), f"image/{fmt.lower()}")
    assert fitted is not None
    assert (fitted.mime_type, fitted.width, fitted.height) == ("image/png", 2000, 25)


def test_sixteen_bit_greyscale_is_scaled_not_clipped() -> None:
    """A 16-bit grey of 40000 becomes about 156 of 255, not white."""
    buffer = io.BytesIO()
    Image.frombytes("I;16", (4, 1), struct.pack("<4H", *[40000] * 4)).save(buffer, "PNG")
    fitted = fit_image(buffer.getvalue(), "image/png", max_width=2)
    assert fitted is not None
    with Image.open(io.BytesIO(base64.b64decode(fitted.data))) as image:
        assert image.convert("RGBA").getpixel((0, 0)) == (156, 156, 156, 255)


def test_shrinks_by_quarters_until_it_fits() -> None:
    """Over the byte limit at every quality, the size drops by 0.75 per step, as pi's loop."""
    data = _encode(_noise(100, 100), "png")
    limit = 2000
    fitted = fit_image(data, "image/png", max_base64_bytes=limit)
    assert fitted is not None
    assert len(fitted.data) < limit
    sides = [100]
    while sides[-1] != fitted.width:
        sides.append(int(sides[-1] * SHRINK_FACTOR))
        assert sides[-1] > 0
    assert (fitted.width, fitted.height) == (sides[-1], sides[-1])
    assert len(sides) > 1
    # The step before did not fit even as a quality-40 JPEG.
    previous = _noise(100, 100).resize((sides[-2], sides[-2]), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    previous.convert("RGB").save(buffer, "JPEG", quality=40, subsampling=0)
    assert base64_length(buffer.tell()) >= limit
    assert dimension_note(fitted) == (
        f"[Image: original 100x100, displayed at {sides[-1]}x{sides[-1]}. Multiply coordinates "
        f"by {js_to_fixed(100 / sides[-1], 2)} to map to original image.]"
    )


def test_nothing_fits_gives_none() -> None:
    """When not even a 1x1 image fits the byte limit the image is left out."""
    assert fit_image(_png(4, 4), "image/png", max_base64_bytes=10) is None


@pytest.mark.parametrize(
    ("orientation", "size", "red_corner"),
    [
        (1, (10, 5), (0, 0)),
        (2, (10, 5), (9, 0)),
        (3, (10, 5), (9, 4)),
        (4, (10, 5), (0, 4)),
        (5, (5, 10), (0, 0)),
        (6, (5, 10), (4, 0)),
        (7, (5, 10), (4, 9)),
        (8, (5, 10), (0, 9)),
    ],
)
def test_exif_orientation_is_applied(
    orientation: int, size: tuple[int, int], red_corner: tuple[int, int]
) -> None:
    """A JPEG is turned upright by its EXIF orientation before rescaling, as pi turns it."""
    picture = Image.new("RGB", (80, 40), (0, 0, 255))
    picture.paste((255, 0, 0), (0, 0, 24, 12))  # red top-left corner
    data = _encode(picture.convert("RGBA"), "jpeg")
    data = data[:2] + _exif_segment(orientation) + data[2:]
    fitted = fit_image(data, "image/jpeg", max_width=10, max_height=10)
    assert fitted is not None
    assert (fitted.width, fitted.height) == size
    with Image.open(io.BytesIO(base64.b64decode(fitted.data))) as image:
        red, _, blue = image.convert("RGB").getpixel(red_corner)  # type: ignore[misc]
        assert red > 200 and blue < 80


def test_javascript_rounding() -> None:
    """Math.round and toFixed round halves up, unlike Python's round and format."""
    assert [js_round(v) for v in (2.5, 3.5, 0.49999999999999994, 8.888, 0.2)] == [3, 4, 0, 9, 0]
    assert js_to_fixed(1.125, 2) == "1.13"
    assert js_to_fixed(1.005, 2) == "1.00"  # 1.005 is 1.00499... in binary
    assert js_to_fixed(4.0, 2) == "4.00"


def test_file_argument_images_are_rescaled(tmp_path: Path) -> None:
    """``@file`` images use the same rescaling by default, with pi's note in the block."""
    (tmp_path / "wide.png").write_bytes(_encode(_gradient(2400, 3), "png"))
    result = process_file_arguments(["@wide.png"], cwd=str(tmp_path))
    assert result.text == (
        f'<file name="{tmp_path / "wide.png"}">[Image: original 2400x3, displayed at 2000x3. '
        "Multiply coordinates by 1.20 to map to original image.]</file>\n"
    )
    (image,) = result.images
    assert image.mime_type == "image/png"
    assert _size_of(image.data) == (2000, 3)


def test_file_argument_re_encoded_at_own_size_keeps_the_note(tmp_path: Path) -> None:
    """An image within 2000x2000 but over 4.5MB is re-encoded at its size, and pi notes it."""
    (tmp_path / "noise.png").write_bytes(_encode(_noise(1200, 1200), "png"))
    result = process_file_arguments(["noise.png"], cwd=str(tmp_path))
    assert result.text == (
        f'<file name="{tmp_path / "noise.png"}">[Image: original 1200x1200, displayed at '
        "1200x1200. Multiply coordinates by 1.00 to map to original image.]</file>\n"
    )
    assert result.images[0].mime_type == "image/jpeg"
