"""YAML frontmatter of skills and prompt templates (pi 0.73.1 ``utils/frontmatter.ts``).

A file starts with ``---``; the frontmatter runs to the next line that starts with ``---`` and the
body is what follows, trimmed. pi parses the frontmatter with the ``yaml`` package (YAML 1.2, core
schema), so ``yes``, ``on`` and dates stay strings and ``010`` is ten; the loader below gives
PyYAML those rules instead of its YAML 1.1 ones.
"""

from __future__ import annotations

import re
from typing import Any, Final

import attrs
import yaml

_NEWLINES: Final = re.compile(r"\r\n|\r")


class _CoreSchemaLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the YAML 1.2 core schema's implicit types."""


_CoreSchemaLoader.yaml_implicit_resolvers = {}
_IMPLICIT: Final = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    (
        "tag:yaml.org,2002:int",
        r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$",
        "-+0123456789",
    ),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
)
for _tag, _pattern, _first in _IMPLICIT:
    _CoreSchemaLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)  # YAML 1.2: a leading zero is still decimal


def _construct_float(loader: yaml.SafeLoader, node: yaml.Node) -> float | int:
    text = str(loader.construct_scalar(node)).lower()  # type: ignore[arg-type]
    value = float(text.replace(".inf", "inf").replace(".nan", "nan"))
    # JavaScript has one number type: 1e3 is the integer 1000 there.
    return int(value) if value.is_integer() and "inf" not in text else value


_CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_CoreSchemaLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


@attrs.frozen
class Frontmatter:
    """A parsed markdown file: its frontmatter mapping and its body."""

    data: dict[str, Any]
    body: str


def _split(content: str) -> tuple[str | None, str]:
    normalized = _NEWLINES.sub("\n", content)
    if not normalized.startswith("---"):
        return None, normalized
    end = normalized.find("\n---", 3)
    if end == -1:
        return None, normalized
    return normalized[4:end], normalized[end + 4 :].strip()


def parse_frontmatter(content: str) -> Frontmatter:
    """Split ``content`` into frontmatter and body as pi does.

    Raises:
        yaml.YAMLError: the frontmatter is not valid YAML (pi's loaders turn that into a
            warning diagnostic for the file).
    """
    raw, body = _split(content)
    if not raw:
        return Frontmatter({}, body)
    # pi's yaml package ends a block scalar that runs to the end with a line break, as if the
    # frontmatter ended with one; PyYAML needs the break to be there.
    parsed = yaml.load(raw + "\n", Loader=_CoreSchemaLoader)
    if not isinstance(parsed, dict):
        # pi spreads whatever the YAML gave; a scalar or list has no usable keys.
        return Frontmatter({}, body)
    return Frontmatter({str(k) if k is not None else "": v for k, v in parsed.items()}, body)


def strip_frontmatter(content: str) -> str:
    """The body of a markdown file without its frontmatter."""
    return parse_frontmatter(content).body
