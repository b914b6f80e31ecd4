"""The programs the interactive mode borrows: ``gh`` for ``/share`` and the clipboard tools
(``wl-paste``, ``xclip``) for image paste, each found on ``PATH`` and run as a subprocess.

* :func:`create_secret_gist` is pi's ``/share``: ``gh auth status`` must succeed, then
  ``gh gist create --public=false FILE`` prints the gist's URL.
* :func:`read_clipboard_image` is pi's clipboard image read on Linux: ``wl-paste`` in a
  Wayland session (``--list-types``, then the preferred image type), else ``xclip``
  (``-t TARGETS``, then the preferred image type, then pi's supported types in order).

A failure is an :class:`Unavailable` answer whose message names the program to install or
the command to run (the caller shows it; nothing here raises for a missing program).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Final

import attrs
import trio

__all__ = [
    "ClipboardImage",
    "Unavailable",
    "create_secret_gist",
    "gh_ready",
    "read_clipboard_image",
]

IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/webp", "image/gif")
"""The image types pi attaches, preferred first."""
GH_MISSING: Final = (
    "GitHub CLI (gh) is not installed: install it from https://cli.github.com/, "
    "then run 'gh auth login'"
)
GH_LOGGED_OUT: Final = "GitHub CLI is not logged in. Run 'gh auth login' first."
CLIPBOARD_MISSING: Final = (
    "Image paste needs wl-paste (wl-clipboard, Wayland) or xclip (X11); install one"
)


@attrs.frozen
class Unavailable:
    """A borrowed program is missing or failed; ``message`` says what to do."""

    message: str


@attrs.frozen
class ClipboardImage:
    data: bytes
    mime_type: str


async def _run(command: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        list(command), capture_stdout=True, capture_stderr=True, check=False
    )


def gh_ready() -> str | Unavailable:
    """``gh``'s path, or why it cannot be used (it is not on ``PATH``)."""
    gh = shutil.which("gh")
    return gh if gh is not None else Unavailable(GH_MISSING)


async def create_secret_gist(gh: str, path: str) -> str | Unavailable:
    """Upload ``path`` as a secret gist with ``gh`` (the program's path); returns the gist's
    URL, or why not (not logged in, the upload failed)."""
    status = await _run([gh, "auth", "status"])
    if status.returncode != 0:
        return Unavailable(GH_LOGGED_OUT)
    created = await _run([gh, "gist", "create", "--public=false", path])
    if created.returncode != 0:
        detail = created.stderr.decode(errors="replace").strip() or "Unknown error"
        return Unavailable(f"Failed to create gist: {detail}")
    url = created.stdout.decode(errors="replace").strip()
    if not url.rsplit("/", 1)[-1]:
        return Unavailable("Failed to parse the gist's URL from gh's output")
    return url


def _preferred(types: Sequence[str]) -> str | None:
    base = {t.split(";")[0].strip().lower(): t.strip() for t in types if t.strip()}
    for wanted in IMAGE_TYPES:
        if wanted in base:
            return base[wanted]
    return next((raw for name, raw in base.items() if name.startswith("image/")), None)


async def _wl_paste(tool: str) -> ClipboardImage | None:
    listed = await _run([tool, "--list-types"])
    if listed.returncode != 0:
        return None
    chosen = _preferred(listed.stdout.decode(errors="replace").splitlines())
    if chosen is None:
        return None
    data = await _run([tool, "--type", chosen, "--no-newline"])
    if data.returncode != 0 or not data.stdout:
        return None
    return ClipboardImage(data.stdout, chosen.split(";")[0].strip().lower())


async def _xclip(tool: str) -> ClipboardImage | None:
    targets = await _run([tool, "-selection", "clipboard", "-t", "TARGETS", "-o"])
    listed = targets.stdout.decode(errors="replace").splitlines() if targets.returncode == 0 else []
    chosen = _preferred(listed)
    for mime_type in ([chosen] if chosen else []) + list(IMAGE_TYPES):
        data = await _run([tool, "-selection", "clipboard", "-t", mime_type, "-o"])
        if data.returncode == 0 and data.stdout:
            return ClipboardImage(data.stdout, mime_type.split(";")[0].strip().lower())
    return None


async def read_clipboard_image(
    env: Mapping[str, str] | None = None,
) -> ClipboardImage | Unavailable | None:
    """The clipboard's image (``None``: it holds none; :class:`Unavailable`: neither
    ``wl-paste`` nor ``xclip`` is installed). ``env`` tells a Wayland session (default:
    ``os.environ``)."""
    env = os.environ if env is None else env
    wayland = bool(env.get("WAYLAND_DISPLAY")) or env.get("XDG_SESSION_TYPE") == "wayland"
    wl_paste, xclip = shutil.which("wl-paste"), shutil.which("xclip")
    if wl_paste is None and xclip is None:
        return Unavailable(CLIPBOARD_MISSING)
    image = None
    if wayland and wl_paste is not None:
        image = await _wl_paste(wl_paste)
    if image is None and xclip is not None:
        image = await _xclip(xclip)
    return image
