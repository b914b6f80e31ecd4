"""Path resolution of pi's tools (pi 0.73.1 ``core/tools/path-utils.ts``).

A path from the model may carry a leading ``@`` (pi's file-reference syntax), Unicode spaces
where the user meant ASCII ones, and ``~``. ``read`` also tries the spellings macOS uses in
screenshot names (a narrow no-break space before ``AM``/``PM``, NFD-decomposed names, a curly
apostrophe) when the path as given does not exist.
"""

from __future__ import annotations

import os
import re
import unicodedata
from typing import Final

_UNICODE_SPACES: Final = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_AM_PM: Final = re.compile(r" (AM|PM)\.", re.IGNORECASE)
_NARROW_NO_BREAK_SPACE: Final = "\u202f"


def expand_path(file_path: str) -> str:
    """Drop a leading ``@``, turn Unicode spaces into ASCII ones and expand ``~``/``~/``."""
    normalized = _UNICODE_SPACES.sub(" ", file_path.removeprefix("@"))
    if normalized == "~":
        return os.path.expanduser("~")
    if normalized.startswith("~/"):
        return os.path.expanduser("~") + normalized[1:]
    return normalized


def resolve_to_cwd(file_path: str, cwd: str) -> str:
    """Return ``file_path`` made absolute against ``cwd`` (Node's ``path.resolve``: normalised,
    symlinks kept)."""
    expanded = expand_path(file_path)
    if os.path.isabs(expanded):
        return expanded
    return os.path.normpath(os.path.join(cwd, expanded))


def _exists(path: str) -> bool:
    # access(F_OK) as pi checks: a dangling symlink does not exist.
    return os.access(path, os.F_OK)


def resolve_read_path(file_path: str, cwd: str) -> str:
    """Resolve a path to read, trying macOS's screenshot-name spellings when it does not exist.

    Blocking (it checks the file system): call it in a worker thread.
    """
    resolved = resolve_to_cwd(file_path, cwd)
    if _exists(resolved):
        return resolved
    am_pm = _AM_PM.sub(lambda m: f"{_NARROW_NO_BREAK_SPACE}{m.group(1)}.", resolved)
    if am_pm != resolved and _exists(am_pm):
        return am_pm
    nfd = unicodedata.normalize("NFD", resolved)
    if nfd != resolved and _exists(nfd):
        return nfd
    curly = resolved.replace("'", "\u2019")
    if curly != resolved and _exists(curly):
        return curly
    nfd_curly = nfd.replace("'", "\u2019")
    if nfd_curly != resolved and _exists(nfd_curly):
        return nfd_curly
    return resolved
