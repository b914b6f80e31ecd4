"""``pitrio serve``: the websocket host (docs/host-protocol.md)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def serve_main(argv: Sequence[str]) -> int:
    """Run ``pitrio serve``; returns the exit status."""
    sys.stderr.write("pitrio serve: not implemented yet\n")
    return 2
