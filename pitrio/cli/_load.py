"""``pitrio load``: the load harness."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def load_main(argv: Sequence[str]) -> int:
    """Run ``pitrio load``; returns the exit status."""
    sys.stderr.write("pitrio load: not implemented yet\n")
    return 2
