"""The growing assistant message of a streaming response.

A provider owns one :class:`AssistantMessageBuilder` per response. Appending a delta costs
O(len(delta)): text is kept as a list of chunks and only joined when somebody reads it. Every
event carries :meth:`AssistantMessageBuilder.snapshot`, a :class:`PartialAssistantMessage` that
records how many chunks each block had at that moment (O(number of blocks), not O(text)). A
snapshot is immutable: later deltas do not change what an earlier snapshot shows, and nothing a
subscriber does to it can corrupt the stream. Reading ``snapshot.content`` joins the text once and
caches it, so a reader that looks at every event pays O(text) per look, as in pi.

pi's providers differ in what a partial tool call shows while its JSON arguments stream: the
HTTP providers parse the partial JSON, the faux provider shows ``{}`` until the call ends. The
builder takes ``parse_partial_arguments`` to choose.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias, cast

import attrs

from pitrio.providers._messages import (
    EMPTY_USAGE,
    AssistantContentBlock,
    AssistantMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

BlockKind = Literal["text", "thinking", "toolCall"]

_HEADER_FIELDS: Final = (
    "api",
    "provider",
    "model",
    "response_model",
    "response_id",
    "diagnostics",
    "usage",
    "stop_reason",
    "error_message",
    "timestamp",
    "extra",
)


@attrs.frozen(kw_only=True)
class _Header:
    api: str
    provider: str
    model: str
    response_model: str | None
    response_id: str | None
    diagnostics: list[dict[str, Any]] | None
    usage: Usage
    stop_reason: StopReason
    error_message: str | None
    timestamp: int
    extra: dict[str, Any] | None


_HeaderLike: TypeAlias = _Header | AssistantMessage
"""What a snapshot reads its message fields from: a `_Header`, or a finished message whose
fields are the response's (`AssistantMessageBuilder.for_message`); its ``content`` is never
read through it."""


class _Block:
    """One content block under construction. Only the builder mutates it."""

    __slots__ = (
        "_joined",
        "_joined_n",
        "arguments",
        "chunks",
        "id",
        "kind",
        "name",
        "parse_args",
        "redacted",
        "signature",
    )

    def __init__(
        self, kind: BlockKind, parse_args: Callable[[str], dict[str, Any]] | None = None
    ) -> None:
        self.kind: BlockKind = kind
        # A tool call's partial-JSON parser (its builder's), for the arguments a snapshot shows.
        self.parse_args = parse_args
        self.chunks: list[str] = []
        self._joined = ""
        self._joined_n = 0
        self.signature: str | None = None
        self.redacted: bool | None = None
        self.id = ""
        self.name = ""
        self.arguments: dict[str, Any] | None = None

    def text_upto(self, n: int) -> str:
        """Return the concatenation of the first ``n`` chunks (cached for the newest ``n``)."""
        if n == self._joined_n:
            return self._joined
        if n > self._joined_n:
            chunks = self.chunks
            self._joined += (
                chunks[self._joined_n]
                if n - self._joined_n == 1
                else "".join(chunks[self._joined_n : n])
            )
            self._joined_n = n
            return self._joined
        return "".join(self.chunks[:n])


# State of one block at snapshot time: (block, chunk count, signature, arguments, redacted).
_BlockState = tuple[_Block, int, "str | None", "dict[str, Any] | None", "bool | None"]
_STATE_WIDTH: Final = 5
"""A snapshot keeps its blocks' states in one flat tuple, ``_STATE_WIDTH`` items per block: one
object per streamed token instead of one per block plus one. A session's replay ring keeps every
snapshot alive, so this is one long-lived object fewer per token for the cyclic GC to walk."""


class PartialAssistantMessage:
    """An immutable view of a streaming message at one moment.

    It has the attributes of :class:`AssistantMessage` (``content``, ``usage``, ``stop_reason``
    ...) and encodes to the same JSON; :meth:`to_message` turns it into one.

    Snapshots come from `AssistantMessageBuilder.snapshot`; the class takes no arguments
    (``PartialAssistantMessage()`` is an empty shell the builder fills: with no ``__init__``
    of its own, that call is CPython's cheapest way to make an instance, one per streamed
    token).
    """

    __slots__ = ("_count", "_header", "_states")

    role: Final = "assistant"

    # Three forms, by ``_count``. The general one (``_GENERAL``): ``_states`` is the flat tuple
    # of every block's state. The compact one (``_count >= 0``), a message of one block whose
    # signature, arguments and redacted flag were unset: ``_states`` is the block and
    # ``_count`` its chunk count, the streamed token's snapshot without a tuple (one
    # GC-tracked object less per token). Once `content` is read (``_MATERIALIZED``):
    # ``_states`` is the content, kept. Three slots: a streamed token's snapshot is three
    # stores and 56 bytes.
    _header: _HeaderLike
    _states: tuple[Any, ...] | _Block
    _count: int

    @property
    def content(self) -> tuple[AssistantContentBlock, ...]:
        """The content blocks as they were when the snapshot was taken."""
        count = self._count
        states = self._states
        if count == _MATERIALIZED:
            return cast(tuple[AssistantContentBlock, ...], states)
        content: tuple[AssistantContentBlock, ...]
        if count >= 0:
            content = (_materialize((cast(_Block, states), count, None, None, None)),)
        else:
            assert isinstance(states, tuple)
            content = tuple(
                _materialize(states[i : i + _STATE_WIDTH])
                for i in range(0, len(states), _STATE_WIDTH)
            )
        self._states = content
        self._count = _MATERIALIZED
        return content

    @property
    def api(self) -> str:
        return self._header.api

    @property
    def provider(self) -> str:
        return self._header.provider

    @property
    def model(self) -> str:
        return self._header.model

    @property
    def response_model(self) -> str | None:
        return self._header.response_model

    @property
    def response_id(self) -> str | None:
        return self._header.response_id

    @property
    def diagnostics(self) -> list[dict[str, Any]] | None:
        return self._header.diagnostics

    @property
    def usage(self) -> Usage:
        return self._header.usage

    @property
    def stop_reason(self) -> StopReason:
        return self._header.stop_reason

    @property
    def error_message(self) -> str | None:
        return self._header.error_message

    @property
    def timestamp(self) -> int:
        return self._header.timestamp

    @property
    def extra(self) -> dict[str, Any] | None:
        return self._header.extra

    def tool_calls(self) -> list[ToolCall]:
        """Return the tool-call blocks in order."""
        return [block for block in self.content if isinstance(block, ToolCall)]

    def text(self) -> str:
        """Return the concatenated text blocks."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    def to_message(self) -> AssistantMessage:
        """Return this snapshot as a plain :class:`AssistantMessage`."""
        h = self._header
        return AssistantMessage(
            content=self.content,
            api=h.api,
            provider=h.provider,
            model=h.model,
            response_model=h.response_model,
            response_id=h.response_id,
            diagnostics=h.diagnostics,
            usage=h.usage,
            stop_reason=h.stop_reason,
            error_message=h.error_message,
            timestamp=h.timestamp,
            extra=h.extra,
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PartialAssistantMessage | AssistantMessage):
            return self.to_message() == (
                other.to_message() if isinstance(other, PartialAssistantMessage) else other
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        count, states = self._count, cast(tuple[Any, ...], self._states)
        if count >= 0:
            blocks = 1
        else:
            blocks = len(states) if count == _MATERIALIZED else len(states) // _STATE_WIDTH
        return f"PartialAssistantMessage(blocks={blocks}, model={self.model!r})"


_GENERAL: Final = -1
_MATERIALIZED: Final = -2
"""`PartialAssistantMessage._count` of its general form, and once its content is made."""


def _materialize(state: _BlockState) -> AssistantContentBlock:
    block, n, signature, arguments, redacted = state
    if block.kind == "text":
        return TextContent(text=block.text_upto(n), text_signature=signature)
    if block.kind == "thinking":
        return ThinkingContent(
            thinking=block.text_upto(n), thinking_signature=signature, redacted=redacted
        )
    if arguments is None:
        parse_args = block.parse_args
        arguments = parse_args(block.text_upto(n)) if parse_args is not None and n else {}
    return ToolCall(id=block.id, name=block.name, arguments=arguments, thought_signature=signature)


def _snapshot(
    header: _HeaderLike, states: tuple[Any, ...] | _Block, count: int
) -> PartialAssistantMessage:
    """A snapshot (see `PartialAssistantMessage`); a loop that makes many
    (`AssistantMessageBuilder.sole_block`) writes these three stores itself."""
    partial = PartialAssistantMessage()
    partial._header = header
    partial._states = states
    partial._count = count
    return partial


class AssistantMessageBuilder:
    """Accumulates one streaming assistant message.

    Resource handling: owned by the single task that produces the stream; not thread- or
    task-safe. Snapshots it hands out stay valid after the builder moves on.

    Args:
        api, provider, model: identify the response (``AssistantMessage`` fields).
        timestamp: milliseconds since the epoch.
        parse_partial_arguments: turns the partial JSON of a streaming tool call into the
            ``arguments`` a snapshot shows; ``None`` shows ``{}`` until the call ends (pi's faux).
    """

    def __init__(
        self,
        *,
        api: str,
        provider: str,
        model: str,
        timestamp: int,
        usage: Usage = EMPTY_USAGE,
        stop_reason: StopReason = "stop",
        error_message: str | None = None,
        response_model: str | None = None,
        response_id: str | None = None,
        diagnostics: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
        parse_partial_arguments: Callable[[str], dict[str, Any]] | None = None,
    ) -> None:
        self._header: _HeaderLike = _Header(
            api=api,
            provider=provider,
            model=model,
            response_model=response_model,
            response_id=response_id,
            diagnostics=diagnostics,
            usage=usage,
            stop_reason=stop_reason,
            error_message=error_message,
            timestamp=timestamp,
            extra=extra,
        )
        self._blocks: list[_Block] = []
        self._parse_args = parse_partial_arguments

    # ------------------------------------------------------------------ header

    @classmethod
    def for_message(cls, message: AssistantMessage) -> AssistantMessageBuilder:
        """A builder with no blocks yet that streams ``message`` (a provider replaying a
        finished message, as the faux does): its fields (all but ``content``) are the header,
        read from ``message`` itself instead of being copied (partial tool arguments show
        ``{}``, as pi's faux). Its snapshots keep ``message`` alive while they live; the
        stream's final event carries it anyway."""
        self = cls.__new__(cls)
        self._header = message
        self._blocks = []
        self._parse_args = None
        return self

    @property
    def header(self) -> _HeaderLike:
        return self._header

    def update(self, **changes: Any) -> None:
        """Change header fields (``usage``, ``stop_reason``, ``error_message``...)."""
        unknown = changes.keys() - set(_HEADER_FIELDS)
        if unknown:
            raise TypeError(f"not a message header field: {', '.join(sorted(unknown))}")
        self._header = attrs.evolve(self._header, **changes)

    @property
    def usage(self) -> Usage:
        return self._header.usage

    @property
    def stop_reason(self) -> StopReason:
        return self._header.stop_reason

    # ------------------------------------------------------------------ blocks

    def __len__(self) -> int:
        return len(self._blocks)

    def kind(self, index: int) -> BlockKind:
        """Return the kind of block ``index``."""
        return self._blocks[index].kind

    def add_text(self, text: str = "", *, signature: str | None = None) -> int:
        """Open a text block and return its content index."""
        return self._add("text", text, signature)

    def add_thinking(
        self, thinking: str = "", *, signature: str | None = None, redacted: bool | None = None
    ) -> int:
        """Open a thinking block and return its content index."""
        index = self._add("thinking", thinking, signature)
        self._blocks[index].redacted = redacted
        return index

    def add_tool_call(
        self,
        *,
        id: str,
        name: str,
        arguments: dict[str, Any] | None = None,
        thought_signature: str | None = None,
    ) -> int:
        """Open a tool call and return its content index; stream arguments with :meth:`append`."""
        index = self._add("toolCall", "", thought_signature)
        block = self._blocks[index]
        block.id = id
        block.name = name
        block.arguments = arguments
        return index

    def _add(self, kind: BlockKind, initial: str, signature: str | None) -> int:
        block = _Block(kind, self._parse_args)
        if initial:
            block.chunks.append(initial)
        block.signature = signature
        self._blocks.append(block)
        return len(self._blocks) - 1

    def append(self, index: int, delta: str) -> None:
        """Append text, reasoning or argument JSON to block ``index`` in O(len(delta))."""
        self._blocks[index].chunks.append(delta)

    def chunk_appender(self, index: int) -> Callable[[str], None]:
        """`append` to block ``index`` as one bound call (a streaming loop's per-token path).

        Valid until `set_text` replaces the block; a producer that streams a block's deltas
        and only then fixes its text may hold it for the deltas.
        """
        return self._blocks[index].chunks.append

    def text_of(self, index: int) -> str:
        """Return the whole text (or argument JSON) of block ``index`` so far."""
        block = self._blocks[index]
        return block.text_upto(len(block.chunks))

    def set_text(self, index: int, text: str) -> None:
        """Replace the whole text (or argument JSON) of block ``index``.

        For servers whose final item differs from the deltas they streamed. A fresh block takes
        the old one's place, so snapshots already handed out keep showing what they showed.
        """
        old = self._blocks[index]
        if old.text_upto(len(old.chunks)) == text:
            return
        new = _Block(old.kind, old.parse_args)
        if text:
            new.chunks.append(text)
        new.signature = old.signature
        new.redacted = old.redacted
        new.id = old.id
        new.name = old.name
        new.arguments = old.arguments
        self._blocks[index] = new

    def set_signature(self, index: int, signature: str | None) -> None:
        """Set the text, thinking or thought signature of block ``index``."""
        self._blocks[index].signature = signature

    def set_redacted(self, index: int, redacted: bool | None) -> None:
        self._blocks[index].redacted = redacted

    def set_tool_call(self, index: int, *, id: str | None = None, name: str | None = None) -> None:
        """Fill in a tool call's id or name when the provider sends them late."""
        block = self._blocks[index]
        if id is not None:
            block.id = id
        if name is not None:
            block.name = name

    def set_arguments(self, index: int, arguments: dict[str, Any]) -> None:
        """Fix the final, parsed arguments of tool call ``index``."""
        self._blocks[index].arguments = arguments

    def block(self, index: int) -> AssistantContentBlock:
        """Return block ``index`` as it is now (only that block is materialized)."""
        b = self._blocks[index]
        return _materialize((b, len(b.chunks), b.signature, b.arguments, b.redacted))

    def tool_call_head(self, index: int) -> tuple[str, str]:
        """The ``(id, name)`` of tool call ``index``, without looking at its arguments (a
        streaming reader's per-delta question: O(1), where `block` would parse the partial
        arguments)."""
        b = self._blocks[index]
        return b.id, b.name

    # ------------------------------------------------------------------ views

    def sole_block(self, index: int) -> _Block | None:
        """Block ``index`` if it is the only block and has no signature, arguments or
        redacted flag (else ``None``): then, until one of those changes, a snapshot is the
        compact ``PartialAssistantMessage`` of this builder's ``header``, the block and its
        chunk count, and a producer streaming the block's deltas may build those snapshots
        itself (``PartialAssistantMessage()``, then the three stores of `_snapshot`) instead
        of calling `snapshot` per token."""
        blocks = self._blocks
        if len(blocks) != 1 or index != 0:
            return None
        b = blocks[0]
        if b.signature is None and b.arguments is None and b.redacted is None:
            return b
        return None

    def snapshot(self) -> PartialAssistantMessage:
        """Return an immutable view of the message as it is now (O(number of blocks))."""
        blocks = self._blocks
        n = len(blocks)
        if n == 1:  # the common case, without a loop
            b = blocks[0]
            if b.signature is None and b.arguments is None and b.redacted is None:
                # The streamed token's snapshot: `_snapshot` without its call.
                partial = PartialAssistantMessage()
                partial._header = self._header
                partial._states = b
                partial._count = len(b.chunks)
                return partial
            states: tuple[Any, ...] = (b, len(b.chunks), b.signature, b.arguments, b.redacted)
        elif n == 0:  # a stream's start event
            states = ()
        else:
            flat: list[Any] = []
            for b in blocks:
                flat += (b, len(b.chunks), b.signature, b.arguments, b.redacted)
            states = tuple(flat)
        return _snapshot(self._header, states, _GENERAL)

    def build(self) -> AssistantMessage:
        """Return the message as a finished :class:`AssistantMessage`."""
        return self.snapshot().to_message()
