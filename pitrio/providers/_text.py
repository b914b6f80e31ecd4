"""Text clean-up every provider applies before sending."""

from __future__ import annotations

import re
from typing import Final

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def sanitize_surrogates(text: str) -> str:
    """Drop lone UTF-16 surrogates, which every API rejects; a surrogate pair left as two code
    points (text that came from JavaScript) becomes the one character it encodes (pi's
    ``sanitizeSurrogates``)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "ignore")
