"""``@file`` command-line arguments (pi 0.73.1 ``cli/file-processor.ts``).

Each file becomes a ``<file name="/abs/path">`` block: a text file's content inside it, an image
(PNG, JPEG, GIF, WebP recognised by their bytes, not their name) an empty block plus an image
attached to the prompt. Empty files are skipped. The CLI joins the text before the first message
(pi's ``buildInitialMessage``: stdin, then the files' text, then the message, without
separators).

Images: pi decodes an image and rescales it when it is over 2000x2000 pixels or its base64 text
over 4.5MB, adding a note with the original size. pitrio reads the size from the header and, for
an image over those limits, calls the ``resize`` function (by default :func:`pillow_resize`,
the read tool's rescaler); with ``resize=None`` such an image is sent as it is when its base64
text fits, and left out with pi's "could not be resized" note when not.
"""

from __future__ import annotations

import base64
import os
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Final

import attrs

from pitrio._exceptions import UsageError
from pitrio.providers import ImageContent
from pitrio.tools.builtin._images import (
    MAX_BASE64_BYTES,
    MAX_HEIGHT,
    MAX_WIDTH,
    SNIFF_BYTES,
    detect_image_mime_type,
    fit_image,
    image_dimensions,
    js_to_fixed,
)

IMAGE_OMITTED_NOTE: Final = (
    "[Image omitted: could not be resized below the inline image size limit.]"
)

_UNICODE_SPACES: Final = dict.fromkeys(
    [0x00A0, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000], " "
)


class FileArgumentError(UsageError):
    """An ``@file`` argument names a file that does not exist or cannot be read.

    pi prints ``Error: File not found: PATH`` (or ``Could not read file``) and exits 1; the CLI
    does the same with :attr:`path` and :attr:`reason`.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{reason}: {path}")
        self.path = path
        self.reason = reason


@attrs.frozen(kw_only=True)
class ResizedImage:
    """What a ``resize`` function returns: the image to send and its sizes."""

    image: ImageContent
    original_width: int
    original_height: int
    width: int
    height: int
    re_encoded: bool = False
    """Re-encoded even if at its own size (to meet the byte limit): pi still adds its note."""

    @property
    def was_resized(self) -> bool:
        return self.re_encoded or (self.width, self.height) != (
            self.original_width,
            self.original_height,
        )


ResizeImage = Callable[[ImageContent, int, int], "ResizedImage | None"]
"""``resize(image, width, height)`` -> a smaller image within pi's limits, or ``None``."""


def pillow_resize(image: ImageContent, width: int, height: int) -> ResizedImage | None:
    """The default ``resize``: pi's rescaling, done by the read tool's
    :func:`~pitrio.tools.builtin._images.fit_image` (``width`` and ``height`` are unused: it
    decodes the image itself)."""
    fitted = fit_image(base64.b64decode(image.data), image.mime_type)
    if fitted is None:
        return None
    return ResizedImage(
        image=ImageContent(data=fitted.data, mime_type=fitted.mime_type),
        original_width=fitted.original_width,
        original_height=fitted.original_height,
        width=fitted.width,
        height=fitted.height,
        re_encoded=fitted.was_resized,
    )


@attrs.frozen(kw_only=True)
class FileArguments:
    """The text blocks and the images of the ``@file`` arguments."""

    text: str = ""
    images: tuple[ImageContent, ...] = ()


def dimension_note(resized: ResizedImage) -> str | None:
    """pi's note telling the model how a resized image maps to the original."""
    if not resized.was_resized:
        return None
    scale = js_to_fixed(resized.original_width / resized.width, 2)
    return (
        f"[Image: original {resized.original_width}x{resized.original_height}, displayed at "
        f"{resized.width}x{resized.height}. Multiply coordinates by {scale} to map to "
        "original image.]"
    )


def _expand(path: str) -> str:
    path = path[1:] if path.startswith("@") else path
    path = path.translate(_UNICODE_SPACES)
    if path == "~":
        return os.path.expanduser("~")
    if path.startswith("~/"):
        return os.path.expanduser("~") + path[1:]
    return path


def resolve_read_path(path: str, cwd: str) -> str:
    """pi's path resolution for reading: ``@`` and ``~`` handled, relative to ``cwd``, and the
    macOS screenshot spellings (narrow no-break space before AM/PM, NFD, curly apostrophe)
    tried when the path as typed does not exist."""
    expanded = _expand(path)
    resolved = expanded if os.path.isabs(expanded) else os.path.join(cwd, expanded)
    resolved = os.path.normpath(resolved)
    if os.path.exists(resolved):
        return resolved
    am_pm = re.sub(r" (AM|PM)\.", "\u202f\\1.", resolved, flags=re.IGNORECASE)
    nfd = unicodedata.normalize("NFD", resolved)
    for variant in (am_pm, nfd, resolved.replace("'", "\u2019"), nfd.replace("'", "\u2019")):
        if variant != resolved and os.path.exists(variant):
            return variant
    return resolved


def _image_block(
    path: str, data: bytes, mime_type: str, auto_resize: bool, resize: ResizeImage | None
) -> tuple[str, ImageContent | None]:
    encoded = base64.b64encode(data).decode("ascii")
    image = ImageContent(data=encoded, mime_type=mime_type)
    if not auto_resize:
        return f'<file name="{path}"></file>\n', image
    size = image_dimensions(data, mime_type)
    within = (
        size is not None
        and size[0] <= MAX_WIDTH
        and size[1] <= MAX_HEIGHT
        and len(encoded) < MAX_BASE64_BYTES
    )
    if within or (size is None and len(encoded) < MAX_BASE64_BYTES):
        return f'<file name="{path}"></file>\n', image
    if resize is not None and size is not None:
        resized = resize(image, *size)
        if resized is None:
            return f'<file name="{path}">{IMAGE_OMITTED_NOTE}</file>\n', None
        return f'<file name="{path}">{dimension_note(resized) or ""}</file>\n', resized.image
    if len(encoded) < MAX_BASE64_BYTES:
        return f'<file name="{path}"></file>\n', image
    return f'<file name="{path}">{IMAGE_OMITTED_NOTE}</file>\n', None


def process_file_arguments(
    file_args: Sequence[str],
    *,
    cwd: str,
    auto_resize_images: bool = True,
    resize: ResizeImage | None = pillow_resize,
) -> FileArguments:
    """Read ``@file`` arguments into text blocks and images (blocking file work).

    Args:
        file_args: the arguments, with or without their leading ``@``.
        cwd: the directory relative paths start from.
        auto_resize_images: pi's ``images.autoResize`` setting.
        resize: an image rescaler (see the module docstring).

    Raises:
        FileArgumentError: a file does not exist or cannot be read.
    """
    text = ""
    images: list[ImageContent] = []
    for argument in file_args:
        path = os.path.abspath(resolve_read_path(argument, cwd))
        try:
            size = os.stat(path).st_size
        except OSError:
            raise FileArgumentError(path, "File not found") from None
        if size == 0:
            continue
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError as exc:
            raise FileArgumentError(path, f"Could not read file ({exc.strerror})") from exc
        mime_type = detect_image_mime_type(data[:SNIFF_BYTES])
        if mime_type is not None:
            block, image = _image_block(path, data, mime_type, auto_resize_images, resize)
            text += block
            if image is not None:
                images.append(image)
            continue
        # Node decodes invalid UTF-8 as U+FFFD, as errors="replace" does.
        text += f'<file name="{path}">\n{data.decode("utf-8", errors="replace")}\n</file>\n'
    return FileArguments(text=text, images=tuple(images))
