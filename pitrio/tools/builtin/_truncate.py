"""Output truncation shared by the built-in tools (pi 0.73.1 ``core/tools/truncate.ts``).

Two independent limits apply, and whichever is reached first wins: a number of lines
(:data:`DEFAULT_MAX_LINES`) and a number of UTF-8 bytes (:data:`DEFAULT_MAX_BYTES`). Head
truncation (``read``) keeps the first lines, tail truncation (``bash``) keeps the last ones.
Neither returns a partial line, except tail truncation when the very last line alone is over
the byte limit: then the end of that line is kept.

Lengths follow JavaScript where pi measures them: bytes are UTF-8 bytes (``Buffer.byteLength``)
and the character count of :func:`truncate_line` is in UTF-16 code units (``String.length``).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final, Literal

import attrs

DEFAULT_MAX_LINES: Final = 2000
"""Lines a tool returns at most (pi's ``DEFAULT_MAX_LINES``)."""
DEFAULT_MAX_BYTES: Final = 50 * 1024
"""UTF-8 bytes a tool returns at most, 50KB (pi's ``DEFAULT_MAX_BYTES``)."""
GREP_MAX_LINE_LENGTH: Final = 500
"""UTF-16 code units kept of one grep match line (pi's ``GREP_MAX_LINE_LENGTH``)."""

TruncatedBy = Literal["lines", "bytes"]


@attrs.frozen(kw_only=True)
class TruncationResult:
    """What :func:`truncate_head` or :func:`truncate_tail` kept (pi's ``TruncationResult``).

    :meth:`to_details` gives pi's JSON object, as tools put it in ``details.truncation``.
    """

    content: str
    """The kept text."""
    truncated: bool
    """Whether anything was cut."""
    truncated_by: TruncatedBy | None
    """The limit that was reached, ``None`` when nothing was cut."""
    total_lines: int
    """Lines in the input (``split("\\n")`` pieces, so a trailing newline adds an empty one)."""
    total_bytes: int
    """UTF-8 bytes in the input."""
    output_lines: int
    """Lines in :attr:`content`."""
    output_bytes: int
    """UTF-8 bytes in :attr:`content`."""
    last_line_partial: bool
    """Tail truncation only: :attr:`content` starts with the end of a line over the byte limit."""
    first_line_exceeds_limit: bool
    """Head truncation only: the first line alone is over the byte limit, so nothing was kept."""
    max_lines: int
    """The line limit applied."""
    max_bytes: int
    """The byte limit applied."""

    def to_details(self) -> dict[str, Any]:
        """Return pi's JSON form: camelCase keys in pi's order, ``truncatedBy`` null if unset."""
        return {
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def utf8_len(text: str) -> int:
    """Return ``Buffer.byteLength(text, "utf-8")``: a lone surrogate counts as 3 bytes (U+FFFD)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return len(text.encode("utf-8", "surrogatepass"))


def utf16_len(text: str) -> int:
    """Return JavaScript's ``text.length``: code points above U+FFFF count twice."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def utf16_slice(text: str, end: int) -> str:
    """Return JavaScript's ``text.slice(0, end)`` for ``0 <= end``.

    JavaScript would keep half of a surrogate pair cut at ``end``; a Python ``str`` with a lone
    surrogate cannot be encoded, so that half is dropped instead.
    """
    if text.isascii():
        return text[:end]
    units = 0
    for index, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > end:
            return text[:index]
    return text


def format_size(num_bytes: int) -> str:
    """Format a byte count as pi does: ``512B``, ``1.3KB``, ``2.0MB``.

    One decimal, rounded half up as JavaScript's ``toFixed(1)`` rounds (1280 bytes is ``1.3KB``
    where Python's own formatting would say ``1.2KB``).
    """
    if num_bytes < 1024:
        return f"{num_bytes}B"
    if num_bytes < 1024 * 1024:
        return f"{_to_fixed_1(Decimal(num_bytes) / 1024)}KB"
    return f"{_to_fixed_1(Decimal(num_bytes) / (1024 * 1024))}MB"


def _to_fixed_1(value: Decimal) -> str:
    # Division by a power of two is exact in both Decimal and a JavaScript double.
    return str(value.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def _untruncated(
    content: str, total_lines: int, total_bytes: int, max_lines: int, max_bytes: int
) -> TruncationResult:
    return TruncationResult(
        content=content,
        truncated=False,
        truncated_by=None,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=total_lines,
        output_bytes=total_bytes,
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_head(
    content: str,
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> TruncationResult:
    """Keep the first whole lines of ``content`` that fit both limits (pi's ``truncateHead``).

    If the first line alone is over ``max_bytes``, nothing is kept and
    :attr:`TruncationResult.first_line_exceeds_limit` is set.
    """
    total_bytes = utf8_len(content)
    lines = content.split("\n")
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)

    if utf8_len(lines[0]) > max_bytes:
        return TruncationResult(
            content="",
            truncated=True,
            truncated_by="bytes",
            total_lines=total_lines,
            total_bytes=total_bytes,
            output_lines=0,
            output_bytes=0,
            last_line_partial=False,
            first_line_exceeds_limit=True,
            max_lines=max_lines,
            max_bytes=max_bytes,
        )

    kept: list[str] = []
    kept_bytes = 0
    truncated_by: TruncatedBy = "lines"
    for index, line in enumerate(lines[:max_lines]):
        line_bytes = utf8_len(line) + (1 if index > 0 else 0)  # the joining newline
        if kept_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        kept_bytes += line_bytes
    if len(kept) >= max_lines and kept_bytes <= max_bytes:
        truncated_by = "lines"

    output = "\n".join(kept)
    return TruncationResult(
        content=output,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=len(kept),
        output_bytes=utf8_len(output),
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_tail(
    content: str,
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> TruncationResult:
    """Keep the last whole lines of ``content`` that fit both limits (pi's ``truncateTail``).

    If the last line alone is over ``max_bytes``, its final ``max_bytes`` bytes (moved forward
    to a character boundary) are kept and :attr:`TruncationResult.last_line_partial` is set.
    """
    total_bytes = utf8_len(content)
    lines = content.split("\n")
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)

    kept_reversed: list[str] = []
    kept_bytes = 0
    truncated_by: TruncatedBy = "lines"
    last_line_partial = False
    for line in reversed(lines):
        if len(kept_reversed) >= max_lines:
            break
        line_bytes = utf8_len(line) + (1 if kept_reversed else 0)  # the joining newline
        if kept_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            if not kept_reversed:
                tail = _utf8_suffix(line, max_bytes)
                kept_reversed.append(tail)
                kept_bytes = utf8_len(tail)
                last_line_partial = True
            break
        kept_reversed.append(line)
        kept_bytes += line_bytes
    if len(kept_reversed) >= max_lines and kept_bytes <= max_bytes:
        truncated_by = "lines"

    output = "\n".join(reversed(kept_reversed))
    return TruncationResult(
        content=output,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=len(kept_reversed),
        output_bytes=utf8_len(output),
        last_line_partial=last_line_partial,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def _utf8_suffix(text: str, max_bytes: int) -> str:
    """Return the longest end of ``text`` of at most ``max_bytes`` UTF-8 bytes, whole characters."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    start = len(data) - max_bytes
    # Skip continuation bytes so the cut falls on the start of a character.
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:].decode("utf-8", "replace")


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cut one line to ``max_chars`` UTF-16 units plus ``... [truncated]`` (pi's ``truncateLine``).

    Returns:
        The text and whether it was cut.
    """
    if utf16_len(line) <= max_chars:
        return line, False
    return f"{utf16_slice(line, max_chars)}... [truncated]", True
