"""Tool-call arguments as they stream: repair and partial JSON parsing.

Providers stream a tool call's arguments as JSON text in pieces. While the call is open, a
reader of the partial message sees what has arrived so far parsed leniently (an unfinished
string shows its prefix, an unfinished object its complete members); when the call ends the
whole text is parsed, after repairing the two mistakes models make (raw control characters
inside strings, backslashes before characters that cannot be escaped). Nothing here raises:
text that cannot be read as an object gives ``{}``, as pi does.

The builder parses lazily, only when somebody reads a partial message's arguments, so a stream
that nobody inspects costs no parsing per delta (pi re-parses the whole text on every delta).
"""

from __future__ import annotations

from typing import Any, Final

import orjson

_VALID_ESCAPES: Final = frozenset('"\\/bfnrtu')
_CONTROL_ESCAPES: Final = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_HEX: Final = frozenset("0123456789abcdefABCDEF")


def repair_json(text: str) -> str:
    """Escape raw control characters in strings and double invalid backslashes."""
    out: list[str] = []
    in_string = False
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if not in_string:
            out.append(ch)
            in_string = ch == '"'
        elif ch == '"':
            out.append(ch)
            in_string = False
        elif ch == "\\":
            nxt = text[i + 1] if i + 1 < n else ""
            if nxt == "u" and len(text[i + 2 : i + 6]) == 4 and set(text[i + 2 : i + 6]) <= _HEX:
                out.append(text[i : i + 6])
                i += 6
                continue
            if nxt and nxt != "u" and nxt in _VALID_ESCAPES:
                out.append(text[i : i + 2])
                i += 2
                continue
            out.append("\\\\")
        elif ord(ch) < 0x20:
            out.append(_CONTROL_ESCAPES.get(ch, f"\\u{ord(ch):04x}"))
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def parse_json_with_repair(text: str) -> Any:
    """Parse ``text``; if that fails, parse its repaired form.

    Raises:
        ValueError: the text is not JSON even after repair.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        repaired = repair_json(text)
        if repaired == text:
            raise
        return orjson.loads(repaired)


def parse_streaming_json(text: str | None) -> dict[str, Any]:
    """Parse possibly incomplete tool-call arguments; always returns a dict."""
    if not text or not text.strip():
        return {}
    try:
        value = parse_json_with_repair(text)
    except ValueError:
        value = parse_partial_json(text)
        if value is None:
            value = parse_partial_json(repair_json(text))
    return value if isinstance(value, dict) else {}


class _Incomplete(Exception):
    """The text ended inside a value that cannot be shown at all (a key, a bare ``-``)."""


class _Invalid(Exception):
    """The text is not a prefix of any JSON document."""


def parse_partial_json(text: str) -> Any:
    """Parse a prefix of a JSON document, completing what is unfinished.

    Unfinished strings, numbers, literals, arrays and objects are shown as far as they go; an
    object member whose key or value has not started is left out. Returns ``None`` when the
    text is not the prefix of a JSON document.
    """
    parser = _PartialParser(text)
    try:
        value = parser.value()
    except (_Incomplete, _Invalid, ValueError):
        return None
    return value


_LITERALS: Final = {"true": True, "false": False, "null": None}


class _PartialParser:
    __slots__ = ("i", "n", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.n = len(text)

    def _ws(self) -> None:
        text, i, n = self.text, self.i, self.n
        while i < n and text[i] in " \t\r\n":
            i += 1
        self.i = i

    def value(self) -> Any:
        self._ws()
        if self.i >= self.n:
            raise _Incomplete
        ch = self.text[self.i]
        if ch == "{":
            return self._object()
        if ch == "[":
            return self._array()
        if ch == '"':
            return self._string()
        if ch == "-" or ch.isdigit():
            return self._number()
        return self._literal()

    def _object(self) -> dict[str, Any]:
        result: dict[str, Any] = {}
        self.i += 1
        while True:
            self._ws()
            if self.i >= self.n:
                return result
            ch = self.text[self.i]
            if ch == "}":
                self.i += 1
                return result
            if ch == ",":
                self.i += 1
                continue
            if ch != '"':
                raise _Invalid
            key, complete = self._string_raw()
            if not complete:
                return result
            self._ws()
            if self.i >= self.n:
                return result
            if self.text[self.i] != ":":
                raise _Invalid
            self.i += 1
            self._ws()
            if self.i >= self.n:
                return result
            try:
                result[key] = self.value()
            except _Incomplete:
                return result

    def _array(self) -> list[Any]:
        result: list[Any] = []
        self.i += 1
        while True:
            self._ws()
            if self.i >= self.n:
                return result
            ch = self.text[self.i]
            if ch == "]":
                self.i += 1
                return result
            if ch == ",":
                self.i += 1
                continue
            try:
                result.append(self.value())
            except _Incomplete:
                return result

    def _string(self) -> str:
        return self._string_raw()[0]

    def _string_raw(self) -> tuple[str, bool]:
        """Read a string at ``self.i``; return its value and whether it was closed."""
        text = self.text
        start = self.i
        i = start + 1
        n = self.n
        while i < n:
            ch = text[i]
            if ch == '"':
                self.i = i + 1
                return _loads_string(text[start : i + 1]), True
            i += 2 if ch == "\\" else 1
        self.i = n
        body = text[start + 1 :]
        # Drop an escape sequence that the cut left unfinished.
        cut = _unfinished_escape(body)
        if cut is not None:
            body = body[:cut]
        return _loads_string('"' + body + '"'), False

    def _number(self) -> Any:
        text = self.text
        start = self.i
        i = start
        while i < self.n and text[i] in "+-0123456789.eE":
            i += 1
        self.i = i
        raw = text[start:i]
        while raw and raw[-1] in "+-.eE":
            raw = raw[:-1]
        if not raw or raw == "-":
            raise _Incomplete
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _Invalid from exc

    def _literal(self) -> Any:
        rest = self.text[self.i : self.i + 5]
        for word, value in _LITERALS.items():
            if rest.startswith(word):
                self.i += len(word)
                return value
            if word.startswith(rest) and self.i + len(rest) == self.n:
                self.i = self.n
                return value
        raise _Invalid


def _unfinished_escape(body: str) -> int | None:
    """Where an escape sequence cut off at the end of ``body`` starts, if one is."""
    cut = body.rfind("\\", max(0, len(body) - 6))
    if cut < 0:
        return None
    run = cut
    while run > 0 and body[run - 1] == "\\":
        run -= 1
    if (cut - run) % 2 == 1:  # this backslash is itself escaped
        return None
    tail = body[cut:]
    if len(tail) == 1 or (tail[1] == "u" and len(tail) < 6):
        return cut
    return None


def _loads_string(literal: str) -> str:
    try:
        value = orjson.loads(literal)
    except orjson.JSONDecodeError:
        value = orjson.loads(repair_json(literal))
    assert isinstance(value, str)
    return value
