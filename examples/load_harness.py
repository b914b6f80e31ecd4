"""The load harness from Python: 50 paced faux sessions at once, measured (``pitrio load``
runs the same harness from the command line: ``pitrio load --sessions 50 --prompts 2``).

Run: python examples/load_harness.py
"""

import trio

from pitrio.host import LoadConfig, run_load


async def main() -> None:
    config = LoadConfig(sessions=50, prompts=2, answer_chars=200, tokens_per_second=100)
    summary = await run_load(config)  # the JSON summary `pitrio load` prints
    for key in ("sessions_completed", "errors", "wall_s", "ideal_latency_s", "ttft_p99_ms"):
        print(f"{key}: {summary[key]}")
    print(f"loop_lag_p99_ms: {summary['loop_lag_p99_ms']}, events: {summary['events']}")


if __name__ == "__main__":
    trio.run(main)
