"""SSE events parsed per second, per wire API, from a large recorded-style stream.

Two measurements per API, on the same bytes (the loopback fixtures' ``big_stream``, which the
test suite checks against each official SDK's types):

* ``decode``: the bare :class:`~pitrio.providers._sse.SSEDecoder` fed 16 KiB reads, plus the
  JSON parse of each event's data: the floor every provider stands on.
* ``provider``: the whole provider over real loopback HTTP: httpx reads the chunked response,
  the provider decodes it, builds the message and pushes pi's events to a consumer that drains
  them. This is what an agent pays per SSE event.

Usage::

    .venv/bin/python bench/sse_parse.py [--chars 1000000] [--api all|openai-completions|...]

Prints one JSON object per API and, on the last line, one JSON object with every result.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "providers"))

from pitrio.providers import (
    Context,
    Model,
    StreamOptions,
    UserMessage,
    default_catalogue,
    default_registry,
    stream,
)
from pitrio.providers._builtins import register_builtin_providers
from pitrio.providers._http import open_http_client
from pitrio.providers._sse import SSEDecoder

import fixtures_anthropic
import fixtures_google
import fixtures_openai_completions
import fixtures_openai_responses
from _common import emit
from loopback import serve, split_every, sse_handler

READ_SIZE = 16 * 1024
APIS: dict[str, tuple[Any, str, str, str]] = {
    # api: (fixture module, catalogue provider, model id, base-url path on the loopback server)
    "openai-completions": (fixtures_openai_completions, "openai", "gpt-4o-mini", "/v1"),
    "openai-responses": (fixtures_openai_responses, "openai", "gpt-5", "/v1"),
    "anthropic-messages": (fixtures_anthropic, "anthropic", "claude-sonnet-4-5", ""),
    "google-generative-ai": (fixtures_google, "google", "gemini-2.5-flash", "/v1beta"),
}


def bench_decode(body: bytes) -> dict[str, Any]:
    reads = split_every(body, READ_SIZE)
    best = float("inf")
    count = 0
    for _ in range(3):
        start = time.perf_counter()
        decoder = SSEDecoder()
        count = 0
        for read in reads:
            for event in decoder.feed(read):
                if event.data != "[DONE]":
                    orjson.loads(event.data)
                count += 1
        best = min(best, time.perf_counter() - start)
    return {"events": count, "seconds": best, "events_per_s": count / best}


async def bench_provider(api: str, body: bytes, sse_events: int) -> dict[str, Any]:
    _, provider, model_id, path = APIS[api]
    base = default_catalogue.get(provider, model_id)
    if base is None:
        raise SystemExit(f"catalogue has no {provider}/{model_id}")
    context = Context(
        system_prompt="You are a benchmark.",
        messages=[UserMessage(content="Write a long answer.", timestamp=0)],
    )
    best = float("inf")
    pushed = 0
    async with (
        serve(sse_handler(split_every(body, READ_SIZE))) as server,
        open_http_client(),
    ):
        model: Model = attrs.evolve(base, api=api, base_url=server.url(path))
        for _ in range(3):
            start = time.perf_counter()
            pushed = 0
            async with stream(model, context, StreamOptions(api_key="bench")) as events:
                async for event in events:
                    pushed += 1
                    last = event
            best = min(best, time.perf_counter() - start)
            if last.type != "done":
                raise SystemExit(f"{api}: stream ended with {last.type}: {last}")
    return {
        "sse_events": sse_events,
        "pushed_events": pushed,
        "seconds": best,
        "events_per_s": sse_events / best,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000, help="answer size (characters)")
    parser.add_argument("--api", default="all", choices=["all", *APIS])
    args = parser.parse_args()
    register_builtin_providers(default_registry)
    results = []
    for api in APIS if args.api == "all" else [args.api]:
        body = APIS[api][0].big_stream(args.chars)
        decode = bench_decode(body)
        result = {
            "api": api,
            "chars": args.chars,
            "bytes": len(body),
            "decode": decode,
            "provider": await bench_provider(api, body, decode["events"]),
        }
        print(orjson.dumps(result).decode(), flush=True)
        results.append(result)
    emit({"benchmark": "sse_parse", "results": results})


if __name__ == "__main__":
    trio.run(main)
