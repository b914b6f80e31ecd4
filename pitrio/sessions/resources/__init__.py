"""The coding agent's system prompt and the resources it is built from (pi 0.73.1).

* :func:`build_system_prompt`: pi's default prompt (tools, guidelines, documentation, date and
  cwd), or a ``SYSTEM.md`` in its place, with ``APPEND_SYSTEM.md``, the context files and the
  skills list.
* :func:`load_resources` -> :class:`Resources`: context files (``AGENTS.md`` / ``CLAUDE.md``),
  skills (``SKILL.md``), prompt templates and the prompt files, from pi's locations.
* :func:`expand_skill_command` (``/skill:name args``) and :func:`expand_prompt_template`
  (``/name args`` with ``$1``, ``$@``, ``$ARGUMENTS``, ``${@:N:L}``).
* :func:`process_file_arguments`: ``@file`` command-line arguments.
* :func:`resolve_agent_dirs`: the agent dir pitrio writes to and pi's, read as a fallback.

Layering: part of ``sessions``; imports ``tools`` (image sniffing) and below.
"""

from pitrio._publish import publish as _publish
from pitrio.sessions.resources._agent_dirs import AgentDirs as AgentDirs
from pitrio.sessions.resources._agent_dirs import resolve_agent_dirs as resolve_agent_dirs
from pitrio.sessions.resources._context_files import ContextFile as ContextFile
from pitrio.sessions.resources._context_files import (
    load_project_context_files as load_project_context_files,
)
from pitrio.sessions.resources._diagnostics import ResourceCollision as ResourceCollision
from pitrio.sessions.resources._diagnostics import ResourceDiagnostic as ResourceDiagnostic
from pitrio.sessions.resources._file_args import FileArgumentError as FileArgumentError
from pitrio.sessions.resources._file_args import FileArguments as FileArguments
from pitrio.sessions.resources._file_args import ResizedImage as ResizedImage
from pitrio.sessions.resources._file_args import process_file_arguments as process_file_arguments
from pitrio.sessions.resources._frontmatter import Frontmatter as Frontmatter
from pitrio.sessions.resources._frontmatter import parse_frontmatter as parse_frontmatter
from pitrio.sessions.resources._loader import DEFAULT_CONFIG_DIR_NAME as DEFAULT_CONFIG_DIR_NAME
from pitrio.sessions.resources._loader import Resources as Resources
from pitrio.sessions.resources._loader import load_resources as load_resources
from pitrio.sessions.resources._prompt_templates import PromptTemplate as PromptTemplate
from pitrio.sessions.resources._prompt_templates import (
    expand_prompt_template as expand_prompt_template,
)
from pitrio.sessions.resources._prompt_templates import parse_command_args as parse_command_args
from pitrio.sessions.resources._prompt_templates import substitute_args as substitute_args
from pitrio.sessions.resources._skills import Skill as Skill
from pitrio.sessions.resources._skills import expand_skill_command as expand_skill_command
from pitrio.sessions.resources._skills import format_skills_for_prompt as format_skills_for_prompt
from pitrio.sessions.resources._skills import load_skills_from_dir as load_skills_from_dir
from pitrio.sessions.resources._system_prompt import BUILTIN_TOOL_PROMPTS as BUILTIN_TOOL_PROMPTS
from pitrio.sessions.resources._system_prompt import ToolPrompt as ToolPrompt
from pitrio.sessions.resources._system_prompt import build_system_prompt as build_system_prompt
from pitrio.sessions.resources._system_prompt import split_system_prompt as split_system_prompt
from pitrio.sessions.resources._system_prompt import tool_prompt_parts as tool_prompt_parts

__all__ = [
    "BUILTIN_TOOL_PROMPTS",
    "DEFAULT_CONFIG_DIR_NAME",
    "AgentDirs",
    "ContextFile",
    "FileArgumentError",
    "FileArguments",
    "Frontmatter",
    "PromptTemplate",
    "ResizedImage",
    "ResourceCollision",
    "ResourceDiagnostic",
    "Resources",
    "Skill",
    "ToolPrompt",
    "build_system_prompt",
    "expand_prompt_template",
    "expand_skill_command",
    "format_skills_for_prompt",
    "load_project_context_files",
    "load_resources",
    "load_skills_from_dir",
    "parse_command_args",
    "parse_frontmatter",
    "process_file_arguments",
    "resolve_agent_dirs",
    "split_system_prompt",
    "substitute_args",
    "tool_prompt_parts",
]

_publish(globals(), __all__)
