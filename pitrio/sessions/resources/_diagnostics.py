"""What the resource loaders report instead of raising: pi's ``ResourceDiagnostic``."""

from __future__ import annotations

from typing import Literal

import attrs

DiagnosticType = Literal["warning", "error", "collision"]
ResourceType = Literal["skill", "prompt"]


@attrs.frozen(kw_only=True)
class ResourceCollision:
    """Two resources with one name: the first found wins (pi's ``collision`` field)."""

    resource_type: ResourceType
    name: str
    winner_path: str
    loser_path: str


@attrs.frozen(kw_only=True)
class ResourceDiagnostic:
    """A problem with a skill, a prompt template or a path that names one.

    ``warning``: the resource loaded with a problem, or a file could not be read or parsed;
    ``error``: a path given on the command line does not exist; ``collision``: a name already
    taken (``collision`` says by which file).
    """

    type: DiagnosticType
    message: str
    path: str | None = None
    collision: ResourceCollision | None = None

    def to_pi(self) -> dict[str, object]:
        """The diagnostic as pi's JSON object (``collision`` with camelCase keys)."""
        out: dict[str, object] = {"type": self.type, "message": self.message}
        if self.path is not None:
            out["path"] = self.path
        if self.collision is not None:
            out["collision"] = {
                "resourceType": self.collision.resource_type,
                "name": self.collision.name,
                "winnerPath": self.collision.winner_path,
                "loserPath": self.collision.loser_path,
            }
        return out
