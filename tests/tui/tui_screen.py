"""A terminal emulator (pyte) for reading what the UI drew."""

from __future__ import annotations

import pyte


class Screen:
    """A ``columns`` x ``rows`` terminal with scrollback, fed the bytes the UI writes."""

    def __init__(self, columns: int = 80, rows: int = 24) -> None:
        self.screen = pyte.HistoryScreen(columns, rows, history=10000)
        self.stream = pyte.ByteStream(self.screen)

    def feed(self, data: bytes | str) -> None:
        self.stream.feed(data.encode() if isinstance(data, str) else data)

    def resize(self, columns: int, rows: int) -> None:
        self.screen.resize(rows, columns)

    def display(self) -> list[str]:
        """The visible rows, trailing spaces removed."""
        return [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.display())

    def history(self) -> list[str]:
        """The scrollback then the visible rows."""
        top = [
            "".join(self.screen.history.top[i][x].data for x in range(self.screen.columns)).rstrip()
            for i in range(len(self.screen.history.top))
        ]
        return top + self.display()
