"""Each public namespace re-exports a curated, sorted, complete ``__all__``."""

from __future__ import annotations

import importlib
import types

import pytest


def _public_namespaces() -> list[str]:
    """Every public package and module of pitrio (no underscore in its dotted name) that
    declares an ``__all__``: the namespaces users import from."""
    import pkgutil

    import pitrio

    found = ["pitrio"]
    for info in pkgutil.walk_packages(pitrio.__path__, "pitrio."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        if hasattr(importlib.import_module(info.name), "__all__"):
            found.append(info.name)
    return sorted(found)


PACKAGES = _public_namespaces()


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
    # Packages present their names; a public module that gathers names from elsewhere in its
    # layer (``pitrio.sessions.commands``, ``pitrio.sessions.envelope``) does not rename them.
    "package",
    [p for p in PACKAGES if p == "pitrio.codec" or hasattr(importlib.import_module(p), "__path__")],
)
def test_public_classes_report_their_public_path(package: str) -> None:
    """Public classes say they live in a public namespace that exports them (this one, or the
    one it re-exports them from), never in an underscore module."""
    module = importlib.import_module(package)
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, type) and obj.__module__.startswith("pitrio"):
            reported = obj.__module__
            assert not any(part.startswith("_") for part in reported.split(".")), name
            # (by its own name: ``pitrio.extensions.UserBashEventResult`` is an alias)
            assert getattr(importlib.import_module(reported), obj.__name__) is obj, name


def test_every_public_package_declares_its_names() -> None:
    """Each public subpackage that presents any names has an ``__all__`` (so it is checked
    above); a layout subpackage (``sessions.storage`` ...) presents none."""
    import pkgutil

    import pitrio

    missing = [
        info.name
        for info in pkgutil.walk_packages(pitrio.__path__, "pitrio.")
        if info.ispkg
        and not any(part.startswith("_") for part in info.name.split("."))
        and not hasattr(importlib.import_module(info.name), "__all__")
        and any(
            not name.startswith("_") and not isinstance(value, types.ModuleType)
            for name, value in vars(importlib.import_module(info.name)).items()
            if name != "annotations"
        )
    ]
    assert missing == []
