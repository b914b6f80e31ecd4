"""The configuration of a ``pitrio load`` run, its presets, and what its session runners share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs
import trio

from pitrio.host.load._report import LoadTally


@attrs.frozen(kw_only=True)
class LoadConfig:
    """What ``pitrio load`` runs (every field is a command-line option)."""

    sessions: int = 10
    """How many sessions (conversations)."""
    prompts: int = 1
    """Prompts per session, one after the other."""
    answer_chars: int = 400
    """Characters of the faux model's final answer (100 tokens of 4 characters for 400)."""
    tool_call: bool = True
    """Every prompt makes the model call ``echo`` once, then answer (pi's response script)."""
    tokens_per_second: float | None = 50.0
    """The faux model's pace (None or 0: unpaced). With a real server: the pace to subtract
    from the gaps between tokens (None: report the plain gaps)."""
    ramp: float = 0.0
    """Sessions started per second; 0 starts them all together (created first, then every
    prompt sent at once)."""
    warmup: int = 0
    """In-process: sessions that run one prompt before measuring (pi's scenario 3: 5)."""
    timeout: float = 600.0
    """Seconds after which the run stops; unfinished sessions count as ``timeout`` errors."""
    target: str = "inproc"
    """``inproc``, or ``ws://HOST:PORT`` of a running ``pitrio serve``."""
    token: str | None = None
    """The host's bearer token (websocket target)."""
    base_url: str | None = None
    """An OpenAI-compatible server (``.../v1``) instead of the faux model (in-process)."""
    model: str | None = None
    """The server's model id (with ``base_url``); for a websocket target, ``provider/id``
    passed to ``create_session``."""
    api_key_env: str | None = None
    """The environment variable holding the server's API key (default: ``OPENAI_API_KEY``)."""
    session_dir: str | None = None
    """In-process: write session files here (``"temp"``: a temporary directory, removed
    afterwards); None keeps sessions in memory, as pi's scenario 3."""
    fail_every: int = 0
    """Faux: the answers of every k-th session end with an error (exercises error counting)."""
    preset: str | None = None
    """The preset these values came from (reported)."""

    @property
    def paced(self) -> float | None:
        """The pace in tokens/s, or None when unpaced."""
        return self.tokens_per_second if self.tokens_per_second else None


LOAD_PRESETS: Final[Mapping[str, Mapping[str, Any]]] = {
    # pi's scenarios/concurrent_sessions.mjs --n=5000 (its defaults: --tps=50 --answerChars=400):
    # 5 warm-up sessions, N in-memory sessions created first, then one prompt each, all at once;
    # every prompt is an echo call (6 deltas) and a 400-character answer (100 deltas).
    "pi-scenario-3": {
        "sessions": 5000,
        "prompts": 1,
        "answer_chars": 400,
        "tool_call": True,
        "tokens_per_second": 50.0,
        "ramp": 0.0,
        "warmup": 5,
        "timeout": 600.0,
    },
    # A few seconds: 20 sessions ramped in over a second, two prompts each, short answers.
    "smoke": {
        "sessions": 20,
        "prompts": 2,
        "answer_chars": 80,
        "tool_call": True,
        "tokens_per_second": 100.0,
        "ramp": 20.0,
        "warmup": 0,
        "timeout": 60.0,
    },
}
"""Named configurations (``--preset``); explicit options override their values."""


class StartGate:
    """Holds every session's first prompt until all sessions exist (all-at-once start)."""

    def __init__(self, sessions: int, hold: bool) -> None:
        self.waiting = sessions
        self.hold = hold
        self.ready = trio.Event()
        self.go = trio.Event()
        if sessions == 0:
            self.ready.set()

    def arrived(self) -> None:
        """One session exists (or failed to come into existence)."""
        self.waiting -= 1
        if self.waiting <= 0:
            self.ready.set()

    async def wait(self) -> None:
        """Return when this session may send its first prompt."""
        if self.hold:
            await self.go.wait()


@attrs.define(slots=True, eq=False)
class RunContext:
    """What every session runner needs."""

    config: LoadConfig
    tally: LoadTally
    nursery: trio.Nursery
    gate: StartGate
