"""pitrio's ``JSON.parse`` stand-in (``pitrio/host/rpc/_jsonl.py``) answers as V8 does.

pi puts V8's own ``JSON.parse`` message into its ``parse`` error (``Failed to parse command:
Unexpected token 'a', "abc" is not valid JSON``), and echoes parsed values with
``JSON.stringify``. These tests run node once on a few hundred seeded malformed (and some
valid) lines and compare, line by line, V8's message, or its ``JSON.stringify`` and
``String()`` of the value, with pitrio's. Node is required: without it the test fails.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from typing import Any

import pytest

from pitrio.host import LineSplitter, LineTooLong
from pitrio.host.rpc._jsonl import (
    EXACT_ERROR_CHARS,
    MAX_JSON_DEPTH,
    JsonParseError,
    js_json,
    js_string,
    parse_json_line,
)

SEED = 20250514
RANDOM_LINES = 600
NODE_TIMEOUT = 60
"""Seconds node may take at most for all lines (it takes well under one; this stops a hang)."""

ALPHABET = [
    *'{}[]:,"\\ \t\r-+.eE0123456789truefalsnuabcxyz',
    "\u2028",
    "é",
    "😀",
    "\x00",
    "\x1f",
    "NaN",
    "Infinity",
    "u12",
    "u00e9",
    "ud83d",
]
BASES = [
    '{"type":"get_state","id":"x"}',
    '{"a":[1,2,{"b":null}],"c":"d\\n"}',
    "[1.5e10, -0, true]",
    '"str"',
    '{"id":1e21}',
    '{"type":"prompt","message":"' + "a long message that V8 shortens in its error " * 2 + '"}',
    '{"type":"steer","message":"😀 é \\u2028 \\ud83d\\ude00","images":[]}',
    '{"1":1,"b":2,"0":0,"-1":-1,"01":1}',
]
FIXED = [
    "",
    " ",
    "NaN",
    "undefined",
    "[object Object]",
    "Infinity",
    '"\\ud800"',
    "12345678901234567890",
    "1e400",
    "-1e-400",
    "0.1",
    "[-0]",
    "1.0",
    "{",
    '{"a":1,}',
    "[1,]",
    "tru",
    '"\x01"',
    "nul",
    "01",
    "-",
    "1.",
    ".5",
    "1e",
    '"\\x"',
    "[] []",
    '{"id":' + "9" * 400 + "}",
    '{"id":-' + "9" * 400 + "}",
    "9" * 5000,
    "[" + "1" * 309 + "," + "1" * 308 + "]",
]
"""Hand-picked lines: V8's messages for empty input, bad literals, numbers (integers beyond a
double's range too: V8 reads Infinity, JSON.stringify writes null) and escapes."""

NODE_SCRIPT = r"""
const lines = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = lines.map((line) => {
  try {
    const value = JSON.parse(line);
    const plain = value !== null && typeof value === "object" && !Array.isArray(value);
    return { ok: JSON.stringify(value), str: plain ? null : String(value) };
  } catch (error) {
    return { err: error.message };
  }
});
process.stdout.write(JSON.stringify(out));
"""


def malformed_lines(seed: int, count: int) -> list[str]:
    """``count`` lines: random runs of JSON-ish characters, and mutated valid records."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        if rng.random() < 0.5:
            lines.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 30))))
            continue
        chars = list(rng.choice(BASES))
        for _ in range(rng.randint(1, 3)):
            op = rng.random()
            i = rng.randrange(len(chars) + 1)
            if op < 0.4 and chars:
                del chars[min(i, len(chars) - 1)]
            elif op < 0.8:
                chars.insert(i, rng.choice(ALPHABET))
            else:
                chars = chars[:i]
        lines.append("".join(chars))
    return lines


def pitrio_view(line: str) -> dict[str, Any]:
    """What pitrio makes of ``line``, in the node script's shape."""
    try:
        value = parse_json_line(line)
    except JsonParseError as exc:
        return {"err": exc.message}
    return {"ok": js_json(value), "str": None if isinstance(value, dict) else js_string(value)}


def node_view(lines: list[str]) -> list[dict[str, Any]]:
    """What V8 makes of each line (one node process for all of them)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: this test compares with V8's JSON.parse (Node.js 20+)")
    run = subprocess.run(
        [node, "-e", NODE_SCRIPT],
        input=json.dumps(lines),
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT,
        check=True,
    )
    result: list[dict[str, Any]] = json.loads(run.stdout)
    return result


def test_parse_errors_and_values_read_as_v8s() -> None:
    """For hundreds of seeded malformed lines, pitrio's error message (or its JSON.stringify
    and String() of the value) equals V8's."""
    lines = FIXED + BASES + malformed_lines(SEED, RANDOM_LINES)
    expected = node_view(lines)
    assert len(expected) == len(lines)
    mismatches = [
        f"{line!r}\n    node:   {theirs}\n    pitrio: {ours}"
        for line, theirs in zip(lines, expected, strict=True)
        if (ours := pitrio_view(line)) != theirs
    ]
    assert sum("err" in answer for answer in expected) > RANDOM_LINES // 2
    assert mismatches == [], f"{len(mismatches)} of {len(lines)} differ:\n" + "\n".join(
        mismatches[:20]
    )


def test_splitter_frames_on_lf_only() -> None:
    """Records end at LF only (one trailing CR dropped, U+2028 and a lone CR kept), across
    chunk borders, and an over-long record is skipped up to its LF and reported with its size."""
    splitter = LineSplitter(max_line=16)
    records = [
        *splitter.feed(b'{"a":"\xe2\x80\xa8"}\r'),
        *splitter.feed(b"\n1\r2"),
        *splitter.feed(b"3\r\r\n"),
        *splitter.feed(b"0123456789abcdef"),
        *splitter.feed(b"ghij\nok\n"),
        *splitter.feed(b"tail"),
        *splitter.end(),
    ]
    assert records == [
        b'{"a":"\xe2\x80\xa8"}',
        b"1\r23\r",
        LineTooLong(20),
        b"ok",
        b"tail",
    ]


def _deep(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def _innermost(value: Any) -> tuple[int, Any]:
    """How deep ``value``'s first-element chain of arrays nests, and what ends it."""
    depth = 0
    while isinstance(value, list):
        depth, value = depth + 1, value[0]
    return depth, value


def test_nesting_up_to_the_bound_parses() -> None:
    """Arrays and objects nested :data:`MAX_JSON_DEPTH` deep parse, whichever parser reads them
    (what orjson refuses, a lone surrogate escape or a number beyond a double, is read by
    another parser, under the same bound), and brackets inside strings do not count."""
    assert _innermost(parse_json_line(_deep(MAX_JSON_DEPTH))) == (MAX_JSON_DEPTH, 1)
    line = '{"a":"\\ud800","b":' + _deep(MAX_JSON_DEPTH - 1, "1e400") + "}"
    value = parse_json_line(line)
    assert value["a"] == "\ud800"
    assert _innermost(value["b"]) == (MAX_JSON_DEPTH - 1, float("inf"))
    value = parse_json_line('{"s":"' + "[" * 2000 + '\\"[[","n":' + "9" * 400 + "}")
    assert value == {"s": "[" * 2000 + '"[[', "n": float("inf")}


@pytest.mark.parametrize(
    "line",
    [
        _deep(MAX_JSON_DEPTH + 1),
        '{"a":"\\ud800","b":' + _deep(MAX_JSON_DEPTH, "1e400") + "}",
        "[" * 1_000_000,
        '{"type":"x","v":' + '{"k":' * 600 + "[" * 600 + "]" * 600 + "}" * 600 + "}",
    ],
)
def test_nesting_beyond_the_bound_is_malformed_on_every_interpreter(line: str) -> None:
    """One level deeper than :data:`MAX_JSON_DEPTH` is refused with the bound named, however
    deep the interpreter's own parser could go (3.11 and 3.13 differ)."""
    with pytest.raises(JsonParseError) as refused:
        parse_json_line(line)
    assert refused.value.message == f"Nesting deeper than {MAX_JSON_DEPTH} levels in JSON"


def test_integers_beyond_a_double_read_as_javascript_infinity() -> None:
    """A 400-digit (or 5,000-digit) integer is JavaScript's Infinity: echoed as ``null`` by
    JSON.stringify, ``Infinity`` by String() (Python's own int would overflow a float)."""
    for digits in (400, 5000):
        value = parse_json_line('{"id":' + "9" * digits + ',"neg":-' + "9" * digits + "}")
        assert js_json(value) == '{"id":null,"neg":null}'
        assert (js_string(value["id"]), js_string(value["neg"])) == ("Infinity", "-Infinity")
    assert js_json(10**400) == "null"


def test_a_long_refused_record_is_answered_without_the_v8_rescan() -> None:
    """Past :data:`EXACT_ERROR_CHARS`, a refused record's error is the C parser's reason and
    position (cheap); at most that long, V8's exact words."""
    body = '{"type":"prompt","message":"' + "x" * (EXACT_ERROR_CHARS + 1) + '"'
    with pytest.raises(JsonParseError) as long_one:
        parse_json_line(body)
    assert long_one.value.message == f"Expecting ',' delimiter in JSON at position {len(body)}"
    short = '{"type":"prompt","message":"' + "x" * 100 + '"'
    with pytest.raises(JsonParseError) as short_one:
        parse_json_line(short)
    assert short_one.value.message == (
        f"Expected ',' or '}}' after property value in JSON at position {len(short)}"
    )
