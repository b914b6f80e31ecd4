"""Finding and loading extensions (seeds 003/004, pi 0.73.1's ``discoverAndLoadExtensions``).

An extension is a Python module or package with ``register(pi)`` (sync or async). Where they
come from, in load order (seed 004 "Execution Order Across Extensions"):

1. the project: ``<cwd>/.pitrio/extensions/`` (``*.py`` files and packages with
   ``__init__.py``, sorted by name);
2. the user: ``~/.pitrio/agent/extensions/`` (the same);
3. installed packages: the ``pitrio.extensions`` entry-point group (sorted by name);
4. ``-e/--extension PATH`` (repeatable), in the given order: a file, a package directory, or a
   directory whose extensions are discovered as in 1.

``--no-extensions`` skips 1-3; explicit ``-e`` paths still load, as in pi. A path seen twice
loads once. pi 0.73.1 itself loads ``-e`` paths *first* (its resource loader merges the CLI
paths before the discovered ones); the seed's order wins here.

Error handling:
    A module that fails to import, has no ``register``, or whose ``register`` raises is
    recorded as a :class:`~pitrio.extensions.LoadError` (path and message) and skipped; the
    other extensions and the session go on.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import structlog

from pitrio._awaitable import maybe_await
from pitrio.extensions._api import Extension, ExtensionAPI
from pitrio.extensions._runner import ExtensionRunner, LoadError
from pitrio.sessions import run_file_work

__all__ = [
    "ENTRY_POINT_GROUP",
    "discover_extension_paths",
    "find_entry_points",
    "load_extension",
    "load_extensions",
]

log = structlog.get_logger(__name__)

ENTRY_POINT_GROUP: Final = "pitrio.extensions"
"""The entry-point group pip-installed extensions declare (``module`` or ``module:register``)."""

PROJECT_DIR: Final = os.path.join(".pitrio", "extensions")
GLOBAL_DIR: Final = "extensions"
"""Under the agent dir (``~/.pitrio/agent``)."""


def _discover_in_dir(directory: str) -> list[str]:
    """``*.py`` files and packages (``__init__.py``) directly in ``directory``, by name."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    found = []
    for name in names:
        if name.startswith((".", "_")):
            continue
        path = os.path.join(directory, name)
        if (os.path.isfile(path) and name.endswith(".py")) or os.path.isfile(
            os.path.join(path, "__init__.py")
        ):
            found.append(path)
    return found


def discover_extension_paths(
    *,
    cwd: str,
    agent_dir: str,
    explicit: Sequence[str] = (),
    no_extensions: bool = False,
) -> list[str]:
    """Every extension file or package path to load, in load order (entry points aside)."""
    paths: list[str] = []
    seen: set[str] = set()

    def add(items: Iterable[str]) -> None:
        for item in items:
            resolved = os.path.realpath(item)
            if resolved not in seen:
                seen.add(resolved)
                paths.append(item)

    if not no_extensions:
        add(_discover_in_dir(os.path.join(cwd, PROJECT_DIR)))
        add(_discover_in_dir(os.path.join(agent_dir, GLOBAL_DIR)))
    for given in explicit:
        path = os.path.abspath(os.path.join(cwd, os.path.expanduser(given)))
        if os.path.isdir(path) and not os.path.isfile(os.path.join(path, "__init__.py")):
            add(_discover_in_dir(path))
        else:
            add([path])
    return paths


def _import_path(path: str) -> ModuleType:
    """Import the module or package at ``path`` under a private, path-derived name."""
    target = Path(path)
    is_package = target.is_dir()
    file = target / "__init__.py" if is_package else target
    if not file.is_file():
        raise FileNotFoundError(f"Extension path does not exist: {path}")
    digest = hashlib.sha1(str(target.resolve()).encode()).hexdigest()[:12]
    name = f"pitrio_extension_{target.stem.replace('-', '_')}_{digest}"
    spec = importlib.util.spec_from_file_location(
        name,
        file,
        submodule_search_locations=[str(target)] if is_package else None,
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _register(runner: ExtensionRunner, path: str, register: Any) -> None:
    extension = Extension(path=path)
    if not callable(register):
        raise TypeError("the extension has no register(pi) function")
    await maybe_await(register(ExtensionAPI(extension, runner)))
    runner.extensions.append(extension)


async def load_extension(runner: ExtensionRunner, path: str) -> bool:
    """Import ``path`` and run its ``register``; False (and a load error) if that failed."""
    try:
        module = _import_path(path)
        await _register(runner, path, getattr(module, "register", None))
    except Exception as exc:
        runner.load_errors.append(LoadError(path=path, error=_describe(exc)))
        log.warning("extension_load_failed", path=path, error=_describe(exc))
        return False
    return True


def find_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The installed ``pitrio.extensions`` entry points, by name (this reads every installed
    distribution's metadata: a host that opens many sessions looks them up once)."""
    return sorted(
        importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda point: point.name
    )


async def _load_entry_points(
    runner: ExtensionRunner, points: Sequence[importlib.metadata.EntryPoint] | None = None
) -> None:
    if points is None:
        points = await run_file_work(find_entry_points)  # reads every distribution's metadata
    for point in points:
        label = f"{point.value} (entry point {point.name})"
        try:
            loaded = point.load()
            register = loaded if callable(loaded) else getattr(loaded, "register", None)
            await _register(runner, label, register)
        except Exception as exc:
            runner.load_errors.append(LoadError(path=label, error=_describe(exc)))
            log.warning("extension_load_failed", path=label, error=_describe(exc))


async def load_extensions(
    runner: ExtensionRunner,
    *,
    agent_dir: str,
    explicit: Sequence[str] = (),
    no_extensions: bool = False,
    entry_points: bool | Sequence[importlib.metadata.EntryPoint] = True,
) -> ExtensionRunner:
    """Load every extension into ``runner`` in the module docstring's order; returns it.

    Args:
        agent_dir: pitrio's agent dir (the global extensions are in its ``extensions``).
        explicit: the ``-e`` paths (relative to ``runner.cwd``).
        no_extensions: skip the project, global and entry-point extensions.
        entry_points: also load the ``pitrio.extensions`` entry points (or these ones, found
            earlier with :func:`find_entry_points`).
    """
    # Discovery lists folders and resolves paths: file work, off the event loop. (Importing
    # an extension stays on it: its module code and register() belong to the caller's task.)
    discover = functools.partial(
        discover_extension_paths, cwd=runner.cwd, agent_dir=agent_dir, no_extensions=no_extensions
    )
    discovered = await run_file_work(discover)
    for path in discovered:
        await load_extension(runner, path)
    if entry_points is not False and not no_extensions:
        await _load_entry_points(runner, None if entry_points is True else entry_points)
    # -e paths last (a path already discovered is not loaded twice).
    everything = await run_file_work(functools.partial(discover, explicit=explicit))
    for path in everything[len(discovered) :]:
        await load_extension(runner, path)
    return runner
