"""Per-stage latencies and drop/reject counters that every node reports, and counted events.

ROS-free so the numbers a node publishes in TeleopStatus and diagnostics are
unit-tested; ``ros_conversions.make_teleop_status`` turns a snapshot into a message.
Thread-safe: nodes count from worker threads (generation, command loop, LCM, session
threads) while their status timer reads, so every write and the snapshot a timer
reads go through one lock, and readers only ever see copies.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np


@dataclass(frozen=True)
class LatencySummary:
    stage: str
    last: float
    p50: float
    p99: float
    count: int


class RollingLatency:
    """The last ``window`` durations of one stage [s] (not locked itself: PipelineStats is)."""

    def __init__(self, window: int = 500):
        self._samples: deque[float] = deque(maxlen=window)
        self.count = 0

    def add(self, seconds: float) -> None:
        self._samples.append(float(seconds))
        self.count += 1

    def readings(self) -> tuple[np.ndarray, int]:
        """A copy of the window and the count so far: cheap to take under a lock."""
        return np.fromiter(self._samples, dtype=np.float64, count=len(self._samples)), self.count


def percentiles(samples: np.ndarray, quantiles: tuple[float, ...]) -> list[float]:
    """``np.percentile(samples, q)`` (its default linear method, the same floats) for each q, sorting once:
    two np.percentile calls on a 500-sample window took ~200 us, this ~5 us, and a node summarises every
    stage for each status and diagnostics message (the bridge at 10 Hz)."""
    ordered = np.sort(samples)
    last = len(ordered) - 1
    values = []
    for q in quantiles:
        position = last * (q / 100.0)
        below = int(position)
        fraction = position - below
        low, high = ordered[below], ordered[min(below + 1, last)]
        # numpy's lerp: from the nearer end, so a fraction of 1 gives `high` exactly
        values.append(float(high - (high - low) * (1 - fraction)) if fraction >= 0.5 else float(low + (high - low) * fraction))
    return values


def summarise(stage: str, samples: np.ndarray, count: int) -> LatencySummary:
    if not len(samples):
        return LatencySummary(stage, 0.0, 0.0, 0.0, 0)
    p50, p99 = percentiles(samples, (50, 99))
    return LatencySummary(stage, samples[-1], p50, p99, count)


@dataclass(frozen=True)
class StatsSnapshot:
    """One consistent reading of a PipelineStats: what a status message is made from."""

    latencies: tuple[LatencySummary, ...]
    dropped: Mapping[str, int]
    rejected: Mapping[str, int]
    outputs: int
    faults: Mapping[str, str]
    events: Mapping[str, int]

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())


class PipelineStats:
    """Latencies by stage, counted drops/rejects by reason, outputs, active faults, and events: what a node
    counts that is neither an input dropped nor one rejected (a cycle planned another way, a loop period
    skipped while nothing was owed), so it inflates neither total of /rynn/status."""

    def __init__(self, window: int = 500):
        self.window = window
        self._lock = threading.Lock()
        self._latencies: dict[str, RollingLatency] = {}
        self._dropped: Counter = Counter()
        self._rejected: Counter = Counter()
        self._events: Counter = Counter()
        self._outputs = 0
        self._faults: dict[str, str] = {}

    def record(self, stage: str, seconds: float) -> None:
        with self._lock:
            latency = self._latencies.get(stage)
            if latency is None:
                latency = self._latencies[stage] = RollingLatency(self.window)
            latency.add(seconds)

    @contextmanager
    def timed(self, stage: str):
        """``with stats.timed("dit"): ...`` records the block's wall time."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record(stage, time.perf_counter() - start)

    def drop(self, reason: str, n: int = 1) -> None:
        """An input that was valid but not used (stale, out of order, superseded)."""
        with self._lock:
            self._dropped[reason] += n

    def reject(self, reason: str, n: int = 1) -> None:
        """An input refused as invalid (NaN, wrong size, out of limits, jump)."""
        with self._lock:
            self._rejected[reason] += n

    def count_output(self, n: int = 1) -> None:
        with self._lock:
            self._outputs += n

    def set_totals(self, *, outputs: int | None = None, dropped: Mapping[str, int] | None = None,
                   rejected: Mapping[str, int] | None = None, events: Mapping[str, int] | None = None) -> None:
        """Mirror counters another component keeps (absolute totals by reason, not increments)."""
        with self._lock:
            if outputs is not None:
                self._outputs = int(outputs)
            for reason, n in (dropped or {}).items():
                self._dropped[reason] = int(n)
            for reason, n in (rejected or {}).items():
                self._rejected[reason] = int(n)
            for name, n in (events or {}).items():
                self._events[name] = int(n)

    def set_fault(self, key: str, description: str) -> None:
        with self._lock:
            self._faults[key] = description

    def clear_fault(self, key: str) -> None:
        with self._lock:
            self._faults.pop(key, None)

    def replace_faults(self, faults: Mapping[str, str]) -> None:
        """The active faults are exactly ``faults`` (for a node whose core decides them all)."""
        with self._lock:
            self._faults = dict(faults)

    def snapshot(self) -> StatsSnapshot:
        """Copies taken under the lock; the percentiles are computed after it is released."""
        with self._lock:
            readings = [(stage, *lat.readings()) for stage, lat in sorted(self._latencies.items())]
            dropped, rejected, events = Counter(self._dropped), Counter(self._rejected), Counter(self._events)
            outputs, faults = self._outputs, dict(self._faults)
        return StatsSnapshot(
            latencies=tuple(summarise(*reading) for reading in readings),
            dropped=MappingProxyType(dropped),
            rejected=MappingProxyType(rejected),
            outputs=outputs,
            faults=MappingProxyType(faults),
            events=MappingProxyType(events),
        )

    # Read-only views for code and tests that read one part: copies, never the live state.
    @property
    def latencies(self) -> Mapping[str, LatencySummary]:
        return MappingProxyType({summary.stage: summary for summary in self.snapshot().latencies})

    @property
    def dropped(self) -> Mapping[str, int]:
        with self._lock:
            return MappingProxyType(Counter(self._dropped))

    @property
    def rejected(self) -> Mapping[str, int]:
        with self._lock:
            return MappingProxyType(Counter(self._rejected))

    @property
    def faults(self) -> Mapping[str, str]:
        with self._lock:
            return MappingProxyType(dict(self._faults))

    @property
    def outputs(self) -> int:
        with self._lock:
            return self._outputs
