"""A thread that calls a function at a fixed rate on absolute deadlines.

The 200 Hz command stream runs here rather than in an rclpy timer so that
image relays in the executor cannot delay it; a late cycle never causes a
burst of catch-up cycles (missed deadlines are skipped and counted).
"""

from __future__ import annotations

import threading
import time
from typing import Callable


def next_deadline(previous: float, now: float, period: float) -> tuple[float, int]:
    """(the deadline after ``previous``, periods skipped): whole periods already past are skipped, not run in a burst."""
    deadline = previous + period
    whole_periods_late = max(0, int((now - deadline) / period))
    return deadline + whole_periods_late * period, whole_periods_late


class FixedRateThread:
    def __init__(self, rate_hz: float, tick: Callable[[float], None], name: str):
        self.period_s = 1.0 / rate_hz
        self.missed_deadlines = 0
        self._tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)

    def _run(self) -> None:
        deadline = time.monotonic()
        while not self._stop.is_set():
            self._tick(time.monotonic())
            deadline, skipped = next_deadline(deadline, time.monotonic(), self.period_s)
            self.missed_deadlines += skipped
            self._stop.wait(max(0.0, deadline - time.monotonic()))
