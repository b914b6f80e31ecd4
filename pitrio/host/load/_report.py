"""What ``pitrio load`` counts while it runs, its live progress line and its JSON summary.

Every session runner observes its own events (:class:`PromptObserver`) and sends one
:class:`PromptResult` per prompt through a bounded channel to the collector
(:class:`LoadTally`), which folds them into constant-memory histograms. Running totals that the
progress line shows every second (events, tokens) are plain counters on the tally: the harness
runs on one Trio thread, so the runners increment them directly.

Definitions (also in the README's load-testing section):

* **time to first token (TTFT)**: from the moment the harness sends a prompt (calls
  ``AgentSession.prompt`` or writes the websocket frame) to the first streamed delta of the
  answer (text, thinking or tool-call arguments).
* **per-token lag**: for each delta after the first of an assistant message, the gap since the
  previous delta minus the pacing interval the provider was asked for (``ceil(chars / 4) /
  tokens_per_second``, the faux provider's sleep before that delta), floored at zero. Without a
  known pace (a real server and no ``--tokens-per-second``) the interval is zero and the figure
  is the plain gap between tokens.
* **latency**: from sending a prompt to its ``agent_end``.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Mapping
from typing import Any, Final, TextIO

import attrs
import trio

import pitrio
from pitrio.actors import MessageEndEvent, MessageStartEvent, MessageUpdateEvent
from pitrio.host.load._measure import Histogram
from pitrio.providers import (
    AssistantMessage,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
)

ERROR_SAMPLES: Final = 5
"""How many error messages the summary quotes (the first ones; the counts cover all)."""
_DELTA_TYPES: Final = (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)
_WIRE_DELTAS: Final = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})


@attrs.define(slots=True)
class PromptResult:
    """One prompt of one session, as its runner saw it."""

    session: int
    """The session's number (0-based)."""
    ttft: float | None
    """Seconds from sending the prompt to the first delta (None: no delta came)."""
    latency: float
    """Seconds from sending the prompt to its end (``agent_end``, or the failure)."""
    lags: list[float]
    """The per-token lags of this prompt, in seconds."""
    error_kind: str | None = None
    """What went wrong (None: nothing), e.g. ``llm_error`` or ``exception:UsageError``."""
    error_message: str | None = None
    last: bool = False
    """This was the session's last prompt: the session's conversation is over."""


class PromptObserver:
    """Times one session's events: TTFT, per-token lags, the answer's error (if any).

    Call :meth:`begin` when sending a prompt, feed every event to :meth:`on_event` (in-process
    event objects) or :meth:`on_wire` (websocket JSON objects), then :meth:`finish`.

    Args:
        tally: where the running totals are counted.
        tokens_per_second: the provider's pace (None: unknown, lags are plain gaps).
    """

    __slots__ = ("began", "error", "first", "lags", "prev", "tally", "tps")

    def __init__(self, tally: LoadTally, tokens_per_second: float | None) -> None:
        self.tally = tally
        self.tps = tokens_per_second if tokens_per_second else None
        self.began = 0.0
        self.first: float | None = None
        self.prev: float | None = None
        self.lags: list[float] = []
        self.error: tuple[str, str] | None = None

    def begin(self) -> None:
        """A prompt is being sent now."""
        self.began = trio.current_time()
        self.first = self.prev = None
        self.lags = []
        self.error = None

    def _delta(self, text: str, is_text: bool) -> None:
        now = trio.current_time()
        tally = self.tally
        tally.tokens += 1
        if is_text:
            tally.text_deltas += 1
        if self.first is None:
            self.first = now - self.began
        elif self.prev is not None:
            interval = math.ceil(len(text) / 4) / self.tps if self.tps else 0.0
            self.lags.append(max(0.0, now - self.prev - interval))
        self.prev = now

    def on_event(self, event: Any) -> None:
        """Observe one in-process session event (a subscriber callback)."""
        self.tally.events += 1
        kind = type(event)
        if kind is MessageUpdateEvent:
            inner = event.assistant_message_event
            if type(inner) in _DELTA_TYPES:
                self._delta(inner.delta, type(inner) is TextDeltaEvent)
        elif kind is MessageStartEvent:
            self.prev = None
        elif kind is MessageEndEvent:
            message = event.message
            if isinstance(message, AssistantMessage) and message.stop_reason in (
                "error",
                "aborted",
            ):
                kind_name = "llm_error" if message.stop_reason == "error" else "llm_aborted"
                self.error = (kind_name, message.error_message or "")

    def on_wire(self, event: Mapping[str, Any]) -> None:
        """Observe one event frame of the websocket host (pi's JSON event shape)."""
        self.tally.events += 1
        kind = event.get("type")
        if kind == "message_update":
            inner = event.get("assistantMessageEvent") or {}
            if inner.get("type") in _WIRE_DELTAS:
                self._delta(str(inner.get("delta", "")), inner.get("type") == "text_delta")
        elif kind == "message_start":
            self.prev = None
        elif kind == "message_end":
            message = event.get("message") or {}
            stop = message.get("stopReason")
            if message.get("role") == "assistant" and stop in ("error", "aborted"):
                kind_name = "llm_error" if stop == "error" else "llm_aborted"
                self.error = (kind_name, str(message.get("errorMessage") or ""))

    def finish(
        self, session: int, *, last: bool, error: tuple[str, str] | None = None
    ) -> PromptResult:
        """The result of the prompt that :meth:`begin` started; ``error`` overrides what the
        events said (an exception, a refused command)."""
        kind, message = error or self.error or (None, None)
        return PromptResult(
            session=session,
            ttft=self.first,
            latency=trio.current_time() - self.began,
            lags=self.lags,
            error_kind=kind,
            error_message=message,
            last=last,
        )


@attrs.define(slots=True, eq=False)
class LoadTally:
    """Everything counted during a run (the collector's state and the live counters)."""

    sessions: int
    """How many sessions the run starts."""
    started: int = 0
    created: int = 0
    events: int = 0
    tokens: int = 0
    text_deltas: int = 0
    prompts_completed: int = 0
    prompts_failed: int = 0
    finished: set[int] = attrs.field(factory=set)
    """The sessions whose conversation ran to its end (with or without errors)."""
    failed_sessions: set[int] = attrs.field(factory=set)
    ttft: Histogram = attrs.field(factory=Histogram)
    token_lag: Histogram = attrs.field(factory=Histogram)
    latency: Histogram = attrs.field(factory=Histogram)
    errors_by_kind: dict[str, int] = attrs.field(factory=dict)
    error_samples: list[str] = attrs.field(factory=list)
    first_result_at: float | None = None
    last_result_at: float | None = None

    def error(self, session: int, kind: str, message: str | None) -> None:
        """Count one error of ``session``."""
        self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1
        self.failed_sessions.add(session)
        if len(self.error_samples) < ERROR_SAMPLES:
            self.error_samples.append(f"session {session}: {kind}: {message or ''}".rstrip(": "))

    def record(self, result: PromptResult) -> None:
        """Fold one prompt's result into the totals."""
        now = trio.current_time()
        if self.first_result_at is None:
            self.first_result_at = now
        self.last_result_at = now
        if result.ttft is not None:
            self.ttft.add(result.ttft)
        for lag in result.lags:
            self.token_lag.add(lag)
        self.latency.add(result.latency)
        self.prompts_completed += 1
        if result.error_kind is not None:
            self.prompts_failed += 1
            self.error(result.session, result.error_kind, result.error_message)
        if result.last:
            self.finished.add(result.session)

    @property
    def sessions_completed(self) -> int:
        """How many sessions ran their conversation to its end."""
        return len(self.finished)

    def timed_out(self) -> None:
        """The run's deadline passed: every session not finished counts one ``timeout``."""
        for session in range(self.sessions):
            if session not in self.finished:
                self.error(session, "timeout", "the run's --timeout passed first")

    async def collect(self, results: trio.MemoryReceiveChannel[PromptResult]) -> None:
        """Fold results until every sender has closed its end."""
        async with results:
            async for result in results:
                self.record(result)

    @property
    def errors(self) -> int:
        """Every error counted."""
        return sum(self.errors_by_kind.values())


# --------------------------------------------------------------------------- progress


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.1f} ms"


class ProgressLine:
    """The live progress line on stderr: rewritten in place (``\\r``) on a terminal, one line
    per tick otherwise.

    Args:
        stream: where to write (stderr).
        tally: what to show.
        interval: seconds between lines.
        rss: a callable returning the current RSS in bytes (None: not shown).
        loop_lag_p99: a callable returning the event-loop lag p99 so far.
    """

    def __init__(
        self,
        stream: TextIO,
        tally: LoadTally,
        *,
        interval: float = 1.0,
        rss: Any = None,
        loop_lag_p99: Any = None,
    ) -> None:
        self.stream = stream
        self.tally = tally
        self.interval = interval
        self.rss = rss
        self.loop_lag_p99 = loop_lag_p99
        try:
            self.tty = stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False
        self._scope = trio.CancelScope()
        self._started = 0.0
        self._last_events = 0
        self._written = False

    def line(self, elapsed: float, events_per_s: float) -> str:
        """The text of one progress line."""
        t = self.tally
        parts = [
            f"pitrio load {elapsed:6.1f}s",
            f"sessions {t.started}/{t.sessions} started, {t.sessions_completed} done, "
            f"{len(t.failed_sessions)} failed",
            f"{events_per_s:,.0f} events/s",
            f"ttft p50 {_ms(t.ttft.percentile(50))}",
            f"token lag p99 {_ms(t.token_lag.percentile(99))}",
        ]
        if self.loop_lag_p99 is not None:
            parts.append(f"loop lag p99 {_ms(self.loop_lag_p99())}")
        if self.rss is not None:
            parts.append(f"rss {self.rss() / 2**20:,.0f} MB")
        return " | ".join(parts)

    def _write(self, now: float, last: float) -> None:
        dt = now - last
        events_per_s = (self.tally.events - self._last_events) / dt if dt > 0 else 0.0
        self._last_events = self.tally.events
        text = self.line(now - self._started, events_per_s)
        if self.tty:
            self.stream.write(f"\r{text}\x1b[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._written = True

    async def run(self) -> None:
        """Write a line every ``interval`` seconds until :meth:`stop`."""
        self._started = last = trio.current_time()
        with self._scope:
            while True:
                await trio.sleep(self.interval)
                now = trio.current_time()
                self._write(now, last)
                last = now

    def stop(self) -> None:
        """Stop, ending a rewritten line with a newline."""
        self._scope.cancel()
        if self.tty and self._written:
            self.stream.write("\n")
            self.stream.flush()


# --------------------------------------------------------------------------- summary


def _round(value: float | None, scale: float = 1.0, digits: int = 3) -> float | None:
    return None if value is None else round(value * scale, digits)


def environment() -> dict[str, str]:
    """The versions a summary is tied to."""
    return {
        "python": platform.python_version(),
        "trio": trio.__version__,
        "pitrio": pitrio.__version__,
    }


def distribution_fields(tally: LoadTally) -> dict[str, float | None]:
    """The TTFT, per-token lag and latency percentiles of the summary."""
    return {
        "ttft_p50_ms": _round(tally.ttft.percentile(50), 1e3),
        "ttft_p99_ms": _round(tally.ttft.percentile(99), 1e3),
        "ttft_max_ms": _round(tally.ttft.max if tally.ttft.count else None, 1e3),
        "token_lag_mean_ms": _round(tally.token_lag.mean(), 1e3),
        "token_lag_p50_ms": _round(tally.token_lag.percentile(50), 1e3),
        "token_lag_p99_ms": _round(tally.token_lag.percentile(99), 1e3),
        "token_lag_max_ms": _round(tally.token_lag.max if tally.token_lag.count else None, 1e3),
        "latency_p50_s": _round(tally.latency.percentile(50)),
        "latency_p99_s": _round(tally.latency.percentile(99)),
        "latency_max_s": _round(tally.latency.max if tally.latency.count else None),
    }
