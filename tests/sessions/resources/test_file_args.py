"""``@file`` arguments become pi 0.73.1's ``<file>`` blocks and image attachments (file_args.json)."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from pi_resources import load, real_root

from pitrio.sessions.resources import FileArgumentError, process_file_arguments
from pitrio.sessions.resources._file_args import IMAGE_OMITTED_NOTE

CAPTURE = load("file_args.json")


def _fixture(root: Path) -> Path:
    folder = root / "file-args"
    folder.mkdir()
    (folder / "pic.png").write_bytes(bytes.fromhex(CAPTURE["pngHex"]))
    (folder / "notes.txt").write_text("line one\nline two\n")
    (folder / "empty.txt").write_text("")
    (folder / "fake.png").write_text("not really a png\n")
    (folder / "ünï.md").write_text("# title\n")
    return folder


@pytest.mark.parametrize(
    "case", CAPTURE["cases"], ids=lambda c: f"{'+'.join(c['args'])}-{c['autoResizeImages']}"
)
def test_file_arguments_equal_pi(tmp_path: Path, case: dict[str, Any]) -> None:
    """Text files are inlined, empty ones skipped, images attached with an empty block."""
    root = real_root(tmp_path)
    folder = _fixture(root)
    args = [a.replace("<ROOT>", str(root)) for a in case["args"]]
    result = process_file_arguments(
        args, cwd=str(folder), auto_resize_images=case["autoResizeImages"]
    )
    assert result.text == case["text"].replace("<ROOT>", str(root))
    assert [{"type": "image", "data": i.data, "mimeType": i.mime_type} for i in result.images] == [
        {"type": i["type"], "data": i["data"], "mimeType": i["mimeType"]} for i in case["images"]
    ]


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    """A file that does not exist raises with its absolute path (pi exits with the message)."""
    with pytest.raises(FileArgumentError) as caught:
        process_file_arguments(["@nope.txt"], cwd=str(tmp_path))
    assert caught.value.path == str(tmp_path / "nope.txt")
    assert caught.value.reason == "File not found"


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


def test_oversized_image_without_resizer(tmp_path: Path) -> None:
    """Over 2000px but small in bytes: sent unchanged; a resizer's result carries pi's note."""
    (tmp_path / "wide.png").write_bytes(_png(3000, 10))
    plain = process_file_arguments(["wide.png"], cwd=str(tmp_path), resize=None)
    assert plain.text == f'<file name="{tmp_path / "wide.png"}"></file>\n'
    assert len(plain.images) == 1

    from pitrio.sessions.resources import ResizedImage

    def halve(image: Any, width: int, height: int) -> ResizedImage:
        return ResizedImage(
            image=image, original_width=width, original_height=height, width=1500, height=5
        )

    resized = process_file_arguments(["wide.png"], cwd=str(tmp_path), resize=halve)
    assert resized.text == (
        f'<file name="{tmp_path / "wide.png"}">[Image: original 3000x10, displayed at 1500x5. '
        "Multiply coordinates by 2.00 to map to original image.]</file>\n"
    )
    assert base64.b64decode(resized.images[0].data) == _png(3000, 10)
    assert IMAGE_OMITTED_NOTE.startswith("[Image omitted")
