"""Prompt templates: ``/name args`` expands a markdown file with ``$1``, ``$@`` and friends.

Ported from pi 0.73.1 ``core/prompt-templates.ts`` (argument splitting, substitution, loading)
and the prompt half of ``core/package-manager.ts`` (which folders are searched). A template is
``<name>.md``; its frontmatter may give ``description`` and ``argument-hint``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Final

import attrs
import yaml

from pitrio.sessions.resources._diagnostics import ResourceCollision, ResourceDiagnostic
from pitrio.sessions.resources._frontmatter import parse_frontmatter
from pitrio.sessions.resources._ignore import IgnoreRules, list_dir, relative_posix
from pitrio.sessions.resources._skills import expand_home

DESCRIPTION_FROM_BODY_CHARS: Final = 60
"""Without a ``description``, the first non-empty body line is used, cut to this many chars."""

_POSITIONAL: Final = re.compile(r"\$(\d+)")
_SLICE: Final = re.compile(r"\$\{@:(\d+)(?::(\d+))?\}")


@attrs.frozen(kw_only=True)
class PromptTemplate:
    """A loaded prompt template (pi's ``PromptTemplate``)."""

    name: str
    description: str
    content: str
    """The body after the frontmatter, trimmed when there was frontmatter."""
    file_path: str
    argument_hint: str | None = None


def parse_command_args(args: str) -> list[str]:
    """Split ``args`` as pi does: on spaces and tabs, with '...' and "..." grouping.

    There is no escaping; an unclosed quote runs to the end; an empty quoted string adds no
    argument.
    """
    result: list[str] = []
    current = ""
    quote: str | None = None
    for char in args:
        if quote is not None:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char in " \t":
            if current:
                result.append(current)
                current = ""
        else:
            current += char
    if current:
        result.append(current)
    return result


def substitute_args(content: str, args: Sequence[str]) -> str:
    """Fill a template's placeholders from ``args`` (pi's ``substituteArgs``).

    ``$1``, ``$2`` ... are positional (missing ones become ''); ``${@:N}`` is the arguments from
    the N-th on and ``${@:N:L}`` L of them (N = 0 counts as 1); ``$ARGUMENTS`` and ``$@`` are all
    of them joined with spaces. The passes run in that order over the text so far, so an
    argument containing ``$1`` stays as it is while one containing ``$@`` is expanded by the
    later passes, exactly as in pi.
    """

    def positional(match: re.Match[str]) -> str:
        index = int(match.group(1)) - 1
        return args[index] if 0 <= index < len(args) else ""

    def sliced(match: re.Match[str]) -> str:
        start = max(int(match.group(1)) - 1, 0)
        if match.group(2) is not None:
            return " ".join(args[start : start + int(match.group(2))])
        return " ".join(args[start:])

    result = _POSITIONAL.sub(positional, content)
    result = _SLICE.sub(sliced, result)
    joined = " ".join(args)
    result = _js_replace_all(result, "$ARGUMENTS", joined)
    return _js_replace_all(result, "$@", joined)


_JS_REPLACEMENT_TOKEN: Final = re.compile(r"\$([$&`'])")


def _js_replace_all(text: str, needle: str, replacement: str) -> str:
    # pi passes the joined arguments to String.replace as a replacement *string*, where $$, $&,
    # $` and $' are patterns; an argument containing them expands the same way here.
    if "$" not in replacement:
        return text.replace(needle, replacement)
    pattern = re.compile(re.escape(needle))

    def expand(match: re.Match[str]) -> str:
        def token(t: re.Match[str]) -> str:
            kind = t.group(1)
            if kind == "$":
                return "$"
            if kind == "&":
                return match.group(0)
            if kind == "`":
                return text[: match.start()]
            return text[match.end() :]

        return _JS_REPLACEMENT_TOKEN.sub(token, replacement)

    return pattern.sub(expand, text)


def expand_prompt_template(text: str, templates: Iterable[PromptTemplate]) -> str:
    """Expand ``/name args`` with the template called ``name``; other text is unchanged."""
    if not text.startswith("/"):
        return text
    space = text.find(" ")
    name = text[1:] if space == -1 else text[1:space]
    args = "" if space == -1 else text[space + 1 :]
    template = next((t for t in templates if t.name == name), None)
    if template is None:
        return text
    return substitute_args(template.content, parse_command_args(args))


def load_template_from_file(file_path: str) -> PromptTemplate | None:
    """Load one template; ``None`` if it cannot be read or parsed (pi skips it silently)."""
    try:
        with open(file_path, encoding="utf-8", errors="replace") as file:
            parsed = parse_frontmatter(file.read())
    except (OSError, yaml.YAMLError):
        return None
    name = os.path.basename(file_path)
    name = name[: -len(".md")] if name.endswith(".md") else name
    raw_description = parsed.data.get("description")
    description = str(raw_description) if raw_description else ""
    if not description:
        first = next((line for line in parsed.body.split("\n") if line.strip()), None)
        if first:
            description = first[:DESCRIPTION_FROM_BODY_CHARS]
            if len(first) > DESCRIPTION_FROM_BODY_CHARS:
                description += "..."
    hint = parsed.data.get("argument-hint")
    return PromptTemplate(
        name=name,
        description=description,
        content=parsed.body,
        file_path=file_path,
        argument_hint=str(hint) if hint else None,
    )


def load_templates_from_dir(directory: str) -> list[PromptTemplate]:
    """The ``.md`` files directly in ``directory`` as templates (not recursive)."""
    templates = []
    for entry in list_dir(directory):
        if entry.is_file and entry.name.endswith(".md"):
            template = load_template_from_file(entry.path)
            if template is not None:
                templates.append(template)
    return templates


def collect_prompt_entries(directory: str) -> list[str]:
    """The template files auto-discovery finds in ``directory`` (not hidden, not ignored)."""
    if not os.path.exists(directory):
        return []
    rules = IgnoreRules()
    rules.add_dir(directory, directory)
    return [
        entry.path
        for entry in list_dir(directory)
        if not entry.name.startswith(".")
        and entry.name != "node_modules"
        and not rules.ignores(relative_posix(entry.path, directory))
        and entry.is_file
        and entry.name.endswith(".md")
    ]


def load_prompt_templates(prompt_paths: Iterable[str], *, cwd: str) -> list[PromptTemplate]:
    """Load templates from files and folders in order; missing paths are skipped."""
    templates: list[PromptTemplate] = []
    for raw in prompt_paths:
        path = os.path.abspath(os.path.join(cwd, expand_home(raw)))
        if os.path.isdir(path):
            templates.extend(load_templates_from_dir(path))
        elif os.path.isfile(path) and path.endswith(".md"):
            template = load_template_from_file(path)
            if template is not None:
                templates.append(template)
    return templates


def dedupe_prompts(
    templates: Iterable[PromptTemplate],
) -> tuple[list[PromptTemplate], list[ResourceDiagnostic]]:
    """Keep the first template of each name; report the others as collisions."""
    seen: dict[str, PromptTemplate] = {}
    diagnostics: list[ResourceDiagnostic] = []
    for template in templates:
        existing = seen.get(template.name)
        if existing is None:
            seen[template.name] = template
            continue
        diagnostics.append(
            ResourceDiagnostic(
                type="collision",
                message=f'name "/{template.name}" collision',
                path=template.file_path,
                collision=ResourceCollision(
                    resource_type="prompt",
                    name=template.name,
                    winner_path=existing.file_path,
                    loser_path=template.file_path,
                ),
            )
        )
    return list(seen.values()), diagnostics
