"""The session file's wire codec: session entries and the coding agent's messages.

Built once, here, and sealed; derived from the actors codec, which it never changes. What it adds:

* ``AgentMessage`` (and ``StreamingMessage``) with the four message kinds the coding agent
  defines (``bashExecution``, ``custom``, ``branchSummary``, ``compactionSummary``) besides
  pi-ai's roles; roles users add with :func:`~pitrio.actors.register_agent_message` are read
  live from the actors layer's registry, so a custom message in a session file round-trips
  whenever it was registered;
* ``SessionEntry``, with :class:`~pitrio.sessions.UnknownEntry` for an entry type this version
  does not know.

It knows entries only: the live session events are added by the runtime's codec
(:mod:`pitrio.sessions.runtime._events_codec`), derived from this one, so the file loader
depends on nothing above ``storage``.

:func:`decode_entry` is the session loader's decoder: this codec, whose generated structure
functions build well-formed entries without cattrs' machinery (see :mod:`pitrio.codec`),
reached straight from the entry's ``type``; there is no second decoder beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from pitrio.actors._codec import ACTORS_CODEC, register_agent_messages
from pitrio.codec import WireCodec, make_codec
from pitrio.sessions.storage._context_ops import CONTEXT_PATCH_OP_TYPES, ContextPatchOp
from pitrio.sessions.storage._entries import (
    CONTEXT_ENTRY_TYPES,
    ENTRY_TYPES,
    SESSION_MESSAGE_TYPES,
    SessionEntry,
    UnknownEntry,
)

__all__ = ["SESSIONS_CODEC", "decode_entry"]


def _unknown_entry(data: Mapping[str, Any]) -> UnknownEntry:
    return UnknownEntry(dict(data))


_ENTRY_TYPES: Final[Mapping[str, type]] = {**ENTRY_TYPES, **CONTEXT_ENTRY_TYPES}


def _build() -> WireCodec:
    codec = make_codec(ACTORS_CODEC, name="sessions")
    register_agent_messages(codec, SESSION_MESSAGE_TYPES)
    codec.register_type(UnknownEntry, encode=lambda entry: dict(entry.data))
    codec.register_tagged_union(ContextPatchOp, "op", dict(CONTEXT_PATCH_OP_TYPES))
    codec.register_tagged_union(SessionEntry, "type", _ENTRY_TYPES, fallback=_unknown_entry)
    return codec.seal()


SESSIONS_CODEC: Final = _build()
"""The sessions layer's codec (sealed; derived from the actors codec)."""

_decode_entry: Final = SESSIONS_CODEC.decoder(SessionEntry)


def _entry_builders() -> dict[Any, Callable[[Any], Any]]:
    """Entry ``type`` -> the generated function that builds that entry class from a ``dict``
    (the codec's fast path, see :mod:`pitrio._wire_fast`); empty when the accelerators are
    off."""
    _, _, member_fast = getattr(_decode_entry, "tagged")  # noqa: B009  # see WireCodec.decoder
    builders: dict[Any, Callable[[Any], Any]] = {}
    for tag, cls in _ENTRY_TYPES.items():
        fast = member_fast(cls)
        if fast is not None:
            builders[tag] = fast
    return builders


ENTRY_BUILDERS: Final = _entry_builders()


def decode_entry(data: Mapping[str, Any]) -> SessionEntry:
    """Decode one session entry (the JSON object of a line after the header).

    Raises:
        WireFormatError: the object does not have the shape of its entry type.
    """
    if type(data) is dict:
        # The entry class's generated function, straight from the tag; whatever it does not
        # build (an unknown type, an unusual shape) goes through the codec's union, which
        # gives the same entry or the error.
        try:
            return cast(SessionEntry, ENTRY_BUILDERS[data.get("type")](data))
        except Exception:
            pass
    return cast(SessionEntry, _decode_entry(data))
