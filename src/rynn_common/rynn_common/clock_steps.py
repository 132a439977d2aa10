"""Steps of the wall clock (system time, the ROS clock), seen against the monotonic clock.

Message stamps are ROS time, which is the system's wall clock: NTP, an operator or a
virtual machine resuming can step it forward or back during a session. Intervals and
deadlines therefore run on ``time.monotonic()``; what must use the wall clock (comparing a
stamp with "now", keeping stamps in order) asks ``ClockStepDetector`` whether the wall
clock stepped since its last reading, and starts a stream's ordering afresh after a step back
(otherwise every frame stamped after the step looks older than the last one before it and the
stream latches until the clock has caught up, for as long as the step was).

A step is a change of the offset between the two clocks beyond ``tolerance_s``; drift and NTP
slewing (at most 0.5 ms/s) follow along. A reading delayed between its two clock reads by more
than the tolerance (a starved thread) looks like a step and back: two needless restarts of the
ordering, which admit at most one reordered sample, never a latch.
"""

from __future__ import annotations

STEP_TOLERANCE_S = 0.25


class ClockStepDetector:
    def __init__(self, tolerance_s: float = STEP_TOLERANCE_S):
        self.tolerance_s = float(tolerance_s)
        self._offset: float | None = None
        self.steps = 0  # steps seen, either way
        self.last_step_s = 0.0  # the newest one, signed (< 0: the wall clock went back)

    def step(self, wall_s: float, monotonic_s: float) -> float:
        """The wall clock's step since the previous reading (signed, seconds) when it is beyond the
        tolerance, else 0.0. ``wall_s`` and ``monotonic_s`` are read together."""
        offset = float(wall_s) - float(monotonic_s)
        previous, self._offset = self._offset, offset
        if previous is None or abs(offset - previous) <= self.tolerance_s:
            return 0.0
        self.steps += 1
        self.last_step_s = offset - previous
        return self.last_step_s


def create_steady_timer(node, period_s: float, callback, **kwargs):
    """``node.create_timer`` on the steady (monotonic) clock. An rclpy timer runs on the node's ROS
    clock, the system clock unless simulated time is on, and rcl notices jumps of simulated time
    only: after the system clock steps back, a ROS-clock timer waits until the clock has caught up
    again (status, flushing, page refreshes silent for as long as the step)."""
    from rclpy.clock import Clock, ClockType

    return node.create_timer(period_s, callback, clock=Clock(clock_type=ClockType.STEADY_TIME), **kwargs)
