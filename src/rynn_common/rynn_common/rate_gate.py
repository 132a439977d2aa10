"""A fixed-rate gate for events that arrive faster than they are wanted (ROS-free)."""

from __future__ import annotations


class RateGate:
    """Lets an event through at most every ``interval_s`` on average: the schedule keeps its phase, a late
    event does not bring the next one forward, and after a gap the next one goes through alone (no burst)."""

    def __init__(self, interval_s: float, start_s: float = float("-inf")):
        self.interval_s = interval_s
        self._next_s = start_s

    def due(self, now_s: float) -> bool:
        if now_s < self._next_s:
            return False
        following = self._next_s + self.interval_s
        self._next_s = following if following > now_s else now_s + self.interval_s
        return True
