"""Issue 34: the wall clock stepped back or forward during a session, on an injected clock: the
operator streams' stamp checks (node ingress and the pipeline's guard) never latch."""

from __future__ import annotations

import numpy as np

from rynn_retarget.input_guard import InputGuard, StampBound
from rynn_retarget.operator.frame import TRACKER_NAMES, OperatorFrame

RATE_HZ = 100.0


class SteppingClock:
    def __init__(self):
        self.monotonic, self.offset = 500.0, 1_790_000_000.0

    @property
    def wall(self) -> float:
        return self.monotonic + self.offset


def stream(bound: StampBound, guard: InputGuard, clock: SteppingClock, seconds: float, order: list[int]) -> list:
    """Samples stamped by the wall clock, received 5 ms later: checked at ingress as the node does, then
    by the guard, whose order restarts before the first sample of a new ingress order (as the node does)."""
    results = []
    for _ in range(int(seconds * RATE_HZ)):
        stamp = clock.wall
        clock.monotonic += 0.005
        reason = bound.check(stamp, clock.wall, clock.monotonic)
        if reason is None:
            if bound.restarts != order[0]:
                guard.restart_order()
                order[0] = bound.restarts
            clean = guard.accept(OperatorFrame(stamp, {name: np.eye(4) for name in TRACKER_NAMES}), clock.monotonic)
            reason = "guard_dropped" if clean is None else None
        results.append(reason)
        clock.monotonic += 1 / RATE_HZ - 0.005
    return results


def test_a_clock_set_back_or_forward_never_latches_the_operator_stream():
    clock, bound, guard, order = SteppingClock(), StampBound(max_future_s=0.2), InputGuard(), [0]
    assert set(stream(bound, guard, clock, 1.0, order)) == {None}

    in_flight = clock.wall
    clock.offset -= 600.0  # set back ten minutes
    clock.monotonic += 0.005
    assert bound.check(in_flight, clock.wall, clock.monotonic) == "future_stamp"  # never the new high-water mark
    assert set(stream(bound, guard, clock, 1.0, order)) == {None}, "the stream latched after the clock stepped back"
    assert bound.restarts == 1 and guard.counters["out_of_order"] == 0

    clock.offset += 1200.0  # forward: later stamps, nothing to restart
    assert set(stream(bound, guard, clock, 1.0, order)) == {None}
    assert bound.restarts == 1 and bound.clock_steps.steps == 2

    # Within one clock the order still holds.
    stamp = clock.wall
    assert bound.check(stamp, clock.wall, clock.monotonic) is None
    assert bound.check(stamp, clock.wall, clock.monotonic) == "out_of_order"


def test_without_the_monotonic_reading_a_step_back_is_still_an_out_of_order_stream():
    """What the node did before: the order against the wall clock alone cannot tell a step from reordering."""
    bound = StampBound(max_future_s=0.2)
    assert bound.check(1000.0, 1000.0) is None
    assert bound.check(400.0, 400.0) == "out_of_order"
