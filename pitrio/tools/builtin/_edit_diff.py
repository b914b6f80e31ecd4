"""Text matching and the diff of the ``edit`` tool (pi 0.73.1 ``core/tools/edit-diff.ts``).

Matching is exact first; when an ``oldText`` is not found verbatim, both sides are compared in
a normalised form (NFKC, trailing whitespace per line dropped, typographic quotes, dashes and
spaces made ASCII), and then the whole edit is applied in that normalised form, as pi does.

:func:`diff_lines` is a port of jsdiff 8's ``diffLines`` (the Myers algorithm with jsdiff's
choices between equally short scripts), so the diff in ``details`` is line for line pi's.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from typing import Final

import attrs

from pitrio.tools.builtin._errors import FileToolError

# ECMAScript's WhiteSpace and LineTerminator, what String.prototype.trimEnd removes; Python's
# str.rstrip differs (it keeps U+FEFF and strips U+001C..U+001F and U+0085).
_JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_SINGLE_QUOTES: Final = re.compile("[\u2018\u2019\u201a\u201b]")
_DOUBLE_QUOTES: Final = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES: Final = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES: Final = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")
_LINE_SPLIT: Final = re.compile(r"(\n|\r\n)")


def detect_line_ending(content: str) -> str:
    """Return ``"\\r\\n"`` if the first line break of ``content`` is CRLF, else ``"\\n"``."""
    lf = content.find("\n")
    if lf == -1:
        return "\n"
    crlf = content.find("\r\n")
    if crlf == -1:
        return "\n"
    return "\r\n" if crlf < lf else "\n"


def normalize_to_lf(text: str) -> str:
    """Turn CRLF and lone CR line breaks into LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def restore_line_endings(text: str, ending: str) -> str:
    """Turn LF back into ``ending``."""
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


def normalize_for_fuzzy_match(text: str) -> str:
    """Return the form in which an ``oldText`` that does not match exactly is looked for."""
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip(_JS_WHITESPACE) for line in text.split("\n"))
    text = _SINGLE_QUOTES.sub("'", text)
    text = _DOUBLE_QUOTES.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


@attrs.frozen(kw_only=True)
class FuzzyMatch:
    """Where :func:`fuzzy_find_text` found an ``oldText``."""

    found: bool
    index: int
    match_length: int
    used_fuzzy_match: bool
    content_for_replacement: str
    """``content`` itself after an exact match, its normalised form after a fuzzy one."""


def fuzzy_find_text(content: str, old_text: str) -> FuzzyMatch:
    """Find ``old_text`` in ``content``: exactly, else in the normalised forms of both."""
    index = content.find(old_text)
    if index != -1:
        return FuzzyMatch(
            found=True,
            index=index,
            match_length=len(old_text),
            used_fuzzy_match=False,
            content_for_replacement=content,
        )
    fuzzy_content = normalize_for_fuzzy_match(content)
    fuzzy_old = normalize_for_fuzzy_match(old_text)
    index = fuzzy_content.find(fuzzy_old)
    if index == -1:
        return FuzzyMatch(
            found=False,
            index=-1,
            match_length=0,
            used_fuzzy_match=False,
            content_for_replacement=content,
        )
    return FuzzyMatch(
        found=True,
        index=index,
        match_length=len(fuzzy_old),
        used_fuzzy_match=True,
        content_for_replacement=fuzzy_content,
    )


def strip_bom(content: str) -> tuple[str, str]:
    """Split a leading U+FEFF from ``content``: return ``(bom, text)``."""
    if content.startswith("\ufeff"):
        return "\ufeff", content[1:]
    return "", content


@attrs.frozen
class Replacement:
    """One ``edits[]`` entry: replace ``old_text`` by ``new_text``."""

    old_text: str
    new_text: str


def _edit_error(message: str, path: str) -> FileToolError:
    return FileToolError(message, tool_name="edit", path=path)


def _count_occurrences(content: str, old_text: str) -> int:
    return normalize_for_fuzzy_match(content).count(normalize_for_fuzzy_match(old_text))


def apply_edits_to_normalized_content(
    normalized_content: str, edits: Sequence[Replacement], path: str
) -> tuple[str, str]:
    """Apply every edit to LF-normalised content, each matched against the original.

    If any edit needs the fuzzy match, all of them are applied to the normalised content.

    Returns:
        ``(base_content, new_content)``: the content the edits were matched in and the result.

    Raises:
        FileToolError: an ``oldText`` is empty, missing, not unique, overlaps another, or the
            edits change nothing; the message is pi's.
    """
    normalized = [
        Replacement(normalize_to_lf(edit.old_text), normalize_to_lf(edit.new_text))
        for edit in edits
    ]
    total = len(normalized)
    for index, edit in enumerate(normalized):
        if not edit.old_text:
            if total == 1:
                raise _edit_error(f"oldText must not be empty in {path}.", path)
            raise _edit_error(f"edits[{index}].oldText must not be empty in {path}.", path)

    if any(fuzzy_find_text(normalized_content, e.old_text).used_fuzzy_match for e in normalized):
        base_content = normalize_for_fuzzy_match(normalized_content)
    else:
        base_content = normalized_content

    matched: list[tuple[int, int, int, str]] = []  # (match index, length, edit index, new text)
    for index, edit in enumerate(normalized):
        match = fuzzy_find_text(base_content, edit.old_text)
        if not match.found:
            if total == 1:
                raise _edit_error(
                    f"Could not find the exact text in {path}. The old text must match exactly "
                    "including all whitespace and newlines.",
                    path,
                )
            raise _edit_error(
                f"Could not find edits[{index}] in {path}. The oldText must match exactly "
                "including all whitespace and newlines.",
                path,
            )
        occurrences = _count_occurrences(base_content, edit.old_text)
        if occurrences > 1:
            if total == 1:
                raise _edit_error(
                    f"Found {occurrences} occurrences of the text in {path}. The text must be "
                    "unique. Please provide more context to make it unique.",
                    path,
                )
            raise _edit_error(
                f"Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText "
                "must be unique. Please provide more context to make it unique.",
                path,
            )
        matched.append((match.index, match.match_length, index, edit.new_text))

    matched.sort(key=lambda m: m[0])  # stable, as Array.prototype.sort
    for previous, current in itertools.pairwise(matched):
        if previous[0] + previous[1] > current[0]:
            raise _edit_error(
                f"edits[{previous[2]}] and edits[{current[2]}] overlap in {path}. Merge them "
                "into one edit or target disjoint regions.",
                path,
            )

    new_content = base_content
    for start, length, _, new_text in reversed(matched):
        new_content = new_content[:start] + new_text + new_content[start + length :]
    if new_content == base_content:
        if total == 1:
            raise _edit_error(
                f"No changes made to {path}. The replacement produced identical content. This "
                "might indicate an issue with special characters or the text not existing as "
                "expected.",
                path,
            )
        raise _edit_error(
            f"No changes made to {path}. The replacements produced identical content.", path
        )
    return base_content, new_content


# --- jsdiff diffLines --------------------------------------------------------------------


@attrs.define(slots=True)
class _Component:
    count: int
    added: bool
    removed: bool
    previous: _Component | None


@attrs.define(slots=True)
class _Path:
    old_pos: int
    last: _Component | None


@attrs.frozen
class DiffPart:
    """One run of :func:`diff_lines`: lines kept, added or removed, newlines included."""

    value: str
    added: bool
    removed: bool
    count: int


def _tokenize_lines(value: str) -> list[str]:
    pieces = _LINE_SPLIT.split(value)
    if not pieces[-1]:
        pieces.pop()
    lines: list[str] = []
    for index, piece in enumerate(pieces):
        if index % 2:
            lines[-1] += piece
        else:
            lines.append(piece)
    return [line for line in lines if line]


def _add_to_path(path: _Path, added: bool, removed: bool, old_inc: int) -> _Path:
    last = path.last
    if last is not None and last.added == added and last.removed == removed:
        return _Path(
            path.old_pos + old_inc, _Component(last.count + 1, added, removed, last.previous)
        )
    return _Path(path.old_pos + old_inc, _Component(1, added, removed, last))


def _extract_common(path: _Path, new: list[str], old: list[str], diagonal: int) -> int:
    old_pos = path.old_pos
    new_pos = old_pos - diagonal
    common = 0
    while (
        new_pos + 1 < len(new) and old_pos + 1 < len(old) and old[old_pos + 1] == new[new_pos + 1]
    ):
        new_pos += 1
        old_pos += 1
        common += 1
    if common:
        path.last = _Component(common, False, False, path.last)
    path.old_pos = old_pos
    return new_pos


def _build_values(last: _Component | None, new: list[str], old: list[str]) -> list[DiffPart]:
    components: list[_Component] = []
    while last is not None:
        components.append(last)
        last = last.previous
    components.reverse()
    parts: list[DiffPart] = []
    new_pos = old_pos = 0
    for component in components:
        if not component.removed:
            value = "".join(new[new_pos : new_pos + component.count])
            new_pos += component.count
            if not component.added:
                old_pos += component.count
        else:
            value = "".join(old[old_pos : old_pos + component.count])
            old_pos += component.count
        parts.append(DiffPart(value, component.added, component.removed, component.count))
    return parts


def diff_lines(old_text: str, new_text: str) -> list[DiffPart]:
    """Diff two texts line by line as jsdiff 8's ``diffLines`` does (no options)."""
    old = _tokenize_lines(old_text)
    new = _tokenize_lines(new_text)
    old_len, new_len = len(old), len(new)
    best: dict[int, _Path | None] = {0: _Path(-1, None)}
    first = best[0]
    assert first is not None
    new_pos = _extract_common(first, new, old, 0)
    if first.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
        return _build_values(first.last, new, old)

    min_diagonal = -(old_len + new_len + 1)
    max_diagonal = old_len + new_len + 1
    for edit_length in range(1, old_len + new_len + 1):
        for diagonal in range(
            max(min_diagonal, -edit_length), min(max_diagonal, edit_length) + 1, 2
        ):
            remove_path = best.get(diagonal - 1)
            add_path = best.get(diagonal + 1)
            if remove_path is not None:
                best[diagonal - 1] = None
            can_add = add_path is not None and 0 <= add_path.old_pos - diagonal < new_len
            can_remove = remove_path is not None and remove_path.old_pos + 1 < old_len
            if not can_add and not can_remove:
                best[diagonal] = None
                continue
            if not can_remove or (
                can_add
                and remove_path is not None
                and add_path is not None
                and remove_path.old_pos < add_path.old_pos
            ):
                assert add_path is not None
                base = _add_to_path(add_path, True, False, 0)
            else:
                assert remove_path is not None
                base = _add_to_path(remove_path, False, True, 1)
            new_pos = _extract_common(base, new, old, diagonal)
            if base.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
                return _build_values(base.last, new, old)
            best[diagonal] = base
            if base.old_pos + 1 >= old_len:
                max_diagonal = min(max_diagonal, diagonal - 1)
            if new_pos + 1 >= new_len:
                min_diagonal = max(min_diagonal, diagonal + 1)
    raise AssertionError("unreachable: an edit script of length old+new always exists")


@attrs.frozen
class DiffString:
    """The ``details`` of a successful edit."""

    diff: str
    """Changed lines with ``+``/``-``, up to 4 lines of context, ``...`` for skipped lines."""
    first_changed_line: int | None
    """Line number in the new file of the first change (``None`` if nothing changed)."""


def generate_diff_string(old_content: str, new_content: str, context_lines: int = 4) -> DiffString:
    """Render pi's numbered diff of two texts (``generateDiffString``)."""
    parts = diff_lines(old_content, new_content)
    output: list[str] = []
    width = len(str(max(len(old_content.split("\n")), len(new_content.split("\n")))))
    blank = " " * width
    old_line = new_line = 1
    last_was_change = False
    first_changed: int | None = None

    def context(line: str) -> None:
        nonlocal old_line, new_line
        output.append(f" {str(old_line).rjust(width)} {line}")
        old_line += 1
        new_line += 1

    def skip(count: int) -> None:
        nonlocal old_line, new_line
        output.append(f" {blank} ...")
        old_line += count
        new_line += count

    for index, part in enumerate(parts):
        raw = part.value.split("\n")
        if raw[-1] == "":
            raw.pop()
        if part.added or part.removed:
            if first_changed is None:
                first_changed = new_line
            for line in raw:
                if part.added:
                    output.append(f"+{str(new_line).rjust(width)} {line}")
                    new_line += 1
                else:
                    output.append(f"-{str(old_line).rjust(width)} {line}")
                    old_line += 1
            last_was_change = True
            continue
        next_is_change = index < len(parts) - 1 and (
            parts[index + 1].added or parts[index + 1].removed
        )
        if last_was_change and next_is_change:
            if len(raw) <= context_lines * 2:
                for line in raw:
                    context(line)
            else:
                leading = raw[:context_lines]
                trailing = raw[len(raw) - context_lines :]
                for line in leading:
                    context(line)
                skip(len(raw) - len(leading) - len(trailing))
                for line in trailing:
                    context(line)
        elif last_was_change:
            shown = raw[:context_lines]
            for line in shown:
                context(line)
            if len(raw) > len(shown):
                skip(len(raw) - len(shown))
        elif next_is_change:
            skipped = max(0, len(raw) - context_lines)
            if skipped > 0:
                skip(skipped)
            for line in raw[skipped:]:
                context(line)
        else:
            old_line += len(raw)
            new_line += len(raw)
        last_was_change = False
    return DiffString("\n".join(output), first_changed)
