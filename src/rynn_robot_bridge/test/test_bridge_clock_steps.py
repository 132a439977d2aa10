"""Issue 34: the wall clock (ROS time, the stamps' base) stepped back or forward during a session,
on an injected clock, through the bridge's ROS-free cores: the camera relay keeps relaying and
its stall check and the 200 Hz loop keep running on the monotonic clock."""

from __future__ import annotations

import threading
import time

from rynn_robot_bridge.bridge.camera_router import CameraRouter, FrameFormat, Routed
from rynn_robot_bridge.bridge.mode import Mode
from rynn_robot_bridge.bridge.rate_loop import FixedRateThread
from rynn_robot_bridge.image_layout import ImageHeader

CANONICAL = FrameFormat("rgb8", 640, 480, "camera_color_optical_frame")
FPS = 16.0


class SteppingClock:
    """A monotonic clock and a wall clock that runs with it until someone steps it."""

    def __init__(self):
        self.monotonic = 1000.0
        self.offset = 1_790_000_000.0

    @property
    def wall_ns(self) -> int:
        return int((self.monotonic + self.offset) * 1e9)

    def advance(self, seconds: float) -> None:
        self.monotonic += seconds


def frame(stamp_ns: int) -> ImageHeader:
    return ImageHeader(stamp_ns, CANONICAL.frame_id, 640, 480, "rgb8", 1920, 1920 * 480)


def run_camera(router: CameraRouter, clock: SteppingClock, seconds: float) -> list[Routed]:
    """A camera on the same machine: each frame stamped by the wall clock, received 20 ms later."""
    results = []
    for _ in range(int(seconds * FPS)):
        stamp = clock.wall_ns
        clock.advance(0.02)
        results.append(router.offer_image(Mode.REAL, frame(stamp), clock.monotonic, clock.wall_ns, lambda: None))
        clock.advance(1 / FPS - 0.02)
        assert router.stall(clock.monotonic) is None
    return results


def test_a_wall_clock_step_back_does_not_latch_the_camera_relay():
    clock = SteppingClock()
    router = CameraRouter(Mode.REAL, CANONICAL, stall_timeout_s=0.5, now=clock.monotonic)
    assert set(run_camera(router, clock, 2.0)) == {Routed.FORWARDED}

    in_flight = clock.wall_ns  # stamped just before the step, delivered just after it
    clock.offset -= 3600.0  # NTP (or a person) sets the clock back an hour
    clock.advance(0.02)
    assert router.offer_image(Mode.REAL, frame(in_flight), clock.monotonic, clock.wall_ns, lambda: None) is (
        Routed.STAMP_IN_FUTURE)  # by the new clock it is an hour ahead: never the high-water mark
    assert set(run_camera(router, clock, 2.0)) == {Routed.FORWARDED}, "the relay latched after the clock stepped back"
    assert router.clock_steps.steps == 1 and router.clock_steps.last_step_s < -3599.0

    clock.offset += 7200.0  # and forward again
    assert set(run_camera(router, clock, 2.0)) == {Routed.FORWARDED}
    assert router.clock_steps.steps == 2

    # Ordering still holds between steps: a repeated frame is refused.
    stamp = clock.wall_ns
    assert router.offer_image(Mode.REAL, frame(stamp), clock.monotonic, clock.wall_ns, lambda: None) is Routed.FORWARDED
    assert router.offer_image(Mode.REAL, frame(stamp), clock.monotonic, clock.wall_ns, lambda: None) is (
        Routed.STAMP_NOT_ADVANCING)


def test_the_200_hz_loop_keeps_its_rate_while_the_wall_clock_steps(monkeypatch):
    """The loop's deadlines are monotonic: stepping what ``time.time`` says (as a clock step does)
    changes nothing in its rate."""
    ticks = []
    loop = FixedRateThread(200.0, ticks.append, "clock-step-loop")
    real_time = time.time
    shift = [0.0]
    monkeypatch.setattr(time, "time", lambda: real_time() + shift[0])
    monkeypatch.setattr(time, "time_ns", lambda: int((real_time() + shift[0]) * 1e9))
    loop.start()
    try:
        deadline = time.monotonic() + 10.0
        while len(ticks) < 40 and time.monotonic() < deadline:
            threading.Event().wait(0.01)
        before = len(ticks)
        shift[0] = -3600.0
        started = time.monotonic()
        while time.monotonic() - started < 0.5:
            threading.Event().wait(0.01)
        shift[0] = 3600.0
        while time.monotonic() - started < 1.0:
            threading.Event().wait(0.01)
        after = len(ticks) - before
        assert loop.problem(time.monotonic(), stall_after_s=0.5) is None
    finally:
        loop.stop()
    # 1 s at 200 Hz; a loaded 2-core machine skips some deadlines, but the loop never stops
    assert after + loop.missed_deadlines >= 150, (after, loop.missed_deadlines)
    assert after >= 50, after
