"""A thread that calls a function at a fixed rate on absolute deadlines.

The 200 Hz command stream runs here rather than in an rclpy timer so that
image relays in the executor cannot delay it; a late cycle never causes a
burst of catch-up cycles (missed deadlines are skipped and counted).
"""

from __future__ import annotations

import threading
import time
from typing import Callable


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
            deadline += self.period_s
            whole_periods_late = int((time.monotonic() - deadline) / self.period_s)
            if whole_periods_late > 0:
                self.missed_deadlines += whole_periods_late
                deadline += whole_periods_late * self.period_s
            self._stop.wait(max(0.0, deadline - time.monotonic()))
