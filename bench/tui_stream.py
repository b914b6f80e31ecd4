"""Stream a 100 KB Markdown answer (with code blocks) into the interactive UI, as fast as the
faux model can send it, and report how the UI kept up.

The UI runs in process on a pseudo-terminal whose other side is drained (nothing is drawn);
the faux model streams four characters per delta with no pacing. Reported:

* deltas and the stream's duration (first to last delta);
* frames written while streaming, and render time per frame (mean, p50, p99, max);
* lag: from the last delta to the first frame written after it (what the user waits to see
  the end of the answer).

Usage: ``python bench/tui_stream.py [--kb 100] [--columns 120] [--rows 40]
[--tokens-per-second N]``
"""

from __future__ import annotations

import argparse
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import trio

from pitrio.cli._extensions import load_cli_extensions
from pitrio.cli._interactive import run_interactive_session
from pitrio.cli._main import parse_cli_args
from pitrio.cli._setup import build_runtime
from pitrio.tui import TuiExtensionUI

CODE = '''```python
def fibonacci(n: int) -> list[int]:
    """The first n Fibonacci numbers."""
    numbers = [0, 1]
    while len(numbers) < n:
        numbers.append(numbers[-1] + numbers[-2])
    return numbers[:n]
```'''


def make_answer(size: int) -> str:
    parts: list[str] = []
    section = 0
    while sum(len(p) for p in parts) < size:
        section += 1
        parts.append(f"## Section {section}\n")
        parts.append(
            f"This paragraph explains step {section} with **bold** words, `inline code` and a "
            "[link](https://example.com). " * 3 + "\n"
        )
        parts.append("- first point of the list\n- second point, a little longer than the first\n")
        parts.append(CODE + "\n")
    return "\n".join(parts)[:size]


class _WatchedUI(TuiExtensionUI):
    """Says when the app is up."""

    def __init__(self) -> None:
        super().__init__()
        self.attached = trio.Event()

    def attach(self, app: Any) -> None:
        super().attach(app)
        if app is not None:
            self.attached.set()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(size: int, columns: int, rows: int, speed: float) -> dict[str, Any]:
    import fcntl
    import struct
    import termios

    root = Path(tempfile.mkdtemp(prefix="pitrio-tui-bench-"))
    (root / "project").mkdir()
    answer = make_answer(size)
    (root / "faux.json").write_text(json.dumps([answer]))
    env = {
        "HOME": str(root / "home"),
        "PITRIO_CODING_AGENT_DIR": str(root / "agent"),
        "PITRIO_FAUX_SCRIPT": str(root / "faux.json"),
        "PITRIO_FAUX_TOKENS_PER_SECOND": str(speed),
    }
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    args = parse_cli_args(["--provider", "faux", "--no-session"])
    cwd = str(root / "project")
    ui = _WatchedUI()
    runner, args = await trio.to_thread.run_sync(
        lambda: load_cli_extensions(args, cwd=cwd, env=env, err=io.StringIO(), ui=ui)
    )
    runtime = attrs.evolve(
        build_runtime(args, cwd=cwd, env=env, warn=lambda m: None, require_auth=False),
        extensions=runner,
    )
    deltas: list[float] = []
    writes: list[float] = []
    render_times: list[float] = []
    done = trio.Event()
    shown = trio.Event()
    result: dict[str, Any] = {}

    async def drain() -> None:
        while True:
            await trio.lowlevel.wait_readable(master)
            try:
                if not os.read(master, 1 << 20):
                    return
            except OSError:
                return

    async def drive() -> None:
        await ui.attached.wait()
        app = ui.app
        assert app is not None
        on_event = app.on_event
        frame = app._frame
        write = app.terminal.write

        def counting_on_event(event: Any) -> None:
            if getattr(event, "type", "") == "message_update":
                deltas.append(time.perf_counter())
            on_event(event)
            if getattr(event, "type", "") == "agent_end":
                done.set()

        def timed_frame() -> str:
            started = time.perf_counter()
            data = frame()
            if data:
                render_times.append(time.perf_counter() - started)
            return data

        async def timed_write(data: str) -> None:
            await write(data)
            writes.append(time.perf_counter())
            if done.is_set() and writes[-1] >= deltas[-1]:
                shown.set()

        app.on_event = counting_on_event  # type: ignore[method-assign]
        app._frame = timed_frame  # type: ignore[method-assign]
        app.terminal.write = timed_write  # type: ignore[method-assign]
        app.editor.set_text("Write the long answer")
        app.submit()
        await done.wait()
        with trio.fail_after(60):
            await shown.wait()  # the first frame written after the last delta
        last = deltas[-1]
        after = [t for t in writes if t >= last]
        result.update(
            {
                "answer_bytes": len(answer.encode()),
                "deltas": len(deltas),
                "stream_seconds": round(last - deltas[0], 3),
                "frames_while_streaming": sum(1 for t in writes if deltas[0] <= t <= last),
                "frames_total": len(render_times),
                "full_redraws": app.renderer.full_frames,
                "render_ms_mean": round(1000 * sum(render_times) / len(render_times), 3),
                "render_ms_p50": round(1000 * percentile(render_times, 0.5), 3),
                "render_ms_p99": round(1000 * percentile(render_times, 0.99), 3),
                "render_ms_max": round(1000 * max(render_times), 3),
                "lag_last_delta_to_frame_ms": round(1000 * (after[0] - last), 3) if after else None,
                "columns": columns,
                "rows": rows,
            }
        )
        app.quit()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain)
            nursery.start_soon(drive)
            await run_interactive_session(
                runtime, args=args, ui=ui, cwd=cwd, fd_in=slave, fd_out=slave, err=io.StringIO()
            )
            nursery.cancel_scope.cancel()
    finally:
        os.close(master)
        os.close(slave)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=int, default=100)
    parser.add_argument("--columns", type=int, default=120)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument(
        "--tokens-per-second",
        type=float,
        default=0,
        help="pace the stream (a token is four characters); 0: unlimited (default)",
    )
    options = parser.parse_args()
    report = trio.run(
        run, options.kb * 1024, options.columns, options.rows, options.tokens_per_second
    )
    report["tokens_per_second"] = options.tokens_per_second or "unlimited"
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
