"""The exception tree: one root, re-exported from the package, every class drawn in the docstring."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pitrio
from pitrio import _exceptions


def _pitrio_error_classes() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for info in pkgutil.walk_packages(pitrio.__path__, "pitrio."):
        if info.name == "pitrio.__main__":
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, pitrio.PitrioError):
                found.add(value)
    return found


def test_the_root_errors_are_importable_from_the_package() -> None:
    """``pitrio.PitrioError`` and ``pitrio.UsageError`` are the tree's root and a caller's mistake."""
    assert pitrio.PitrioError is _exceptions.PitrioError
    assert issubclass(pitrio.UsageError, pitrio.PitrioError)
    assert issubclass(pitrio.UsageError, RuntimeError)


def test_the_tree_docstring_names_every_class_under_its_parent() -> None:
    """Every PitrioError subclass is drawn in ``pitrio._exceptions``' tree, below its base."""
    doc = _exceptions.__doc__ or ""
    lines = doc.splitlines()
    positions: dict[str, tuple[int, int]] = {}
    for index, line in enumerate(lines):
        match = re.match(r"^(\s*(?:[|+ ]\s*)*(?:\+-- )?)([A-Z][A-Za-z]+)\b", line)
        if match and not line.strip().startswith(("Provider failures", "Caller")):
            positions.setdefault(match.group(2), (index, len(match.group(1))))
    missing = sorted(c.__name__ for c in _pitrio_error_classes() if c.__name__ not in positions)
    assert missing == [], f"not drawn in the exception tree: {missing}"
    for cls in _pitrio_error_classes():
        if cls is pitrio.PitrioError:
            continue
        parent = next(b for b in cls.__mro__[1:] if issubclass(b, pitrio.PitrioError))
        row, depth = positions[cls.__name__]
        parent_row, parent_depth = positions[parent.__name__]
        between = [d for name, (r, d) in positions.items() if parent_row < r < row]
        assert parent_row < row and parent_depth < depth, (
            f"{cls.__name__} is not drawn below its base {parent.__name__}"
        )
        assert all(d > parent_depth for d in between), (
            f"{cls.__name__} is drawn outside its base {parent.__name__}'s subtree"
        )


def test_every_library_error_has_a_public_import_path() -> None:
    """Each layer exports its error subtree: every PitrioError subclass outside the command
    line (whose errors become a message and an exit code) is in some public ``__all__``."""
    public: set[str] = set(pitrio.__all__)
    for info in pkgutil.walk_packages(pitrio.__path__, "pitrio."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        public.update(getattr(importlib.import_module(info.name), "__all__", ()))
    hidden = sorted(
        cls.__name__
        for cls in _pitrio_error_classes()
        if cls.__name__ not in public and not cls.__module__.startswith("pitrio.cli")
    )
    assert hidden == []
