"""What ``pitrio load`` and ``bench/`` measure with: RSS, event-loop lag, percentiles.

These are the measuring tools of pi's benchmark scenarios (``lib/common.mjs`` of the pi
baseline): an RSS sampler on the event loop (every 25 ms in scenario 3), an event-loop lag
monitor (a task that sleeps 10 ms and records how late it woke up), and pi's nearest-rank
percentile. ``bench/_common.py`` imports them from here so the benchmarks and the load harness
measure the same way. :class:`Histogram` keeps a distribution in constant memory (the load
harness records one value per streamed token, hundreds of thousands in a big run).

Time is read only through :func:`trio.current_time`, so under ``MockClock`` every figure is
deterministic (and the loop lag is zero).
"""

from __future__ import annotations

import math
import resource
from collections.abc import Iterable
from typing import Final

import trio

PAGE_SIZE: Final = resource.getpagesize()
HISTOGRAM_SUB_BUCKETS: Final = 128
"""Buckets per power of two above 128 µs: a recorded value is off by at most 1/128 (0.8 %)."""


def percentile(sorted_values: list[float], p: float) -> float:
    """pi's nearest-rank percentile of an ascending, non-empty list: the value at rank
    ``ceil(p / 100 * n)``."""
    index = min(len(sorted_values) - 1, max(0, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


# --------------------------------------------------------------------------- memory


def current_rss_bytes() -> int:
    """The process's resident set size now (``VmRSS``, as pi's ``process.memoryUsage().rss``).

    Read from ``/proc/self/statm``, which holds the same figure as ``VmRSS`` in
    ``/proc/self/status`` and is cheaper to parse (it is read 40 times a second).
    """
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * PAGE_SIZE


def peak_rss_bytes() -> int | None:
    """The kernel's peak resident set size of this process (``VmHWM``), if readable."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset ``VmHWM`` to the current RSS (``echo 5 > /proc/self/clear_refs``), so that a later
    :func:`peak_rss_bytes` is the peak since now; False when the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True


class RssSampler:
    """pi's ``startRssSampler``: the RSS every ``interval`` seconds on the event loop, the peak.

    Run ``nursery.start_soon(sampler.run)``; ``stop()`` takes a last sample, ends the task and
    returns the peak in bytes. Sampling on the event loop (not in a thread) is what pi does: a
    loop that is too busy to sample also misses peaks, and the kernel's ``VmHWM`` is the check.
    """

    def __init__(self, interval: float = 0.025) -> None:
        self.interval = interval
        self.peak = current_rss_bytes()
        self.last = self.peak
        self.samples = 0
        self._scope = trio.CancelScope()

    def _tick(self) -> None:
        self.samples += 1
        self.last = current_rss_bytes()
        if self.last > self.peak:
            self.peak = self.last

    async def run(self) -> None:
        """Sample until :meth:`stop`."""
        with self._scope:
            while True:
                await trio.sleep(self.interval)
                self._tick()

    def stop(self) -> int:
        """Take a last sample, stop sampling and return the peak RSS in bytes."""
        self._scope.cancel()
        self._tick()
        return self.peak


class LagMonitor:
    """Event-loop lag as pi measures it: a task sleeps ``resolution`` seconds in a loop and
    records how much later than asked it woke up (0 = no lag).

    Run ``nursery.start_soon(monitor.run)``; ``stop()`` returns pi's ``lag_*_ms`` fields.
    """

    def __init__(self, resolution: float = 0.010) -> None:
        self.resolution = resolution
        self.lags: list[float] = []
        self._scope = trio.CancelScope()

    async def run(self) -> None:
        """Measure until :meth:`stop`."""
        clock = trio.current_time
        with self._scope:
            while True:
                start = clock()
                await trio.sleep(self.resolution)
                self.lags.append(max(0.0, clock() - start - self.resolution))

    def p99(self) -> float | None:
        """The 99th percentile lag so far, in seconds (for a live progress line)."""
        return percentile(sorted(self.lags), 99) if self.lags else None

    def stop(self) -> dict[str, float | None]:
        """Stop measuring; ``lag_mean_ms``, ``lag_p50_ms``, ``lag_p99_ms``, ``lag_max_ms``,
        ``lag_resolution_ms`` and ``lag_samples`` (only the first three, as None, when no
        sample was taken)."""
        self._scope.cancel()
        lags = sorted(self.lags)
        if not lags:
            return {"lag_mean_ms": None, "lag_p50_ms": None, "lag_p99_ms": None}
        return {
            "lag_mean_ms": round(sum(lags) / len(lags) * 1e3, 3),
            "lag_p50_ms": round(percentile(lags, 50) * 1e3, 3),
            "lag_p99_ms": round(percentile(lags, 99) * 1e3, 3),
            "lag_max_ms": round(lags[-1] * 1e3, 3),
            "lag_resolution_ms": self.resolution * 1e3,
            "lag_samples": len(lags),
        }


# --------------------------------------------------------------------------- distributions


def _bucket(us: int) -> int:
    shift = max(0, us.bit_length() - 7)
    return (shift << 7) | (us >> shift)


def _bucket_bounds(key: int) -> tuple[int, int]:
    shift, mantissa = key >> 7, key & (HISTOGRAM_SUB_BUCKETS - 1)
    return mantissa << shift, ((mantissa + 1) << shift) - 1


class Histogram:
    """A distribution of durations in constant memory (log-linear buckets of microseconds).

    Values under 128 µs are kept exactly; larger ones in 128 buckets per power of two, so a
    percentile is off by at most 0.8 %. A percentile is the middle of its bucket clamped to the
    exact minimum and maximum seen, so a distribution of one repeated value reports that value.
    Negative values count as zero.
    """

    __slots__ = ("_counts", "count", "max", "min", "total")

    def __init__(self, values: Iterable[float] = ()) -> None:
        self._counts: dict[int, int] = {}
        self.count = 0
        self.total = 0.0
        self.min = math.inf
        self.max = 0.0
        for value in values:
            self.add(value)

    def add(self, seconds: float) -> None:
        """Record one duration."""
        seconds = max(0.0, seconds)
        key = _bucket(round(seconds * 1e6))
        self._counts[key] = self._counts.get(key, 0) + 1
        self.count += 1
        self.total += seconds
        self.min = min(self.min, seconds)
        self.max = max(self.max, seconds)

    def update(self, other: Histogram) -> None:
        """Add every value ``other`` recorded."""
        for key, n in other._counts.items():
            self._counts[key] = self._counts.get(key, 0) + n
        self.count += other.count
        self.total += other.total
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)

    def percentile(self, p: float) -> float | None:
        """The nearest-rank ``p``-th percentile in seconds (None when empty)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(p / 100 * self.count))
        seen = 0
        for key in sorted(self._counts):
            seen += self._counts[key]
            if seen >= rank:
                low, high = _bucket_bounds(key)
                middle = (low + high) / 2e6
                return min(self.max, max(self.min, middle))
        return self.max  # unreachable: the counts add up to self.count

    def mean(self) -> float | None:
        """The mean in seconds (None when empty)."""
        return self.total / self.count if self.count else None
