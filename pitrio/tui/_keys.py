"""Terminal input -> key and paste events.

The parser understands what terminals send:

* plain characters (UTF-8, decoded incrementally: a character split across reads waits for
  its other bytes) and C0 controls (``ctrl+a`` ... ``ctrl+z``, ``enter``, ``tab``,
  ``backspace``, ``escape``);
* legacy escape sequences: ``CSI`` arrows, ``home``/``end``, ``insert``/``delete``,
  ``pageUp``/``pageDown``, ``f1``-``f12`` with xterm modifier parameters (``CSI 1;5C`` is
  ``ctrl+right``), ``SS3`` keys, ``shift+tab`` (``CSI Z``), and ``ESC`` + key as ``alt+key``;
* the Kitty keyboard protocol (``CSI code;mods[:event] u`` and the ``CSI 1;mods[:event] X``
  forms): key releases are dropped, repeats count as presses;
* bracketed paste (``CSI 200~`` ... ``CSI 201~``) as one :class:`Paste`, whatever it holds.

A lone ``ESC`` is ambiguous (the escape key, or the start of a sequence whose rest has not
arrived): :meth:`KeyParser.feed` keeps it pending, and the reader calls :meth:`KeyParser.flush`
when nothing more came within :data:`ESCAPE_TIMEOUT`.

Keys are named as pi names them in ``keybindings.json``: ``modifier+key`` with modifiers in the
order ``ctrl``, ``shift``, ``alt`` (:func:`normalize_key` puts a user's spelling in that order).
"""

from __future__ import annotations

import codecs
from typing import Final, TypeAlias

import attrs

__all__ = [
    "ESCAPE_TIMEOUT",
    "Key",
    "KeyParser",
    "Paste",
    "TermEvent",
    "normalize_key",
]

ESCAPE_TIMEOUT: Final = 0.05
"""Seconds a lone ESC waits for the rest of a sequence before it counts as the escape key."""

PASTE_START: Final = "\x1b[200~"
PASTE_END: Final = "\x1b[201~"


@attrs.frozen
class Key:
    """A key press: ``name`` as pi spells it (``"ctrl+c"``, ``"shift+enter"``, ``"a"``) and,
    for keys that type something, the ``text`` they insert."""

    name: str
    text: str | None = None


@attrs.frozen
class Paste:
    """Text pasted while the terminal's bracketed paste mode was on."""

    text: str


TermEvent: TypeAlias = Key | Paste

_MOD_ORDER: Final = ("ctrl", "shift", "alt")
_ALIASES: Final = {
    "esc": "escape",
    "return": "enter",
    "pageup": "pageUp",
    "pagedown": "pageDown",
}


def normalize_key(spec: str) -> str:
    """A key as written in ``keybindings.json`` (``"Shift+Ctrl+P"``) in the parser's spelling
    (``"ctrl+shift+p"``)."""
    parts = spec.strip().split("+")
    if spec.endswith("++") or spec == "+":  # the "+" key itself
        parts = [*[p for p in parts if p], "+"]
    key = parts[-1]
    mods = {p.lower() for p in parts[:-1]}
    lowered = key.lower()
    key = _ALIASES.get(lowered, lowered if len(key) > 1 else key)
    if len(key) == 1 and key.isalpha():
        if key.isupper():
            mods.add("shift")
        key = key.lower()
    return _compose(mods, key)


def _compose(mods: set[str] | frozenset[str], key: str) -> str:
    return "+".join([m for m in _MOD_ORDER if m in mods] + [key])


def _mods_from_param(value: int) -> set[str]:
    bits = max(0, value - 1)
    mods: set[str] = set()
    if bits & 1:
        mods.add("shift")
    if bits & 2:
        mods.add("alt")
    if bits & 4:
        mods.add("ctrl")
    return mods


_CSI_LETTER: Final = {
    "A": "up",
    "B": "down",
    "C": "right",
    "D": "left",
    "H": "home",
    "F": "end",
    "E": "clear",
    "P": "f1",
    "Q": "f2",
    "R": "f3",
    "S": "f4",
    "Z": "tab",  # with shift
}
_CSI_TILDE: Final = {
    1: "home",
    2: "insert",
    3: "delete",
    4: "end",
    5: "pageUp",
    6: "pageDown",
    7: "home",
    8: "end",
    11: "f1",
    12: "f2",
    13: "f3",
    14: "f4",
    15: "f5",
    17: "f6",
    18: "f7",
    19: "f8",
    20: "f9",
    21: "f10",
    23: "f11",
    24: "f12",
}
_KITTY_FUNCTIONAL: Final = {
    27: "escape",
    13: "enter",
    9: "tab",
    127: "backspace",
    8: "backspace",
    57399: "0",
    57414: "enter",  # keypad enter
}
_CONTROL: Final = {
    "\r": "enter",
    "\n": "enter",  # what some terminals send for ctrl+j; pi treats it as a new line key
    "\t": "tab",
    "\x7f": "backspace",
    "\x08": "backspace",
    "\x1b": "escape",
    "\x00": "ctrl+space",
    "\x1c": "ctrl+\\",
    "\x1d": "ctrl+]",
    "\x1f": "ctrl+-",
}


def _control_key(char: str) -> str | None:
    if char in _CONTROL:
        return _CONTROL[char]
    code = ord(char)
    if 1 <= code <= 26:
        return "ctrl+" + chr(code + 96)
    return None


def _char_key(char: str, mods: set[str]) -> Key:
    """A printable character with modifiers (upper case letters are ``shift+letter``)."""
    if len(char) == 1 and char.isalpha() and char.isupper() and char.lower() != char:
        mods = mods | {"shift"}
        name = _compose(mods, char.lower())
    else:
        name = _compose(mods, "space" if char == " " else char)
    plain = not (mods - {"shift"})
    return Key(name, char if plain else None)


class KeyParser:
    """Turns the bytes read from a terminal into :data:`TermEvent` s (module docstring)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ""
        self._paste: list[str] | None = None

    @property
    def pending(self) -> bool:
        """Whether input waits for more bytes (a lone ESC, an unfinished sequence or paste)."""
        return bool(self._buffer) or self._paste is not None

    def feed(self, data: bytes) -> list[TermEvent]:
        """The events ``data`` completes (with what was pending)."""
        self._buffer += self._decoder.decode(data)
        return self._parse(final=False)

    def flush(self) -> list[TermEvent]:
        """End the wait for more input: a pending ESC becomes the escape key (an unfinished
        sequence after it becomes ``alt`` + its characters)."""
        return self._parse(final=True)

    def _parse(self, *, final: bool) -> list[TermEvent]:
        events: list[TermEvent] = []
        buf = self._buffer
        i = 0
        while i < len(buf):
            if self._paste is not None:
                end = buf.find(PASTE_END, i)
                if end < 0:
                    # Keep a possible partial end marker in the buffer.
                    keep = _partial_suffix(buf, PASTE_END, i)
                    self._paste.append(buf[i : len(buf) - keep])
                    i = len(buf) - keep
                    break
                self._paste.append(buf[i:end])
                events.append(Paste("".join(self._paste).replace("\r\n", "\n").replace("\r", "\n")))
                self._paste = None
                i = end + len(PASTE_END)
                continue
            char = buf[i]
            if char != "\x1b":
                key = _control_key(char)
                events.append(Key(key) if key is not None else _char_key(char, set()))
                i += 1
                continue
            consumed, event = _escape(buf, i, final=final)
            if consumed == 0:
                break  # incomplete: wait for more input
            i += consumed
            if isinstance(event, str):
                self._paste = []
            elif event is not None:
                events.append(event)
        self._buffer = buf[i:]
        return events


def _partial_suffix(buf: str, marker: str, start: int) -> int:
    """Length of the longest suffix of ``buf[start:]`` that begins ``marker``."""
    for size in range(min(len(marker) - 1, len(buf) - start), 0, -1):
        if marker.startswith(buf[len(buf) - size :]):
            return size
    return 0


def _escape(buf: str, i: int, *, final: bool) -> tuple[int, TermEvent | str | None]:
    """Parse the sequence starting with ESC at ``buf[i]``: (characters used, event). 0 used
    means it is incomplete; event ``"paste"`` starts a bracketed paste; ``None`` is a sequence
    that means no key (a Kitty release, a reply to a query)."""
    if i + 1 >= len(buf):
        return (1, Key("escape")) if final else (0, None)
    nxt = buf[i + 1]
    if nxt == "[":
        return _csi(buf, i, final=final)
    if nxt == "O":
        if i + 2 >= len(buf):
            return (2, Key("alt+O", None)) if final else (0, None)
        letter = buf[i + 2]
        name = _CSI_LETTER.get(letter)
        return 3, Key(name) if name is not None else None
    if nxt == "\x1b":
        # ESC ESC: the first is the escape key (or alt+escape on old terminals).
        return 1, Key("escape")
    # ESC + key: alt+key.
    key = _control_key(nxt)
    if key is not None:
        *key_mods, base = key.split("+")
        return 2, Key(_compose({"alt", *key_mods}, base))
    event = _char_key(nxt, {"alt"})
    return 2, event


def _csi(buf: str, i: int, *, final: bool) -> tuple[int, TermEvent | str | None]:
    j = i + 2
    while j < len(buf) and "\x20" <= buf[j] <= "\x3f":
        j += 1
    if j >= len(buf):
        if final:
            return len(buf) - i, None  # a truncated sequence: drop it
        return 0, None
    final_char = buf[j]
    body = buf[i + 2 : j]
    used = j + 1 - i
    if body == "200" and final_char == "~":
        return used, "paste"
    if body.startswith(("?", ">", "<", "=")):
        return used, None  # a reply to a query (Kitty flags, device attributes)
    params = body.split(";")
    try:
        first = params[0].split(":")
        code = int(first[0]) if first[0] else 1
        mod_field = params[1].split(":") if len(params) > 1 else ["1"]
        mod_value = int(mod_field[0]) if mod_field[0] else 1
        event_type = int(mod_field[1]) if len(mod_field) > 1 and mod_field[1] else 1
    except ValueError:
        return used, None
    if event_type == 3:
        return used, None  # Kitty key release
    mods = _mods_from_param(mod_value)
    if final_char == "u":
        return used, _kitty_key(code, mods, params)
    if final_char == "~":
        name = _CSI_TILDE.get(code)
        if name is None:
            return used, None
        return used, Key(_compose(mods, name))
    name = _CSI_LETTER.get(final_char)
    if name is None:
        return used, None
    if final_char == "Z":
        mods.add("shift")
    return used, Key(_compose(mods, name))


def _kitty_key(code: int, mods: set[str], params: list[str]) -> Key | None:
    mods = mods - {"capslock", "numlock"}
    if code in _KITTY_FUNCTIONAL:
        name = _KITTY_FUNCTIONAL[code]
        return Key(_compose(mods, name))
    if 57344 <= code <= 63743:
        return None  # other functional keys (media, modifiers alone)
    try:
        char = chr(code)
    except ValueError:
        return None
    # The third field holds the text the key produced (when the terminal reports it).
    text = None
    if len(params) > 2 and params[2]:
        try:
            text = "".join(chr(int(c)) for c in params[2].split(":"))
        except ValueError:
            text = None
    if code == 32:
        name = _compose(mods, "space")
        return Key(name, " " if not (mods - {"shift"}) else None)
    if "shift" in mods and text is None and char.isalpha():
        text = char.upper()
    key = _char_key(char, mods)
    if key.text is not None and text is not None:
        return Key(key.name, text)
    return key
