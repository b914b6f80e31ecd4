"""The editor's keys: typing, movement, kill and yank, undo, history, paste markers."""

from __future__ import annotations

from pitrio.tui._editor import Editor
from pitrio.tui._keybindings import Keybindings
from pitrio.tui._keys import Key, KeyParser
from pitrio.tui._theme import Theme


def editor() -> Editor:
    return Editor(Theme.builtin("dark"), Keybindings())


def type_text(ed: Editor, data: bytes) -> list[object]:
    results: list[object] = []
    parser = KeyParser()
    for event in [*parser.feed(data), *parser.flush()]:
        if isinstance(event, Key):
            results.append(ed.handle_key(event))
        else:
            ed.paste(event.text)
    return results


def test_typing_and_submit() -> None:
    ed = editor()
    results = type_text(ed, b"hello\r")
    assert results[-1] == "submit"
    assert ed.take() == "hello"
    assert ed.is_empty()


def test_shift_enter_makes_a_new_line() -> None:
    ed = editor()
    type_text(ed, b"one\x1b[13;2utwo")
    assert ed.text == "one\ntwo"


def test_word_movement_and_deletion() -> None:
    ed = editor()
    type_text(ed, b"alpha beta gamma")
    type_text(ed, b"\x1bb\x1bb")  # alt+b twice: before "beta"
    assert ed.col == len("alpha ")
    type_text(ed, b"\x1bd")  # alt+d kills "beta"
    assert ed.text == "alpha  gamma"
    type_text(ed, b"\x05\x19")  # ctrl+e, ctrl+y yanks it at the end
    assert ed.text == "alpha  gammabeta"


def test_kill_to_line_ends_and_yank_pop() -> None:
    ed = editor()
    type_text(ed, b"first")
    type_text(ed, b"\x15")  # ctrl+u
    type_text(ed, b"second")
    type_text(ed, b"\x15")
    assert ed.text == ""
    type_text(ed, b"\x19")  # ctrl+y: the last kill
    assert ed.text == "second"
    type_text(ed, b"\x1by")  # alt+y: the one before
    assert ed.text == "first"


def test_consecutive_kills_join() -> None:
    ed = editor()
    type_text(ed, b"a b c")
    type_text(ed, b"\x17\x17")  # ctrl+w twice
    type_text(ed, b"\x19")
    assert ed.text == "a b c"


def test_undo_takes_back_typing_as_one_step() -> None:
    ed = editor()
    type_text(ed, b"hello")
    type_text(ed, b"\x15")
    assert ed.text == ""
    type_text(ed, b"\x1f")  # ctrl+- (undo)
    assert ed.text == "hello"
    type_text(ed, b"\x1f")
    assert ed.text == ""


def test_history_with_up_and_down() -> None:
    ed = editor()
    for text in (b"one\r", b"two\r"):
        type_text(ed, text)
        ed.take()
    type_text(ed, b"\x1b[A")
    assert ed.text == "two"
    type_text(ed, b"\x1b[A")
    assert ed.text == "one"
    type_text(ed, b"\x1b[B\x1b[B")
    assert ed.text == ""


def test_large_paste_is_a_marker_expanded_on_submit() -> None:
    ed = editor()
    pasted = "\n".join(f"line {i}" for i in range(20))
    type_text(ed, b"see ")
    type_text(ed, b"\x1b[200~" + pasted.encode() + b"\x1b[201~")
    assert ed.text == "see [paste #1 +20 lines]"
    assert ed.take() == "see " + pasted


def test_small_paste_is_inserted() -> None:
    ed = editor()
    type_text(ed, b"\x1b[200~a\nb\x1b[201~")
    assert ed.text == "a\nb"


def test_render_shows_cursor_and_wraps() -> None:
    ed = editor()
    type_text(ed, b"abcdefghij")
    lines = ed.render(6)
    assert len(lines) == 2 + 2  # border, two rows, border
    assert "\x1b[7m \x1b[27m" in lines[2]


def test_ctrl_d_on_empty_editor_is_left_to_the_app() -> None:
    ed = editor()
    assert type_text(ed, b"\x04") == ["unhandled"]
