"""Prompt-template argument splitting and substitution equal pi 0.73.1's (templates.json)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_resources import load

from pitrio.sessions.resources import (
    PromptTemplate,
    expand_prompt_template,
    parse_command_args,
    substitute_args,
)

CAPTURE = load("templates.json")
TEMPLATES = [
    PromptTemplate(name=t["name"], description="", content=t["content"], file_path="/x.md")
    for t in CAPTURE["templates"]
]


@pytest.mark.parametrize(
    "case", CAPTURE["substitutions"], ids=lambda c: f"{c['template']!r}|{c['argString']!r}"
)
def test_substitution_equals_pi(case: dict[str, object]) -> None:
    """``$1``, ``$@``, ``$ARGUMENTS``, ``${@:N}``, ``${@:N:L}`` give pi's text for pi's args."""
    args = parse_command_args(str(case["argString"]))
    assert args == case["args"]
    assert substitute_args(str(case["template"]), args) == case["result"]


@pytest.mark.parametrize("case", CAPTURE["expansions"], ids=lambda c: repr(c["text"]))
def test_expansion_equals_pi(case: dict[str, str]) -> None:
    """``/name args`` expands only for a known template name at the very start."""
    assert expand_prompt_template(case["text"], TEMPLATES) == case["result"]


def test_js_replacement_patterns_in_arguments() -> None:
    """Arguments with ``$$`` or ``$&`` expand as in JavaScript's String.replace, as in pi."""
    assert substitute_args("[$@]", ["a$$b"]) == "[a$b]"
    assert substitute_args("x $ARGUMENTS y", ["<$&>"]) == "x <$ARGUMENTS> y"
    assert substitute_args("x $ARGUMENTS y", ["$`|$'"]) == "x x | y y"


@given(st.lists(st.text(alphabet="ab $", max_size=4), max_size=5))
def test_positional_arguments_are_not_substituted_again(args: list[str]) -> None:
    """A positional argument's text is placed as it is, even when it looks like ``$2``."""
    words = [a for a in args if a and "$" not in a]
    template = " ".join(f"${i + 1}" for i in range(len(words)))
    assert substitute_args(template, words) == " ".join(words)
