"""The ``pitrio`` command.

The top layer: it may import everything below it and nothing imports it.
"""

from pitrio.cli._main import main as main

__all__ = ["console_main", "main"]


def console_main() -> None:
    """Entry point of the ``pitrio`` console script."""
    import sys

    sys.exit(main())
