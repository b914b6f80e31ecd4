"""The chat half of the interactive app: session events turned into views.

:class:`ChatEvents` is a base class of :class:`~pitrio.tui.InteractiveApp`: the event reader
task applies each session event to the views here (cheap updates only; rendering happens in
the render loop), and :meth:`ChatEvents.rebuild_chat` builds the chat again from the
session's messages after a switch, fork, tree move or compaction.
"""

from __future__ import annotations

from typing import Any

import trio

from pitrio.providers import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from pitrio.tui._components import (
    AssistantView,
    BashView,
    Lines,
    NoticeView,
    SummaryView,
    ToolView,
    UserView,
    format_tokens,
    header_lines,
)
from pitrio.tui._keybindings import Keybindings
from pitrio.tui._markdown import MarkdownRenderer
from pitrio.tui._render import Container, Renderer
from pitrio.tui._text import truncate
from pitrio.tui._theme import Theme

__all__ = ["ChatEvents"]


class ChatEvents:
    """The views of the chat and what changes them (attributes set by the app)."""

    session: Any
    config: Any
    theme: Theme
    keys: Keybindings
    markdown: MarkdownRenderer
    renderer: Renderer
    chat: Container
    header: Container
    working: bool
    status_text: str | None
    queue: tuple[tuple[str, ...], tuple[str, ...]]
    show_thinking: bool
    expand_tools: bool
    _assistant: AssistantView | None
    _tools: dict[str, ToolView]
    _live_bash: list[BashView]
    _totals: tuple[int, int, int, int, float]
    _context_usage: Any
    _usage_model: Any
    header_component: Any

    def request_render(self) -> None:
        raise NotImplementedError

    def render_header_component(self, width: int) -> list[str]:
        raise NotImplementedError

    # ------------------------------------------------------------------ chat

    def _build_header(self) -> None:
        if self.header_component is not None:
            self.header.clear()
            self.header.add(Lines(self.render_header_component))
            return
        keys = self.keys

        def key(action: str) -> str:
            bound = keys.keys(action)
            return bound[0] if bound else "(unbound)"

        hints = [
            (key("app.interrupt"), "to interrupt"),
            (f"{key('app.clear')} twice", "to exit"),
            (key("app.thinking.cycle"), "to cycle thinking level"),
            (key("app.model.select"), "to select model"),
            (key("app.tools.expand"), "to expand tools"),
            (key("app.thinking.toggle"), "to show thinking"),
            ("/", "for commands"),
            ("!", "to run bash"),
        ]
        lines = header_lines(self.theme, self.config.version, hints, self.config.loaded)
        self.header.clear()
        self.header.add(Lines(lambda width: [truncate(line, width) for line in lines]))

    def notify(self, message: str, kind: str = "info") -> None:
        token = {"error": "error", "warning": "warning"}.get(kind, "muted")
        prefix = {"error": "Error: ", "warning": "Warning: "}.get(kind, "")
        self.chat.add(NoticeView(self.theme, prefix + message, token))
        self.request_render()

    def add_view(self, view: Any) -> None:
        self.chat.add(view)
        self.request_render()

    def rebuild_chat(self) -> None:
        """The chat built again from the session's messages (after a switch, fork, tree move
        or compaction)."""
        self.chat.clear()
        self._tools.clear()
        self._assistant = None
        for message in self.session.messages:
            self._add_message(message, live=False)
        self._update_totals()
        self.request_render()

    def _add_message(self, message: Any, *, live: bool) -> None:
        theme = self.theme
        role = getattr(message, "role", None)
        if isinstance(message, UserMessage) or role == "user":
            content = message.content
            if isinstance(content, str):
                text, images = content, 0
            else:
                text = "".join(getattr(b, "text", "") for b in content)
                images = sum(1 for b in content if getattr(b, "type", "") == "image")
            self.chat.add(UserView(theme, text, images))
        elif role == "assistant":
            view = AssistantView(theme, self.markdown, message)
            view.show_thinking = self.show_thinking
            self.chat.add(view)
            self._assistant = view
            self._sync_tool_calls(message)
        elif isinstance(message, ToolResultMessage):
            tool = self._tools.get(message.tool_call_id)
            if tool is not None and tool.status in ("pending", "running"):
                tool.set_result(message, is_error=message.is_error)
        elif role == "bashExecution":
            if live and self._live_bash:
                return  # shown while it ran
            bash = BashView(theme, message.command, excluded=bool(message.exclude_from_context))
            bash.finish(message.output, message.exit_code, cancelled=message.cancelled)
            bash.expanded = self.expand_tools
            self.chat.add(bash)
        elif role == "custom":
            if getattr(message, "display", False):
                content = message.content
                text = (
                    content
                    if isinstance(content, str)
                    else "".join(getattr(b, "text", "") for b in content)
                )
                self.chat.add(SummaryView(theme, f"[{message.custom_type}]", text))
        elif role == "compactionSummary":
            label = f"Compacted from {format_tokens(message.tokens_before)} tokens"
            self.chat.add(SummaryView(theme, label, message.summary))
        elif role == "branchSummary":
            self.chat.add(SummaryView(theme, "Branch summary", message.summary))

    def _sync_tool_calls(self, message: Any) -> None:
        for block in message.content:
            if isinstance(block, ToolCall):
                view = self._tools.get(block.id)
                if view is None:
                    view = self._tools[block.id] = ToolView(
                        self.theme, block.id, block.name, block.arguments
                    )
                    view.expanded = self.expand_tools
                    self.chat.add(view)
                else:
                    view.set_args(block.arguments)

    def _update_totals(self) -> None:
        inp = out = cache_read = cache_write = 0
        cost = 0.0
        for entry in self.session.session_manager.get_entries():
            message = getattr(entry, "message", None)
            if isinstance(message, AssistantMessage):
                usage = message.usage
                inp += usage.input
                out += usage.output
                cache_read += usage.cache_read
                cache_write += usage.cache_write
                cost += usage.cost.total
        self._totals = (inp, out, cache_read, cache_write, cost)
        # Estimated over the whole context: computed when a message ends, not per frame.
        self._context_usage = self.session.get_context_usage()
        self._usage_model = self.session.model

    # ------------------------------------------------------------------ session events

    async def _event_loop(self, *, task_status: trio.TaskStatus[None]) -> None:
        async with self.session.events() as subscription:
            task_status.started()
            async for item in subscription:
                event = getattr(item, "event", None)
                if event is None:  # a snapshot: our cursor left the ring
                    self.rebuild_chat()
                    continue
                self.on_event(event)

    def on_event(self, event: Any) -> None:
        """Apply one session event to the views (cheap: no rendering here)."""
        kind = getattr(event, "type", "")
        if kind == "message_start":
            self._add_message(event.message, live=True)
        elif kind == "message_update":
            assistant = self._assistant
            if assistant is not None:
                assistant.update(event.message)
                sub = getattr(event.assistant_message_event, "type", "")
                if sub.startswith("toolcall"):
                    self._sync_tool_calls(event.message)
        elif kind == "message_end":
            message = event.message
            if getattr(message, "role", None) == "assistant" and self._assistant is not None:
                self._assistant.update(message)
                self._sync_tool_calls(message)
                self._update_totals()
            elif isinstance(message, ToolResultMessage):
                self._add_message(message, live=True)
        elif kind == "tool_execution_start":
            tool = self._tools.get(event.tool_call_id)
            if tool is None:
                tool = self._tools[event.tool_call_id] = ToolView(
                    self.theme, event.tool_call_id, event.tool_name, event.args
                )
                self.chat.add(tool)
            tool.status = "running"
            tool.invalidate()
        elif kind == "tool_execution_update":
            tool = self._tools.get(event.tool_call_id)
            if tool is not None:
                tool.set_result(event.partial_result, is_error=None, partial=True)
        elif kind == "tool_execution_end":
            tool = self._tools.get(event.tool_call_id)
            if tool is not None:
                tool.set_result(event.result, is_error=event.is_error)
        elif kind == "agent_start":
            self.working = True
        elif kind == "agent_end":
            self.working = False
            self._update_totals()
        elif kind == "queue_update":
            self.queue = (tuple(event.steering), tuple(event.follow_up))
        elif kind in ("compaction_start", "auto_compaction_start"):
            self.status_text = "Compacting context... (esc to cancel)"
        elif kind in ("compaction_end", "auto_compaction_end"):
            self.status_text = None
            if kind == "compaction_end":
                # Manual and automatic compactions both end here (pi 0.73.1's event).
                if event.aborted:
                    self.notify("Compaction cancelled", "warning")
                elif event.error_message and event.reason != "manual":
                    # (/compact reports its own failure.)
                    self.notify(f"Compaction failed: {event.error_message}", "error")
                elif event.result is not None:
                    self.rebuild_chat()
                    self.renderer.reset()
                    before = format_tokens(event.result.tokens_before)
                    self.notify(f"Compacted ({before} tokens before)")
        elif kind == "auto_retry_start":
            delay = event.delay_ms / 1000
            self.status_text = (
                f"Retrying in {delay:g}s (attempt {event.attempt}/{event.max_attempts}): "
                f"{' '.join(event.error_message.split())[:120]} (esc to cancel)"
            )
        elif kind == "auto_retry_end":
            self.status_text = None
            if not event.success:
                final = getattr(event, "final_error", None) or "retries exhausted"
                self.notify(f"Retry failed: {final}", "error")
        elif kind == "extension_error":
            self.notify(f"Extension error ({event.extension_path}): {event.error}", "error")
        self.request_render()
