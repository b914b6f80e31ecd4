"""Markdown rendering: finished blocks cached, the same text the same lines."""

from __future__ import annotations

from pitrio.tui._markdown import MarkdownRenderer, MarkdownView, finished_prefix
from pitrio.tui._text import strip_ansi
from pitrio.tui._theme import Theme

SOURCE = """# Title

A paragraph with a [link](https://example.com) and `code`.

```python
def f(x):
    return x
```

- one
- two

Last paragraph still streaming"""


def test_the_same_text_renders_the_same_lines() -> None:
    """(Rich's hyperlinks carry a random id per render: they are off.)"""
    renderer = MarkdownRenderer(Theme.builtin("dark"))
    assert renderer.render(SOURCE, 60) == renderer.render(SOURCE, 60)


def test_streaming_and_whole_renders_agree() -> None:
    """Text fed piece by piece renders as the whole text fed at once."""
    renderer = MarkdownRenderer(Theme.builtin("dark"))
    streamed = MarkdownView(renderer)
    for end in range(1, len(SOURCE) + 1, 7):
        streamed.set_text(SOURCE[:end])
        streamed.render(60)
    streamed.set_text(SOURCE)
    whole = MarkdownView(renderer, SOURCE)
    assert streamed.render(60) == whole.render(60)
    text = "\n".join(strip_ansi(line) for line in whole.render(60))
    assert "Title" in text and "def f(x):" in text and "Last paragraph" in text


def test_finished_prefix_stops_before_the_last_block() -> None:
    text = "para one\n\n```\ncode\n\nmore code"
    cut = finished_prefix(text)
    assert text[:cut] == "para one\n\n"  # the open code block is not finished


def test_finished_blocks_are_rendered_once(monkeypatch: object) -> None:
    renderer = MarkdownRenderer(Theme.builtin("dark"))
    calls: list[str] = []
    render = renderer.render

    def counting(source: str, width: int) -> list[str]:
        calls.append(source)
        return render(source, width)

    renderer.render = counting  # type: ignore[method-assign]
    view = MarkdownView(renderer)
    view.set_text("first block\n\nsecond")
    view.render(40)
    view.set_text("first block\n\nsecond block grows")
    view.render(40)
    assert calls.count("first block\n\n") == 1
