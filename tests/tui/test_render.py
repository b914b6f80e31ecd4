"""The differential renderer, checked on a terminal emulator."""

from __future__ import annotations

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tui_screen import Screen

from pitrio.tui._render import SYNC_END, SYNC_START, Renderer


def draw(renderer: Renderer, screen: Screen, lines: list[str]) -> str:
    frame = renderer.frame(lines, screen.screen.columns, screen.screen.lines)
    screen.feed(frame.data)
    return frame.kind


def test_first_frame_is_printed_and_unchanged_frame_writes_nothing() -> None:
    renderer, screen = Renderer(), Screen(20, 5)
    draw(renderer, screen, ["hello", "world"])
    assert screen.display()[:2] == ["hello", "world"]
    frame = renderer.frame(["hello", "world"], 20, 5)
    assert frame.data == "" and frame.kind == "none"


def test_each_frame_is_one_synchronized_write() -> None:
    renderer = Renderer()
    frame = renderer.frame(["a"], 10, 5)
    assert frame.data.startswith(SYNC_START) and frame.data.endswith(SYNC_END)


def test_appended_lines_are_printed_and_older_ones_kept_in_scrollback() -> None:
    renderer, screen = Renderer(), Screen(20, 3)
    draw(renderer, screen, ["1", "2"])
    lines = [str(i) for i in range(1, 8)]
    assert draw(renderer, screen, lines) == "append"
    assert screen.history() == lines


def test_changed_line_rewrites_from_there_only() -> None:
    renderer, screen = Renderer(), Screen(20, 5)
    draw(renderer, screen, ["a", "b", "c"])
    frame = renderer.frame(["a", "B", "c"], 20, 5)
    assert frame.kind == "partial" and frame.first_changed == 1
    assert "a" not in frame.data.replace("\x1b[?2026", "")
    screen.feed(frame.data)
    assert screen.display()[:3] == ["a", "B", "c"]


def test_shrinking_into_the_scrollback_redraws_everything() -> None:
    renderer, screen = Renderer(), Screen(20, 3)
    draw(renderer, screen, [str(i) for i in range(4)])  # "0" has scrolled off the top
    assert draw(renderer, screen, ["0"]) == "full"
    assert screen.display()[0] == "0"


def test_removed_lines_are_cleared() -> None:
    renderer, screen = Renderer(), Screen(20, 5)
    draw(renderer, screen, ["a", "b", "c"])
    draw(renderer, screen, ["a"])
    assert screen.display()[:3] == ["a", "", ""]
    draw(renderer, screen, ["a", "x"])
    assert screen.display()[:3] == ["a", "x", ""]


def test_change_above_the_screen_redraws_everything() -> None:
    renderer, screen = Renderer(), Screen(20, 3)
    lines = [str(i) for i in range(10)]
    draw(renderer, screen, lines)
    lines[2] = "two"
    assert draw(renderer, screen, lines) == "full"
    assert screen.display() == lines[-3:]


def test_width_change_redraws_everything() -> None:
    renderer, screen = Renderer(), Screen(20, 5)
    draw(renderer, screen, ["a", "b"])
    screen.resize(10, 5)
    assert draw(renderer, screen, ["a", "b"]) == "full"
    assert screen.display()[:2] == ["a", "b"]


def test_too_wide_lines_are_cut() -> None:
    renderer, screen = Renderer(), Screen(5, 3)
    draw(renderer, screen, ["abcdefgh", "x"])
    assert screen.display()[:2] == ["abcd…", "x"]


@settings(deadline=None, max_examples=150)
@example([["a"] * 7, ["a"]])  # shrinking below the top of the screen: found by Hypothesis
@example([["a"] * 7, ["a", "a"]])  # shrinking to a frame partly in the scrollback
@given(
    st.lists(
        st.lists(st.sampled_from(["a", "bb", "ccc", "d d", "", "éé", "字"]), max_size=12),
        min_size=1,
        max_size=8,
    )
)
def test_any_sequence_of_frames_shows_the_last(frames: list[list[str]]) -> None:
    """Whatever came before, the screen shows the bottom of the last frame, ending on the
    cursor's row, with nothing below. Content that shrank after it filled the screen stays
    where it was, as pi-tui's renderer leaves it: its top may be in the scrollback (e.g. 7
    lines on 6 rows, then 2: the first of the 2 is in the scrollback, the second on row 0);
    while no frame was shorter than the one before, the screen shows as much as fits."""
    renderer, screen = Renderer(), Screen(12, 6)
    for lines in frames:
        draw(renderer, screen, lines)
    last = frames[-1]
    shown = screen.display()
    row = screen.screen.cursor.y
    on_screen = min(row + 1, len(last))
    assert shown[row + 1 - on_screen : row + 1] == last[len(last) - on_screen :]
    assert all(line == "" for line in shown[row + 1 :])
    if all(len(a) <= len(b) for a, b in itertools.pairwise(frames)):
        assert on_screen == min(len(last), 6)
