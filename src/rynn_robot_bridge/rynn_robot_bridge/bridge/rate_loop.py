"""A thread that calls a function at a fixed rate on absolute deadlines.

The 200 Hz command stream runs here rather than in an rclpy timer so that
image relays in the executor cannot delay it; a late cycle never causes a
burst of catch-up cycles (whole periods already past are skipped and counted).

A skipped period is a missed deadline only where a cycle was owed: the tick returns False when it owed
nobody anything (the bridge in digital mode, or with no robot state yet, commands nothing), and the
periods skipped after such a cycle count in ``skipped_periods`` alone. So ``missed_deadlines`` counts
commands the robot did not get in time, not how busy the machine was while the bridge commanded nothing:
the console's healthy digital session showed 3059 "missed command deadlines" when none was owed.

The thread never dies of an exception in a cycle: it is counted, handed to
``on_error`` (the bridge holds the robot and reports it) and the next cycle runs.
``problem()`` is the liveness check a status timer calls from another thread.

With ``realtime_priority`` > 0 the thread asks the kernel for SCHED_FIFO at that priority (as
ros2_control's controller manager does), so on a busy machine it gets a core as soon as it wakes
(in the recording graph on two cores: the period's p99 in digital mode 12.9 -> 8.8 ms, median of
starts, docs/benchmarks.md). In real mode the bridge's other Python threads get it too, at a lower
priority (``set_thread_scheduling``): a FIFO thread waiting for the interpreter lock held by a
preempted normal one would wait for that one's next time slice. Where the kernel refuses (no
CAP_SYS_NICE, rtprio limit 0) a thread runs as a normal one and ``scheduling`` says why.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable


def request_realtime(priority: int) -> str:
    """Ask for SCHED_FIFO at ``priority`` for the calling thread when ``priority`` > 0; return how the
    thread is scheduled now and, where the kernel refused, why."""
    if priority <= 0:
        return "normal (realtime_priority 0)"
    return set_thread_scheduling(0, priority, reset_on_fork=False)


def set_thread_scheduling(native_id: int, priority: int, reset_on_fork: bool = True) -> str:
    """SCHED_FIFO at ``priority`` (> 0), else normal scheduling, for the thread ``native_id`` of this process
    (``threading.get_native_id()``; 0: the calling thread); return how it is scheduled now and why. With
    ``reset_on_fork`` threads it starts while at FIFO start normal (SCHED_RESET_ON_FORK): an executor's helper
    threads must not inherit the priority."""
    try:
        if priority <= 0:
            os.sched_setscheduler(native_id, os.SCHED_OTHER, os.sched_param(0))
            return "normal"
        policy = os.SCHED_FIFO | (os.SCHED_RESET_ON_FORK if reset_on_fork else 0)
        os.sched_setscheduler(native_id, policy, os.sched_param(priority))
        return f"SCHED_FIFO priority {priority}"
    except (OSError, AttributeError) as error:
        return (f"normal: SCHED_FIFO {priority} refused ({error}); "
                "grant CAP_SYS_NICE or an rtprio limit to the user running the bridge")


def next_deadline(previous: float, now: float, period: float) -> tuple[float, int]:
    """(the deadline after ``previous``, periods skipped): whole periods already past are skipped, not run in a burst."""
    deadline = previous + period
    whole_periods_late = max(0, int((now - deadline) / period))
    return deadline + whole_periods_late * period, whole_periods_late


class FixedRateThread:
    def __init__(self, rate_hz: float, tick: Callable[[float], bool | None], name: str,
                 on_error: Callable[[Exception], None] | None = None, realtime_priority: int = 0):
        self.period_s = 1.0 / rate_hz
        self.realtime_priority = realtime_priority
        self.scheduling = "not started"
        self._scheduled = threading.Event()
        self.skipped_periods = 0  # every period no cycle started in
        self.missed_deadlines = 0  # those after a cycle that owed one (its tick did not return False)
        self.errors = 0
        self.last_error: str | None = None
        self.last_error_at = float("-inf")
        self.last_cycle_at: float | None = None  # monotonic start of the newest cycle
        self._tick = tick
        self._on_error = on_error
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._scheduled.wait(timeout=1.0)  # `scheduling` is settled when start returns

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)

    def problem(self, now: float, stall_after_s: float, error_window_s: float = 1.0) -> str | None:
        """Why the loop is not healthy (stopped, stalled, or a cycle failed within ``error_window_s``), else None."""
        name = self._thread.name
        if self.last_cycle_at is not None and not self._thread.is_alive() and not self._stop.is_set():
            return f"{name} loop stopped: {self.last_error or 'thread exited'}"
        if self.last_cycle_at is not None and now - self.last_cycle_at > stall_after_s:
            return f"{name} loop stalled: no cycle for {(now - self.last_cycle_at) * 1e3:.0f} ms"
        if now - self.last_error_at <= error_window_s:
            return f"{name} cycle failed {self.errors} time(s), last: {self.last_error}"
        return None

    def _schedule(self) -> None:
        self.scheduling = request_realtime(self.realtime_priority)
        self._scheduled.set()

    def _run(self) -> None:
        self._schedule()
        deadline = time.monotonic()
        while not self._stop.is_set():
            self.last_cycle_at = now = time.monotonic()
            owed = True  # a cycle that raised owed its command (the bridge then sends a hold)
            try:
                owed = self._tick(now) is not False
            except Exception as exc:  # a control thread must never die silently
                self.errors += 1
                self.last_error, self.last_error_at = f"{type(exc).__name__}: {exc}", time.monotonic()
                if self._on_error is not None:
                    self._on_error(exc)
            deadline, skipped = next_deadline(deadline, time.monotonic(), self.period_s)
            self.skipped_periods += skipped
            if owed:
                self.missed_deadlines += skipped
            self._stop.wait(max(0.0, deadline - time.monotonic()))
