"""Issue 34: the digital stream when the wall clock (the node's ROS clock, the skeleton stamps'
base) steps back or forward mid-session. A real tiny StreamingWorldModel runs underneath; both
clocks are injected, the wall clock stepped by the test."""

from __future__ import annotations

import numpy as np
import pytest
from test_live_session import one_torch_thread  # noqa: F401  (autouse: one intra-op thread)

from rynn_common.pipeline_stats import PipelineStats
from rynn_world.live_session import LiveWorldSession, SessionSettings
from rynn_world.model.configs import get_config
from rynn_world.skeleton import CameraIntrinsics
from rynn_world.streaming import StreamingWorldModel

CFG = get_config("tiny")
K = CameraIntrinsics(fx=80.0, fy=80.0, cx=32.0, cy=32.0, width=64, height=64)
SKELETON_RATE = 30.0


class Clocks:
    def __init__(self):
        self.monotonic_s, self.offset = 200.0, 1_790_000_000.0

    def monotonic(self) -> float:
        return self.monotonic_s

    def wall(self) -> float:
        return self.monotonic_s + self.offset


def hands(t: float) -> np.ndarray:
    joints = np.random.default_rng(0).normal(0.0, 0.03, (2, 21, 3))
    joints[..., 2] += 0.5 + 0.02 * np.sin(t)
    return joints


def operate(session: LiveWorldSession, clocks: Clocks, seconds: float) -> list[float]:
    """Skeletons at 30 Hz stamped by the wall clock; the generation and publishing threads' calls in
    between. Returns the stamps of the frames published."""
    published, step = [], 1.0 / SKELETON_RATE
    for _ in range(int(seconds * SKELETON_RATE)):
        session.offer_skeleton(hands(clocks.monotonic_s), clocks.wall())
        session.run_once()
        end = clocks.monotonic_s + step
        while clocks.monotonic_s < end:
            frame = session.pop_due()
            if frame is not None:
                published.append(frame.stamp)
            else:
                clocks.monotonic_s += step / 8
    return published


def start(clocks: Clocks) -> tuple[LiveWorldSession, PipelineStats]:
    stats = PipelineStats()
    model = StreamingWorldModel(CFG, intrinsics=K, seed=0)
    session = LiveWorldSession(model, stats, SessionSettings(), clock=clocks.wall, monotonic=clocks.monotonic)
    session.offer_real_frame(np.full((48, 80, 3), 90, np.uint8))
    session.set_mode("digital")
    return session, stats


@pytest.mark.parametrize("step_s", [-3600.0, -2.0, 3600.0])
def test_a_clock_step_does_not_stop_the_digital_stream(step_s):
    clocks = Clocks()
    session, stats = start(clocks)
    before = operate(session, clocks, 1.5)
    assert len(before) >= 8, before

    clocks.offset += step_s
    stepped_at = clocks.wall()
    after = operate(session, clocks, 1.5)
    # The stream goes on at its rate, its frames stamped on the new clock and never going back.
    assert len(after) >= 16, (len(after), stats.dropped)
    assert all(stepped_at - 0.5 <= stamp <= clocks.wall() for stamp in after), (stepped_at, after[:4])
    assert np.all(np.diff(after) > 0)
    assert stats.dropped.get("skeleton", 0) == 0, stats.dropped
    assert session.clock_steps.steps == 1
    assert session.failed is None


def test_a_skeleton_stamped_far_ahead_cannot_latch_the_stream():
    clocks = Clocks()
    session, stats = start(clocks)
    assert len(operate(session, clocks, 1.0)) >= 4
    session.offer_skeleton(hands(0.0), clocks.wall() + 86_400.0)  # a day ahead
    after = operate(session, clocks, 1.5)
    assert len(after) >= 16, (len(after), stats.dropped)
    assert stats.rejected.get("skeleton_future_stamp") == 1
