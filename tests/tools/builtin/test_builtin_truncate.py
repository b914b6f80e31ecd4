"""pi's truncation helpers and the jsdiff line diff, checked on cases and properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.tools.builtin import format_size, truncate_head, truncate_line, truncate_tail
from pitrio.tools.builtin._edit_diff import diff_lines, generate_diff_string


def test_format_size_rounds_half_up_like_to_fixed() -> None:
    """format_size rounds exact halves up, as JavaScript's toFixed(1) does."""
    assert format_size(1023) == "1023B"
    assert format_size(1280) == "1.3KB"  # 1.25KB
    assert format_size(51200) == "50.0KB"
    assert format_size(3 * 1024 * 1024 + 256 * 1024) == "3.3MB"  # 3.25MB


def test_truncate_tail_keeps_the_end_of_an_oversized_last_line() -> None:
    """A last line over the byte limit is cut from its start, at a character boundary."""
    result = truncate_tail("first\n" + "é" * 10, max_bytes=7)
    assert result.content == "ééé"
    assert result.last_line_partial
    assert result.truncated_by == "bytes"
    assert result.output_lines == 1


def test_truncate_tail_line_limit() -> None:
    """Tail truncation keeps the last max_lines lines."""
    result = truncate_tail("\n".join(str(i) for i in range(10)), max_lines=3)
    assert result.content == "7\n8\n9"
    assert result.truncated_by == "lines"
    assert result.to_details()["totalLines"] == 10


def test_truncate_head_first_line_too_long() -> None:
    """Head truncation returns nothing when the first line alone is over the byte limit."""
    result = truncate_head("x" * 20 + "\nshort", max_bytes=10)
    assert result.content == ""
    assert result.first_line_exceeds_limit


def test_truncate_line_counts_utf16_units() -> None:
    """truncate_line counts astral characters as two units, as String.length does."""
    assert truncate_line("😀" * 3, 4) == ("😀😀... [truncated]", True)
    assert truncate_line("😀" * 2, 4) == ("😀😀", False)


lines = st.lists(st.sampled_from(["a", "b", "c", "", "a b"]), max_size=12).map(
    lambda xs: "".join(x + "\n" for x in xs)
)


@settings(deadline=None, max_examples=200)
@given(lines, lines)
def test_diff_lines_rebuilds_both_texts(old: str, new: str) -> None:
    """The kept and removed parts spell the old text; the kept and added parts spell the new one."""
    parts = diff_lines(old, new)
    assert "".join(p.value for p in parts if not p.added) == old
    assert "".join(p.value for p in parts if not p.removed) == new


def test_diff_string_marks_changes_with_line_numbers() -> None:
    """The diff numbers removed lines in the old file and added lines in the new one."""
    old = "".join(f"{i}\n" for i in range(1, 21))
    new = old.replace("10\n", "ten\n")
    diff = generate_diff_string(old, new)
    assert diff.first_changed_line == 10
    assert diff.diff.splitlines()[0] == "    ..."
    assert "-10 10" in diff.diff and "+10 ten" in diff.diff
