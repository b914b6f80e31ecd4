"""The command's one exception: what to say on stderr and the exit status."""

from __future__ import annotations

from pitrio._exceptions import PitrioError


class CliError(PitrioError):
    """The command cannot go on: the message goes to stderr, the process exits ``exit_code``.

    Attributes:
        exit_code: 1 for a failure, 2 for a usage mistake (as argparse), 0 when the user
            chose to stop (``-r`` with no session picked).
    """

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
