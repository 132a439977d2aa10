"""Per-stage latencies and drop/reject counters that every node reports.

ROS-free so the numbers a node publishes in TeleopStatus and diagnostics are
unit-tested; ``ros_conversions.make_teleop_status`` turns a snapshot into a message.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class LatencySummary:
    stage: str
    last: float
    p50: float
    p99: float
    count: int


class RollingLatency:
    """The last ``window`` durations of one stage [s], summarised on demand."""

    def __init__(self, window: int = 500):
        self._samples: deque[float] = deque(maxlen=window)
        self.count = 0

    def add(self, seconds: float) -> None:
        self._samples.append(float(seconds))
        self.count += 1

    def summary(self, stage: str) -> LatencySummary:
        if not self._samples:
            return LatencySummary(stage, 0.0, 0.0, 0.0, 0)
        arr = np.fromiter(self._samples, dtype=np.float64)
        return LatencySummary(
            stage, arr[-1], float(np.percentile(arr, 50)), float(np.percentile(arr, 99)), self.count
        )


@dataclass
class PipelineStats:
    """Latencies by stage, counted drops/rejects by reason, and active faults."""

    window: int = 500
    latencies: dict[str, RollingLatency] = field(default_factory=dict)
    dropped: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    outputs: int = 0
    faults: dict[str, str] = field(default_factory=dict)

    def record(self, stage: str, seconds: float) -> None:
        self.latencies.setdefault(stage, RollingLatency(self.window)).add(seconds)

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
        self.dropped[reason] += n

    def reject(self, reason: str, n: int = 1) -> None:
        """An input refused as invalid (NaN, wrong size, out of limits, jump)."""
        self.rejected[reason] += n

    def set_fault(self, key: str, description: str) -> None:
        self.faults[key] = description

    def clear_fault(self, key: str) -> None:
        self.faults.pop(key, None)

    def summaries(self) -> list[LatencySummary]:
        return [lat.summary(stage) for stage, lat in sorted(self.latencies.items())]

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())
