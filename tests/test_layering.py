"""The package's shape: layers import only downward, and no module imports its importer.

ARCHITECTURE.md s.1: ``cli -> tui / host -> sessions/extensions -> actors -> tools -> providers ->
channels``. Imports made only for type checking count too: a module that needs its importer's types names
them in a protocol of its own instead, as ``sessions/_session_core.py`` does for the session
actor.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "pitrio"

LAYERS = [
    "channels",
    "providers",
    "tools",
    "actors",
    "sessions",
    "extensions",
    "host",
    "tui",
    "cli",
]
"""Bottom to top. A module may import its own layer and the layers below it (and the package
root's helpers: ``pitrio.codec``, ``pitrio._exceptions`` ...)."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path) -> Iterator[str]:
    """Every ``pitrio`` module ``path`` imports, at run time or for type checking."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pitrio"):
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.startswith("pitrio"):
                yield target
                for (
                    alias
                ) in node.names:  # `from pitrio.sessions.runtime import _agent_session_tree`
                    yield f"{target}.{alias.name}"


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
GRAPH = {
    name: {target for target in imports_of(path) if target in MODULES and target != name}
    for name, path in MODULES.items()
}


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_layers_import_only_downward(module: str) -> None:
    """A module imports nothing from a layer above its own."""
    own = layer_of(module)
    if own is None:
        return
    upward = [t for t in GRAPH[module] if (layer_of(t) or -1) > own]
    assert upward == [], f"{module} imports from a higher layer: {upward}"


def test_no_private_module_imports_its_importer() -> None:
    """No cycle among the private modules of a subpackage (``_a`` imports ``_b`` imports ``_a``).

    A package ``__init__`` re-exporting its modules is not a cycle of this kind, so edges into
    an ``__init__`` are left out.
    """
    private = {
        name: {t for t in targets if t.rpartition(".")[2].startswith("_") and t in MODULES}
        for name, targets in GRAPH.items()
        if name.rpartition(".")[2].startswith("_")
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(private.get(node, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(private):
        if node not in state:
            visit(node, [node])
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


SUBLAYERS = {
    "sessions": ["resources", "storage", "settings", "context", "compaction", "runtime"],
    # cluster (Redis Streams) is lowest: it imports nothing else of host; ws drives it.
    "host": ["cluster", "rpc", "ws", "load"],
}
"""Inside a layer, its subpackages bottom to top (ARCHITECTURE.md s.1): a subpackage imports
its own and the ones below it; the layer's ``__init__`` and public modules sit on top."""


def sublayer_of(module: str) -> tuple[str, int] | None:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in SUBLAYERS and parts[2] in SUBLAYERS[parts[1]]:
        return parts[1], SUBLAYERS[parts[1]].index(parts[2])
    return None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if sublayer_of(m) is not None))
def test_subpackages_import_only_downward(module: str) -> None:
    """Inside ``sessions`` and ``host``, a subpackage imports nothing from one above it, nor
    from the layer's top (its ``__init__`` or public modules)."""
    place = sublayer_of(module)
    assert place is not None
    layer, own = place
    wrong = []
    for target in GRAPH[module]:
        parts = target.split(".")
        if len(parts) < 2 or parts[1] != layer:
            continue
        below = sublayer_of(target)
        if below is None or below[1] > own:
            wrong.append(target)
    assert wrong == [], f"{module} imports from above its subpackage: {sorted(wrong)}"


def test_every_module_of_sessions_and_host_sits_in_a_subpackage() -> None:
    """``sessions`` and ``host`` keep only their ``__init__`` and public modules at the top;
    implementation modules live in a subpackage."""
    loose = sorted(
        m
        for m in MODULES
        if m.split(".")[1:2]
        and m.split(".")[1] in SUBLAYERS
        and len(m.split(".")) == 3
        and m.split(".")[2].startswith("_")
    )
    assert loose == []
