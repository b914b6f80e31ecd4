"""Each public namespace re-exports a curated, sorted, complete ``__all__``."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = [
    "pitrio.actors",
    "pitrio.channels",
    "pitrio.cli",
    "pitrio.codec",
    "pitrio.host",
    "pitrio.host.load",
    "pitrio.providers",
    "pitrio.providers.credentials",
    "pitrio.sessions",
    "pitrio.tools",
    "pitrio.tools.builtin",
]


def _ruff_sort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 "isort-style": SCREAMING_CASE, then CamelCase, then the rest.
    if name.isupper() or (name.upper() == name and "_" in name):
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_unique(package: str) -> None:
    """``__all__`` has no duplicates and is in ruff's isort-style order."""
    names = importlib.import_module(package).__all__
    assert len(names) == len(set(names))
    assert names == sorted(names, key=_ruff_sort_key)


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_complete(package: str) -> None:
    """Every public, non-module attribute of the namespace is listed in ``__all__``."""
    module = importlib.import_module(package)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and getattr(value, "__module__", package).startswith("pitrio")
    }
    assert public - set(module.__all__) == set()
    assert all(hasattr(module, name) for name in module.__all__)


@pytest.mark.parametrize(
    "package",
    [
        "pitrio.actors",
        "pitrio.channels",
        "pitrio.host",
        "pitrio.host.load",
        "pitrio.providers",
        "pitrio.sessions",
        "pitrio.tools",
    ],
)
def test_public_classes_report_their_public_path(package: str) -> None:
    """Public classes say they live in the public package, not in an underscore module (or
    in the public subpackage they come from: ``pitrio.host`` re-exports ``pitrio.host.load``'s
    harness, which reports ``pitrio.host.load``)."""
    module = importlib.import_module(package)
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, type) and obj.__module__.startswith("pitrio"):
            reported = obj.__module__
            public_below = reported.startswith(package + ".") and not any(
                part.startswith("_") for part in reported.split(".")
            )
            assert reported == package or public_below, name
            assert getattr(importlib.import_module(reported), name) is obj, name
