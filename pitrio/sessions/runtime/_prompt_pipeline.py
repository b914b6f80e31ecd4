"""The text stages of :meth:`AgentSession.prompt <pitrio.sessions.AgentSession.prompt>` (seed 002
s.1.7, seed 004 s.1): built-in commands and ``/skill:`` / ``/template`` expansion.

The order, for every front end (print, json, RPC, the websocket host, Python)::

    raw text -> extension commands -> input hook -> built-in command? -> expansion -> run/queue

Extension commands and the ``input`` hook see the raw text (the extension runner's ``input``
matches its commands first). Built-in commands are looked up in the text the ``input`` hook
left, so a transform can turn text into a built-in command or a built-in command into an
ordinary prompt; a built-in command never reaches the model, and what it answers comes back
from ``prompt()`` as a :class:`BuiltinCommandResult` for the front end to show. Only then are
skill and template commands expanded (pi's ``_expandSkillCommand`` and
``expandPromptTemplate``).

pitrio's one built-in command outside an interactive mode is ``/context [--full]
[--ephemeral]`` (:func:`~pitrio.sessions.runtime._context_view.context_prompt_answer`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeAlias

import attrs
import yaml

from pitrio.sessions.resources import (
    PromptTemplate,
    Skill,
    expand_prompt_template,
    expand_skill_command,
)
from pitrio.sessions.resources._skills import SKILL_COMMAND_PREFIX, read_skill_body
from pitrio.sessions.runtime._context_view import context_prompt_answer
from pitrio.sessions.storage._files import run_file_work

__all__ = [
    "BUILTIN_COMMANDS",
    "BuiltinCommand",
    "BuiltinCommandResult",
    "PromptExpansion",
    "SkillErrorReporter",
    "builtin_command_name",
    "run_builtin_command",
]

SkillErrorReporter: TypeAlias = Callable[[Skill, Exception], Awaitable[None]]
"""Told when a ``/skill:name`` command names a skill whose file can no longer be read."""

BuiltinCommand: TypeAlias = Callable[[Any, str], Awaitable[dict[str, Any]]]
"""A built-in command: ``(session, text) -> output`` (a JSON-ready mapping with a ``text``)."""

BUILTIN_COMMANDS: Final[Mapping[str, BuiltinCommand]] = {"context": context_prompt_answer}
"""The built-in commands by name (without the slash)."""


@attrs.frozen(kw_only=True)
class BuiltinCommandResult:
    """A prompt answered by a built-in command instead of a run (nothing was sent to the model).

    Attributes:
        name: the command, without its slash (``"context"``).
        output: what it answered, JSON-ready; ``output["text"]`` is the rendered form. For
            ``/context``: :func:`~pitrio.sessions.envelope.context_to_wire` plus ``text``.
    """

    name: str
    output: dict[str, Any]

    @property
    def text(self) -> str:
        """The rendered answer (what print mode writes)."""
        return str(self.output.get("text", ""))


def builtin_command_name(text: str) -> str | None:
    """The built-in command ``text`` invokes (``"/context --full"``: ``"context"``), or None."""
    words = text.split(maxsplit=1)
    if not words or not words[0].startswith("/"):
        return None
    name = words[0][1:]
    return name if name in BUILTIN_COMMANDS else None


async def run_builtin_command(session: Any, text: str) -> BuiltinCommandResult | None:
    """Run the built-in command ``text`` names on ``session``; None when it names none.

    Raises:
        UsageError: the command's arguments are wrong (``/context --nope``).
    """
    name = builtin_command_name(text)
    if name is None:
        return None
    return BuiltinCommandResult(name=name, output=await BUILTIN_COMMANDS[name](session, text))


@attrs.frozen
class PromptExpansion:
    """The skills and prompt templates a session expands ``/skill:name`` and ``/template``
    commands with (empty: no expansion)."""

    skills: tuple[Skill, ...] = ()
    prompt_templates: tuple[PromptTemplate, ...] = ()

    def expand_now(self, text: str) -> str:
        """Skill, then template expansion (blocking: a skill's file is read)."""
        return expand_prompt_template(
            expand_skill_command(text, self.skills), self.prompt_templates
        )

    async def expand(self, text: str, on_skill_error: SkillErrorReporter | None = None) -> str:
        """:meth:`expand_now`, in a worker thread when a skill file must be read.

        A ``/skill:name`` command whose skill file can no longer be read stays as written and
        ``on_skill_error`` is told (pi reports it to extensions as a ``skill_expansion``
        error).
        """
        if not self.skills and not self.prompt_templates:
            return text
        if not self.skills or not text.startswith(SKILL_COMMAND_PREFIX):
            return self.expand_now(text)  # templates are in memory: no file work
        expanded = await run_file_work(functools.partial(self.expand_now, text))
        if expanded == text and on_skill_error is not None:
            name = text[len(SKILL_COMMAND_PREFIX) :].split(" ", 1)[0]
            skill = next((s for s in self.skills if s.name == name), None)
            if skill is not None:
                error = await run_file_work(functools.partial(_skill_read_error, skill))
                if error is not None:
                    await on_skill_error(skill, error)
        return expanded


def _skill_read_error(skill: Skill) -> Exception | None:
    """Why ``skill``'s file cannot be read now, or None when it can."""
    try:
        read_skill_body(skill)
    except (OSError, yaml.YAMLError) as exc:
        return exc
    return None
