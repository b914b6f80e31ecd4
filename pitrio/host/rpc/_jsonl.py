"""Strict JSONL framing and JavaScript's view of JSON, for pi's RPC protocol.

pi 0.73.1 frames RPC records with LF only (``modes/rpc/jsonl.js``): a record ends at ``\\n``, one
trailing ``\\r`` is dropped, and U+2028 / U+2029 are ordinary characters inside JSON strings
(Node's ``readline`` splits on them, which was a bug pi fixed). :class:`LineSplitter` does the
same on bytes, with a bound: a record longer than :data:`MAX_LINE_BYTES` is skipped up to its
LF and reported as :class:`LineTooLong` instead of growing a buffer without limit.

pi reads a record with ``JSON.parse`` and echoes values (a command's ``id``, an unknown
``type``) with ``JSON.stringify``; a client sees V8's words and JavaScript's number formatting.
:func:`parse_json_line` returns the value or raises :class:`JsonParseError` whose ``message`` is
V8's (``Unexpected token 'a', "abc" is not valid JSON``; positions count UTF-16 code units as
JavaScript strings do); :func:`js_json` encodes a parsed value as ``JSON.stringify`` would
(``1.0`` is ``1``, ``-0`` is ``0``, integer-like keys first, lone surrogates escaped), and
:func:`js_string` is JavaScript's ``String(value)``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Final, Literal

import attrs
import orjson

from pitrio._exceptions import PitrioError

__all__ = [
    "MAX_LINE_BYTES",
    "JsonParseError",
    "LineSplitter",
    "LineTooLong",
    "js_json",
    "js_string",
    "parse_json_line",
]

MAX_LINE_BYTES: Final = 16 * 1024 * 1024
"""Longest RPC record accepted (bytes, without its LF). A prompt with a few large base64 images
fits; a longer record is discarded up to its LF and answered with an error, so one hostile
line costs at most this much memory and the process keeps serving."""
MAX_JSON_DEPTH: Final = 1024
"""Deepest nesting of arrays and objects a record may have; deeper is refused as malformed.
V8's ``JSON.parse`` nests as deep as memory allows, Python's parsers do not (orjson stops at
1,024, the standard library at the interpreter's recursion limit, which differs between 3.11
and 3.13): one bound stated here, orjson's, makes what counts as malformed the same on every
interpreter. pi's commands nest a few levels."""
EXACT_ERROR_CHARS: Final = 64 * 1024
"""Longest refused record whose error names V8's exact words (pi's ``Failed to parse
command:`` text). The V8 scanner is pure Python, about a second per MiB on the event loop;
a longer refused record gets the position and reason from the C parser instead."""


class JsonParseError(PitrioError, ValueError):
    """A record that ``JSON.parse`` would refuse.

    Attributes:
        message: V8's message for it (what pi puts after ``Failed to parse command:``).
        position: where V8 stopped, in UTF-16 code units (``None`` for messages without one).
    """

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


@attrs.frozen
class LineTooLong:
    """A record longer than the splitter's bound, skipped (its bytes are not kept)."""

    size: int
    """How many bytes it had (without the LF)."""


class LineSplitter:
    """Cut a byte stream into LF-terminated records (pi's strict JSONL framing).

    Each record loses its LF and one trailing CR. Only ``\\n`` separates records: U+2028 and
    U+2029 (and a lone ``\\r``) stay inside. A record longer than ``max_line`` bytes is dropped
    as it arrives and reported once, as :class:`LineTooLong`, when its LF (or the end) comes.
    """

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._max = max_line
        self._buffer = bytearray()
        self._skipped: int | None = None  # bytes of an overlong record dropped so far

    def feed(self, data: bytes) -> list[bytes | LineTooLong]:
        """The records that ``data`` completes, in order."""
        out: list[bytes | LineTooLong] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            self._take(data, start, end)
            out.append(self._finish())
            start = end + 1
        self._take(data, start, len(data))
        return out

    def end(self) -> list[bytes | LineTooLong]:
        """The last record, if the stream ended without an LF after it (pi handles it too)."""
        if self._skipped is not None or self._buffer:
            return [self._finish()]
        return []

    def _take(self, data: bytes, start: int, end: int) -> None:
        if self._skipped is not None:
            self._skipped += end - start
            return
        if len(self._buffer) + (end - start) > self._max + 1:  # +1: the CR that may go
            self._skipped = len(self._buffer) + (end - start)
            self._buffer = bytearray()
            return
        self._buffer += data[start:end]

    def _finish(self) -> bytes | LineTooLong:
        if self._skipped is not None:
            size, self._skipped = self._skipped, None
            return LineTooLong(size)
        line = bytes(self._buffer)
        self._buffer = bytearray()
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self._max:
            return LineTooLong(len(line))
        return line


# --------------------------------------------------------------------------- JSON.parse


def parse_json_line(text: str) -> Any:
    """Parse one record as ``JSON.parse`` does, within :data:`MAX_JSON_DEPTH`.

    The work is bounded and mostly in C: orjson first; what it refuses is read by the
    standard library's C parser (numbers beyond a double and lone surrogate escapes, which V8
    accepts); only a refused record of at most :data:`EXACT_ERROR_CHARS` characters is
    rescanned in Python for V8's exact words.

    Raises:
        JsonParseError: for anything ``JSON.parse`` refuses (with V8's message when the
            record is at most :data:`EXACT_ERROR_CHARS` long, else the position and reason
            from the C parser), and for nesting deeper than :data:`MAX_JSON_DEPTH`.
    """
    try:
        return orjson.loads(text)  # refuses nesting deeper than MAX_JSON_DEPTH itself
    except orjson.JSONDecodeError:
        pass
    nesting = _nesting(text)
    if nesting == "deep":
        raise JsonParseError(f"Nesting deeper than {MAX_JSON_DEPTH} levels in JSON")
    refused: ValueError
    if nesting == "unbalanced":
        refused = JsonParseError("Unbalanced brackets in JSON")
    else:
        try:
            with _recursion_headroom(MAX_JSON_DEPTH):
                return json.loads(text, parse_constant=_refuse_constant, parse_int=_js_int)
        except JsonParseError as exc:
            refused = exc
        except json.JSONDecodeError as exc:
            reason = exc.msg.removesuffix(" at")  # "Unterminated string starting at"
            refused = JsonParseError(f"{reason} in JSON at position {exc.pos}", exc.pos)
        except RecursionError:  # pragma: no cover - the bound and the headroom prevent it
            refused = JsonParseError(f"Nesting deeper than {MAX_JSON_DEPTH} levels in JSON")
    if len(text) <= EXACT_ERROR_CHARS:
        _V8Scanner(text).check()  # raises V8's words (it accepts nothing refused here)
    raise refused


def _refuse_constant(name: str) -> Any:
    # Python reads NaN, Infinity and -Infinity; JSON.parse does not.
    raise JsonParseError(f'"{name}" is not valid JSON')


def _js_int(digits: str) -> int | float:
    """An integer literal as a Python value: exact while a double can hold its magnitude
    (``js_number`` rounds it as JavaScript would), else the double, infinity included, as
    ``JSON.parse`` reads it (and never Python's 4,300-digit conversion limit)."""
    return int(digits) if len(digits) <= _EXACT_INT_DIGITS else float(digits)


def _nesting(text: str) -> Literal["ok", "deep", "unbalanced"]:
    """Whether arrays and objects nest deeper than :data:`MAX_JSON_DEPTH` in ``text``
    (brackets inside strings do not count), or do not balance. Linear and in C: the
    brackets outside strings, as arrays (``[[],[[]]]``), are given to orjson, whose own
    nesting limit is :data:`MAX_JSON_DEPTH`."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return "ok"
    outside = "".join(text.replace("\\\\", "").replace('\\"', "").split('"')[::2])
    brackets = _NOT_BRACKET.sub("", outside).translate(_AS_ARRAYS)
    if not brackets:
        return "ok"
    try:
        orjson.loads(brackets.replace("][", "],["))
    except orjson.JSONDecodeError as exc:
        return "deep" if "depth" in str(exc) else "unbalanced"
    return "ok"


@contextlib.contextmanager
def _recursion_headroom(depth: int) -> Iterator[None]:
    """Let the standard library's parser nest ``depth`` levels on this thread's stack.

    Python 3.11's C parser counts its nesting against the interpreter's recursion limit, so
    without this, what parses would depend on how deep the caller's stack is (3.12+ counts
    against a fixed C limit above :data:`MAX_JSON_DEPTH`). The limit is only ever raised,
    and put back.
    """
    previous = sys.getrecursionlimit()
    wanted = _stack_depth() + depth + _RECURSION_MARGIN
    if wanted <= previous:
        yield
        return
    sys.setrecursionlimit(wanted)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def _stack_depth() -> int:
    frame = sys._getframe()
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


_EXACT_INT_DIGITS: Final = 300
"""Digits below which an integer literal's magnitude fits a double (the largest has 309)."""
_RECURSION_MARGIN: Final = 50
"""Frames the standard library's parser and its callers use beside the nesting itself."""
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]+")
_AS_ARRAYS: Final = str.maketrans("{}", "[]")


_WHITESPACE: Final = frozenset((0x20, 0x09, 0x0A, 0x0D))
_DIGITS: Final = frozenset(range(0x30, 0x3A))
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_SIMPLE_ESCAPES: Final = frozenset(b'"\\/bfnrt')
_SPECIAL_SOURCES: Final = ("[object Object]", "undefined", "Infinity", "NaN")
_CONTEXT: Final = 10  # V8's kMaxContextCharacters
_EOS: Final = -1

# V8 token classes of a character (json-parser.h one_char_json_tokens).
_STRING, _NUMBER, _EOS_T, _OTHER = "string", "number", "eos", "other"


class _V8Scanner:
    """V8's JsonParser (v11, Node 20), reduced to finding its first error and its words."""

    def __init__(self, text: str) -> None:
        self.source = text
        raw = text.encode("utf-16-le", "surrogatepass")
        self.units = [raw[i] | raw[i + 1] << 8 for i in range(0, len(raw), 2)]
        self.pos = 0

    # -- characters

    def char(self) -> int:
        return self.units[self.pos] if self.pos < len(self.units) else _EOS

    def next_char(self) -> int:
        self.pos += 1
        return self.char()

    def skip_whitespace(self) -> int:
        while self.char() in _WHITESPACE:
            self.pos += 1
        return self.char()

    # -- errors

    def fail(self, message: str | None = None, char: int | None = None) -> Any:
        c = self.char() if char is None else char
        if message is not None:
            raise JsonParseError(f"{message} at position {self.pos}", self.pos)
        if c == _EOS:
            raise JsonParseError("Unexpected end of JSON input")
        if c in _DIGITS or c == 0x2D:
            raise JsonParseError(f"Unexpected number in JSON at position {self.pos}", self.pos)
        if c == 0x22:
            raise JsonParseError(f"Unexpected string in JSON at position {self.pos}", self.pos)
        if self.source in _SPECIAL_SOURCES:
            raise JsonParseError(f'"{self.source}" is not valid JSON')
        token = _units_text([c])
        length, pos = len(self.units), self.pos
        if length < 2 * _CONTEXT + 1:
            shown = f'"{self.source}"'
        elif pos < _CONTEXT:
            shown = f'"{_units_text(self.units[: pos + _CONTEXT])}"...'
        elif pos < length - _CONTEXT:
            shown = f'..."{_units_text(self.units[pos - _CONTEXT : pos + _CONTEXT])}"...'
        else:
            shown = f'..."{_units_text(self.units[pos - _CONTEXT :])}"'
        raise JsonParseError(f"Unexpected token '{token}', {shown} is not valid JSON", pos)

    def expect(self, wanted: int, message: str | None) -> None:
        if self.skip_whitespace() != wanted:
            self.fail(message)
        self.pos += 1

    # -- grammar

    def check(self) -> None:
        """Raise V8's error for the source, or return if V8 would accept it."""
        stack: list[str] = []  # "object" | "array": the containers the value goes into
        while True:
            # Produce a value.
            c = self.skip_whitespace()
            if c == 0x22:
                self.pos += 1
                self.scan_string()
            elif c in _DIGITS or c == 0x2D:
                self.scan_number()
            elif c == 0x7B:  # {
                self.pos += 1
                if self.skip_whitespace() == 0x7D:
                    self.pos += 1
                else:
                    self.property_key(
                        "Expected property name or '}' in JSON",
                        "Expected ':' after property name in JSON",
                    )
                    stack.append("object")
                    continue
            elif c == 0x5B:  # [
                self.pos += 1
                if self.skip_whitespace() == 0x5D:
                    self.pos += 1
                else:
                    stack.append("array")
                    continue
            elif c == 0x74:
                self.scan_literal("true")
            elif c == 0x66:
                self.scan_literal("false")
            elif c == 0x6E:
                self.scan_literal("null")
            else:
                self.fail()
            # Close containers until one wants another value.
            while True:
                if not stack:
                    if self.skip_whitespace() != _EOS:
                        self.fail("Unexpected non-whitespace character after JSON")
                    return
                if stack[-1] == "object":
                    if self.skip_whitespace() == 0x2C:
                        self.pos += 1
                        self.property_key("Expected double-quoted property name in JSON", None)
                        break
                    self.expect(0x7D, "Expected ',' or '}' after property value in JSON")
                else:
                    if self.skip_whitespace() == 0x2C:
                        self.pos += 1
                        break
                    self.expect(0x5D, "Expected ',' or ']' after array element in JSON")
                stack.pop()

    def property_key(self, message: str, colon_message: str | None) -> None:
        # V8 names the missing colon only after the first key of an object.
        self.expect(0x22, message)
        self.scan_string()
        self.expect(0x3A, colon_message)

    def scan_literal(self, word: str) -> None:
        expected = [ord(ch) for ch in word]
        remaining = len(self.units) - self.pos
        if self.units[self.pos : self.pos + len(expected)] == expected:
            self.pos += len(expected)
            return
        self.pos += 1
        for i in range(min(len(expected) - 1, remaining - 1)):
            if self.char() != expected[1 + i]:
                self.fail()
            self.pos += 1
        self.fail(char=_EOS)

    def scan_string(self) -> None:
        while True:
            c = self.char()
            if c == _EOS:
                self.fail("Unterminated string in JSON")
            if c == 0x22:
                self.pos += 1
                return
            if c == 0x5C:
                c = self.next_char()
                if c == _EOS or c > 0xFF:
                    self.fail()
                if c == 0x75:  # u
                    for _ in range(4):
                        if self.next_char() not in _HEX:
                            self.fail("Bad Unicode escape in JSON")
                elif c not in _SIMPLE_ESCAPES:
                    self.fail("Bad escaped character in JSON")
                self.pos += 1
                continue
            if c < 0x20:
                self.fail("Bad control character in string literal in JSON")
            self.pos += 1

    def scan_number(self) -> None:
        c = self.char()
        if c == 0x2D:
            c = self.next_char()
        if c == 0x30:
            c = self.next_char()
            if c in _DIGITS:
                self.fail()
        else:
            if c not in _DIGITS:
                self.fail("No number after minus sign in JSON")
            while self.char() in _DIGITS:
                self.pos += 1
        if self.char() == 0x2E:  # .
            if self.next_char() not in _DIGITS:
                self.fail("Unterminated fractional number in JSON")
            while self.char() in _DIGITS:
                self.pos += 1
        if self.char() in (0x65, 0x45):  # e E
            c = self.next_char()
            if c in (0x2B, 0x2D):
                c = self.next_char()
            if c not in _DIGITS:
                self.fail("Exponent part is missing a number in JSON")
            while self.char() in _DIGITS:
                self.pos += 1


def _units_text(units: list[int]) -> str:
    """UTF-16 code units back to a str (a split surrogate pair stays a lone surrogate)."""
    raw = b"".join(u.to_bytes(2, "little") for u in units)
    return raw.decode("utf-16-le", "surrogatepass")


# --------------------------------------------------------------------------- JSON.stringify


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_ARRAY_INDEX: Final = re.compile(r"0|[1-9][0-9]*")
_MAX_ARRAY_INDEX: Final = 2**32 - 2
_SAFE_INTEGER: Final = 2**53


def js_number(value: int | float) -> str:
    """JavaScript's ``String(n)`` for the double nearest ``value`` (``null`` for infinities,
    as ``JSON.stringify`` writes them)."""
    if isinstance(value, int) and abs(value) < _SAFE_INTEGER:
        return str(value)
    try:
        number = float(value)
    except OverflowError:  # an int beyond a double: JavaScript's Infinity
        number = float("inf") if value > 0 else float("-inf")
    if number != number or number in (float("inf"), float("-inf")):
        return "null"
    if number == 0:
        return "0"
    sign, digits_tuple, exponent = Decimal(repr(number)).as_tuple()
    digits = "".join(map(str, digits_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    # value = 0.digits * 10^n
    n = len("".join(map(str, digits_tuple))) + exponent
    k = len(digits)
    prefix = "-" if sign else ""
    if k <= n <= 21:
        return prefix + digits + "0" * (n - k)
    if 0 < n <= 21:
        return prefix + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return prefix + "0." + "0" * (-n) + digits
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    e = n - 1
    return f"{prefix}{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def _js_str(value: str) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        # A lone surrogate (from a \\ud800 escape): JSON.stringify escapes it.
        text = json.dumps(value, ensure_ascii=False)
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _key_order(obj: dict[str, Any]) -> list[str]:
    # JavaScript objects list array-index keys first, ascending, then the others in order.
    indexes = [k for k in obj if _ARRAY_INDEX.fullmatch(k) and int(k) <= _MAX_ARRAY_INDEX]
    indexes.sort(key=int)
    return indexes + [k for k in obj if k not in set(indexes)]


def js_json(value: Any) -> str:
    """``JSON.stringify(value)`` for a value ``JSON.parse`` produced (see the module docstring)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _js_str(value)
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, list):
        return "[" + ",".join(js_json(item) for item in value) + "]"
    if isinstance(value, dict):
        parts = (f"{_js_str(k)}:{js_json(value[k])}" for k in _key_order(value))
        return "{" + ",".join(parts) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def js_string(value: Any) -> str:
    """JavaScript's ``String(value)`` for a parsed JSON value (``[object Object]`` ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        number = js_number(value)
        if number == "null":
            return "Infinity" if value > 0 else "-Infinity"
        return number
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"
