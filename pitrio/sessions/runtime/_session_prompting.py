"""The session actor's prompting (``prompt`` with its busy policies, the run loop with retry
and compaction, steering and follow-up queues, ``send_custom_message``), as a mixin of
:class:`~pitrio.sessions.runtime._session_actor.SessionActor`.

A prompt on an idle session starts a job: auth and compaction checks, the user message with
the messages kept for the next turn, ``before_agent_start``, then :meth:`PromptCommands._drive`,
which runs the agent and then retries a transient error or compacts and continues until the
session settles. A prompt on a busy session is queued (steer, follow-up), rejected, or
interrupts the run, as its policy says.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Final

import structlog
import trio

from pitrio._awaitable import maybe_await
from pitrio._exceptions import UsageError
from pitrio.actors import AgentMessage, MessageEndEvent, MessageStartEvent
from pitrio.channels import Reply
from pitrio.providers import AssistantMessage, ImageContent, Model, TextContent, UserMessage, now_ms
from pitrio.sessions.runtime import _session_commands as cmd
from pitrio.sessions.runtime._session_core import SessionSlots
from pitrio.sessions.runtime._session_models import ack
from pitrio.sessions.storage._entries import CustomMessage

if TYPE_CHECKING:
    from pitrio.actors import Agent
    from pitrio.sessions.runtime._agent_session_compaction import SessionCompactor
    from pitrio.sessions.runtime._agent_session_types import AgentSessionEvent
    from pitrio.sessions.runtime._retry import Retry
    from pitrio.sessions.storage._manager import SessionManager

__all__ = ["NO_MODEL_SELECTED", "STREAMING_NEEDS_BEHAVIOR", "PromptCommands"]

log = structlog.get_logger(__name__)

STREAMING_NEEDS_BEHAVIOR: Final = (
    "Agent is already processing. Specify streaming_behavior ('steer' or 'follow_up') to queue "
    "the message."
)
NO_MODEL_SELECTED: Final = "No model selected. Select a model (set_model) before prompting."


class PromptCommands(SessionSlots):
    """Prompting; the actor provides the attributes and methods annotated here."""

    __slots__ = ()  # the attributes are SessionSlots' slots

    agent: Agent
    session_manager: SessionManager
    _nursery: trio.Nursery | None
    _compactor: SessionCompactor
    _has_auth: Any
    _base_system_prompt: str
    _last_assistant: AssistantMessage | None
    _pending_next_turn: tuple[AgentMessage, ...]
    _steering_texts: tuple[str, ...]
    _follow_up_texts: tuple[str, ...]

    @property
    def is_busy(self) -> bool:
        raise NotImplementedError

    @property
    def model(self) -> Model | None:
        raise NotImplementedError

    async def emit(self, event: AgentSessionEvent) -> None:
        raise NotImplementedError

    async def hook(self, name: str, *args: Any) -> Any:
        raise NotImplementedError

    async def _emit_queue_update(self) -> None:
        raise NotImplementedError

    def _abort_now(self) -> None:
        raise NotImplementedError

    def _start_job(
        self, reply: Reply[Any], work: Callable[[], Awaitable[Any]], cancelled: Any = None
    ) -> Any:
        raise NotImplementedError

    def exclusive(self) -> AbstractAsyncContextManager[None]:
        raise NotImplementedError

    async def flush_pending_bash(self) -> None:
        raise NotImplementedError

    async def drop_trailing_assistant(self, *, only_errors: bool = False) -> None:
        raise NotImplementedError

    def _retry_now(self) -> Retry:
        raise NotImplementedError

    async def _prompt(self, command: cmd.Prompt) -> None:
        if command.abandoned:
            command.reply.set(None)
            return
        if self.is_busy and command.policy != "interrupt":
            if command.policy == "follow_up":
                self._queue_follow_up(command.message, command.images)
            elif command.policy == "steer":
                self._queue_steer(command.message, command.images)
            else:
                raise UsageError(STREAMING_NEEDS_BEHAVIOR)
            ack(command.reply)
            await self._emit_queue_update()
            command.reply.set(None)
            return
        interrupt = self.is_busy
        if interrupt:
            self._abort_now()
        # A partial, not a lambda: fewer objects alive (and walked by the cyclic collector)
        # while the prompt runs.
        self._start_job(command.reply, functools.partial(self._prompt_job, command, interrupt))

    async def _prompt_job(self, command: cmd.Prompt, interrupt: bool) -> None:
        if interrupt:
            async with self.exclusive():
                pass
        await self.flush_pending_bash()
        model = self.model
        if model is None:
            raise UsageError(NO_MODEL_SELECTED)
        if self._has_auth is not None and not await maybe_await(self._has_auth(model)):
            raise UsageError(f"No API key found for {model.provider}.")
        text, images = command.message, command.images
        last = self._last_assistant_in_context()
        if last is not None:
            await self._compactor.check(last, skip_aborted_check=False)
        content: list[TextContent | ImageContent] = [TextContent(text=text)]
        content.extend(images or ())
        messages: list[AgentMessage] = [UserMessage(content=content, timestamp=now_ms())]
        messages.extend(self._pending_next_turn)
        self._pending_next_turn = ()
        start = await self.hook("before_agent_start", text, images, self._base_system_prompt)
        if start is not None:
            messages.extend(start.messages)
        system_prompt = start.system_prompt if start is not None else None
        system_prompt = system_prompt or self._base_system_prompt
        if system_prompt != self.agent.system_prompt:  # the common case sends no command
            await self.agent.set_system_prompt(system_prompt)
        if command.on_accepted is not None:
            await command.on_accepted()
        await self._drive(messages)

    async def _drive(self, prompt: AgentMessage | list[AgentMessage]) -> None:
        """Run the agent on ``prompt``, then retry / compact / continue until the session
        settles. (The prompt itself, not a callable that sends it: a closure and its cells
        would live as long as the run.)"""
        self._last_assistant = None
        assert self._nursery is not None
        await self.agent.ensure_started(self._nursery)
        await self.agent.prompt(prompt)
        while True:
            message, self._last_assistant = self._last_assistant, None
            if message is None or not await self._after_run(message):
                break
            try:
                await self.agent.continue_()
            except UsageError as exc:
                log.warning("continue_failed", error=str(exc))
                break

    async def _after_run(self, message: AssistantMessage) -> bool:
        """pi's agent_end handling: retry a transient error, else check compaction."""
        window = self.model.context_window if self.model is not None else 0
        # The failed response stays in the session file but leaves the context.
        retry = self._retry_now()
        if retry.is_retryable(message, window) and retry.enabled():
            # The backoff is a sleep in this job, inside the Retry's cancel scope, which
            # abort and abort_retry cancel (auto_retry_end then reports it).
            delay = await retry.schedule(message)
            if delay is not None:
                try:
                    await self.drop_trailing_assistant()
                except BaseException:
                    retry.abandon()
                    raise
                if await retry.wait(delay):
                    return True
        return await self._compactor.check(message)

    def _last_assistant_in_context(self) -> AssistantMessage | None:
        for message in reversed(self.agent.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    def _user_message(self, text: str, images: tuple[ImageContent, ...] | None) -> UserMessage:
        content: list[TextContent | ImageContent] = [TextContent(text=text)]
        content.extend(images or ())
        return UserMessage(content=content, timestamp=now_ms())

    def _queue_steer(self, text: str, images: tuple[ImageContent, ...] | None) -> None:
        self.agent.steer(self._user_message(text, images))
        self._steering_texts = (*self._steering_texts, text)

    def _queue_follow_up(self, text: str, images: tuple[ImageContent, ...] | None) -> None:
        self.agent.follow_up(self._user_message(text, images))
        self._follow_up_texts = (*self._follow_up_texts, text)

    async def _send_custom_message(self, command: cmd.SendCustomMessage) -> None:
        content = command.content
        message = CustomMessage(
            custom_type=command.custom_type,
            content=content if isinstance(content, str) else tuple(content),
            display=command.display,
            details=command.details,
            timestamp=now_ms(),
        )
        if command.deliver_as == "next_turn":
            self._pending_next_turn = (*self._pending_next_turn, message)
            command.reply.set(None)
        elif self.is_busy:
            if command.deliver_as == "follow_up":
                self.agent.follow_up(message)
            else:
                self.agent.steer(message)
            command.reply.set(None)
        elif command.trigger_turn:
            self._start_job(command.reply, functools.partial(self._drive, message))
        else:
            await self.agent.append_message(message)
            self.session_manager.append_custom_message_entry(
                command.custom_type, message.content, command.display, command.details
            )
            ack(command.reply)
            await self.emit(MessageStartEvent(message=message))
            await self.emit(MessageEndEvent(message=message))
            command.reply.set(None)
