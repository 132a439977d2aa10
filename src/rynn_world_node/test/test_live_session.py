"""LiveWorldSession on a fake clock: anchoring, pacing, latest-wins scheduling and drop counting.

A real (tiny, random-weight) StreamingWorldModel runs underneath; only time is faked, so every
decision the node's threads take is checked here without DDS.
"""

import threading

import numpy as np
import pytest
import torch

from rynn_common.pipeline_stats import PipelineStats
from rynn_world.live_session import LiveWorldSession, SessionSettings
from rynn_world.model.configs import get_config
from rynn_world.skeleton import CameraIntrinsics
from rynn_world.streaming import StreamingWorldModel

CFG = get_config("tiny")
K = CameraIntrinsics(fx=80.0, fy=80.0, cx=32.0, cy=32.0, width=64, height=64)
PERIOD = 1.0 / CFG.fps
T0 = 1000.0


class FakeClock:
    def __init__(self, now: float = T0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def hands(offset: float = 0.0) -> np.ndarray:
    joints = np.random.default_rng(0).normal(0.0, 0.03, (2, 21, 3))
    joints[..., 2] += 0.5 + offset
    return joints


def real_frame(value: int) -> np.ndarray:
    return np.full((48, 80, 3), value, np.uint8)


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Two intra-op threads spin against everything else on a loaded 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make_session(clock, **settings) -> tuple[LiveWorldSession, PipelineStats, list]:
    converted = []

    def convert(frame):
        converted.append(int(frame[0, 0, 0]))
        return frame

    stats = PipelineStats()
    model = StreamingWorldModel(CFG, intrinsics=K, seed=0)
    return LiveWorldSession(model, stats, SessionSettings(**settings), clock=clock, convert_real_frame=convert), stats, converted


def feed(session, clock, until: float, rate: float = 30.0, start: float | None = None):
    """Skeletons stamped at ``rate`` from ``start``, the last one at ``until``, each arriving at its stamp."""
    stamps = np.arange(clock.now if start is None else start, until, 1.0 / rate).tolist() + [until]
    for t in stamps:
        clock.now = t
        session.offer_skeleton(hands(0.01 * (t - T0)), t)


def drain(session, clock, seconds: float, step: float = 0.005) -> list:
    """Pop every frame that falls due within ``seconds``."""
    frames, end = [], clock.now + seconds
    while clock.now < end:
        frame = session.pop_due()
        if frame is not None:
            frames.append(frame)
        else:
            clock.now += step
    return frames


def test_switch_anchors_on_the_newest_real_frame_and_converts_only_that_one(clock):
    session, stats, converted = make_session(clock)
    for value in (10, 20, 30):
        session.offer_real_frame(real_frame(value))
    session.offer_skeleton(hands(), clock.now)
    assert session.run_once() > 0 and converted == []  # real mode: nothing happens
    assert session.set_mode("digital")
    session.offer_skeleton(hands(), clock.now)  # live, but the block's last tick is still ahead
    session.run_once()
    assert converted == [30], "only the frame the anchor uses is converted"
    np.testing.assert_array_equal(session.model.last_frame, np.full((64, 64, 3), 30, np.uint8))
    assert stats.latencies["reanchor"].count == 1 and "step" not in stats.latencies


def test_a_block_waits_for_its_last_skeleton_and_frames_carry_skeleton_ticks(clock):
    session, stats, _ = make_session(clock)
    session.offer_real_frame(real_frame(50))
    session.set_mode("digital")
    feed(session, clock, T0 + 2 * PERIOD)
    session.run_once()
    assert "step" not in stats.latencies, "stepped before the skeletons reached the block's last frame"
    feed(session, clock, T0 + 3 * PERIOD, start=T0 + 3 * PERIOD)
    assert session.run_once() == 0.0
    frames = drain(session, clock, 0.2)
    np.testing.assert_allclose([f.stamp for f in frames], T0 + PERIOD * np.arange(4))
    assert stats.outputs == 0 and stats.latencies["frame_age"].count == 4


def test_a_late_step_skips_to_the_newest_skeleton_and_counts_what_it_skipped(clock):
    session, stats, _ = make_session(clock)
    session.offer_real_frame(real_frame(50))
    session.set_mode("digital")
    session.offer_skeleton(hands(), clock.now)
    session.run_once()  # anchored at T0, waiting for the block
    feed(session, clock, T0 + 1.0)  # the generation thread was busy for a second
    session.run_once()
    frames = drain(session, clock, 0.2)
    stamps = np.array([f.stamp for f in frames])
    assert stamps[-1] == pytest.approx(T0 + 1.0 - 1.0 / 30.0, abs=1e-6) or stamps[-1] == pytest.approx(T0 + 1.0)
    assert clock.now - stamps[-1] < 0.3, "the newest skeleton, not the backlog, was generated"
    assert stats.dropped["behind_realtime"] >= 10


def test_a_new_block_supersedes_unpublished_frames_and_old_frames_are_dropped(clock):
    session, stats, _ = make_session(clock, max_frame_age=0.5)
    session.offer_real_frame(real_frame(50))
    session.set_mode("digital")
    feed(session, clock, T0 + 3 * PERIOD)
    session.run_once()
    feed(session, clock, T0 + 7 * PERIOD, start=T0 + 4 * PERIOD)
    session.run_once()  # nobody published the first block
    assert stats.dropped["frame_superseded"] == 4
    clock.now += 0.6  # the publisher stalled: all of the second block is too old now
    assert session.pop_due() is None
    assert stats.dropped["frame_too_old"] == 4


def test_with_the_default_age_bound_a_slow_machine_still_publishes_every_frame_of_a_block(clock):
    """A block's first frame is already a block span (3 periods) older than its last when the step
    starts; on two CPU cores a step in the running graph takes 250-400 ms. The default bound lets
    such a block through whole (0.5 s dropped 3 frames of 4: the stream fell to 0.3 FPS), since a
    new block already replaces any unpublished frame: nothing queues."""
    session, stats, _ = make_session(clock)
    model_step = session.model.step

    def slow_step():
        frames = model_step()
        clock.now += 0.4  # the step's duration on the fake clock
        return frames

    session.model.step = slow_step
    session.offer_real_frame(real_frame(50))
    session.set_mode("digital")
    feed(session, clock, T0 + 3 * PERIOD)
    session.run_once()
    frames = drain(session, clock, 0.2)
    assert len(frames) == 4, stats.dropped
    assert "frame_too_old" not in stats.dropped
    assert max(f.due - f.stamp for f in frames) == pytest.approx(0.4 + 3 * PERIOD, abs=1e-6)  # the first frame's age


def test_a_blocks_frames_are_spaced_and_stamps_only_increase(clock):
    session, _, _ = make_session(clock, publish_interval=0.02)
    session.offer_real_frame(real_frame(50))
    session.set_mode("digital")
    published = []
    for block in range(3):
        feed(session, clock, T0 + (4 * block + 3) * PERIOD, start=max(clock.now, T0 + 4 * block * PERIOD))
        session.run_once()
        published += drain(session, clock, 0.1, step=0.001)
    dues = np.array([f.due for f in published])
    stamps = np.array([f.stamp for f in published])
    assert len(published) == 12
    assert np.all(np.diff(stamps) > 0)
    np.testing.assert_allclose(np.diff(dues[:4]), 0.02)


def run_blocks(session, clock, blocks: int, on_block=lambda block: None) -> list[int]:
    """Generate ``blocks`` live blocks; the re-anchor count after each."""
    anchors = []
    for block in range(blocks):
        on_block(block)
        feed(session, clock, T0 + (4 * block + 3) * PERIOD, start=max(clock.now, T0 + 4 * block * PERIOD))
        session.run_once()
        anchors.append(session.stats.latencies["reanchor"].count)
    return anchors


def test_periodic_reanchors_continue_from_the_last_generated_frame_never_from_the_held_real_robot(clock):
    """In digital mode the bridge holds the real robot, so its camera keeps showing the pose of the
    switch, not the operator's motion. Only the switch anchors on a real frame; every periodic
    re-anchor of a 13-frame chunk (1 reference + 3 blocks of 4) starts from the frame the stream
    showed last."""
    session, stats, converted = make_session(clock, reanchor_every=13)
    resets = []  # (the stream's last frame before the reset, the reference after it)
    reset = session.model.reset

    def recorded_reset(*args, **kwargs):
        before = session.model.last_frame
        reset(*args, **kwargs)
        resets.append((None if before is None else before.copy(), session.model.last_frame.copy()))

    session.model.reset = recorded_reset
    session.offer_real_frame(real_frame(10))
    session.set_mode("digital")

    def held_robot_camera(block):
        if block > 0:  # after the switch anchor: a new frame of the held robot every block
            session.offer_real_frame(real_frame(90))

    assert run_blocks(session, clock, 7, held_robot_camera) == [1, 1, 1, 2, 2, 2, 3]
    assert converted == [10], "a frame of the held real robot was converted to anchor on"
    assert len(resets) == 3
    np.testing.assert_array_equal(resets[0][1], np.full((64, 64, 3), 10, np.uint8))
    for before, reference in resets[1:]:
        np.testing.assert_array_equal(reference, before)
        assert np.abs(reference.astype(int) - 90).max() > 0


def test_the_default_81_frame_chunk_is_the_reference_plus_20_blocks(clock):
    """Issue 14 item 7: re-anchoring fired after 85 frames (84 generated + reference), not 81."""
    session, stats, _ = make_session(clock, reanchor_every=81)
    session.offer_real_frame(real_frame(10))
    session.set_mode("digital")
    assert run_blocks(session, clock, 21) == [1] * 20 + [2]


def test_the_default_chunk_is_the_reference_plus_4_blocks(clock):
    """The default chosen from bench_reanchor_policy's figures (SessionSettings): 17 frames."""
    session, _, _ = make_session(clock)
    session.offer_real_frame(real_frame(10))
    session.set_mode("digital")
    assert run_blocks(session, clock, 5) == [1] * 4 + [2]


def test_mode_change_during_a_step_drops_its_frames_and_a_new_switch_anchors_again(clock):
    session, stats, converted = make_session(clock)
    session.offer_real_frame(real_frame(10))
    session.set_mode("digital")
    feed(session, clock, T0 + 3 * PERIOD)
    step = session.model.step

    def step_interrupted_by_real_mode():
        frames = step()
        session.set_mode("real")  # the bridge switched while the block was being generated
        return frames

    session.model.step = step_interrupted_by_real_mode
    session.run_once()
    session.model.step = step
    assert stats.dropped["mode_changed_during_step"] == 4 and session.pop_due() is None
    session.offer_real_frame(real_frame(70))
    session.set_mode("digital")
    feed(session, clock, T0 + 7 * PERIOD, start=T0 + 4 * PERIOD)
    session.run_once()
    assert converted == [10, 70] and stats.latencies["reanchor"].count == 2


def test_callbacks_return_while_a_step_is_running(clock):
    session, stats, _ = make_session(clock)
    session.offer_real_frame(real_frame(10))
    session.set_mode("digital")
    feed(session, clock, T0 + 3 * PERIOD)
    in_step, release = threading.Event(), threading.Event()
    step = session.model.step

    def slow_step():
        in_step.set()
        assert release.wait(30.0)
        return step()

    session.model.step = slow_step
    worker = threading.Thread(target=session.run_once)
    worker.start()
    assert in_step.wait(30.0)
    # All inputs are taken while the step is still blocked (release has not been set).
    session.offer_skeleton(hands(), T0 + 4 * PERIOD)
    session.offer_real_frame(real_frame(20))
    assert session.set_mode("real") and session.mode == "real"
    assert worker.is_alive(), "the step finished before the callbacks returned"
    release.set()
    worker.join(30.0)
    assert stats.dropped["mode_changed_during_step"] == 4


def test_without_skeletons_blocks_are_paced_by_the_clock_and_stamped_now(clock):
    session, stats, _ = make_session(clock)
    session.offer_real_frame(real_frame(10))
    session.set_mode("digital")
    assert session.run_once() == 0.0
    assert session.run_once() == pytest.approx(4 * PERIOD), "a second block before its time"
    frames = drain(session, clock, 0.1, step=0.001)
    assert len(frames) == 4 and frames[-1].stamp <= clock.now and clock.now - frames[0].stamp < 0.5
    clock.now = T0 + 4 * PERIOD
    assert session.run_once() == 0.0 and stats.latencies["step"].count == 2


def test_missing_or_bad_references_are_reported(clock):
    session, stats, converted = make_session(clock)
    session.set_mode("digital")
    session.run_once()
    assert "no_reference" in stats.faults and "step" not in stats.latencies

    def reject(frame):
        raise ValueError("unsupported encoding 'yuv422'")

    session.convert_real_frame = reject
    session.offer_real_frame(real_frame(10))
    session.run_once()
    assert stats.rejected["real_image"] == 1 and "no_reference" in stats.faults
    session.file_reference = real_frame(40)
    references = []
    reset = session.model.reset
    session.model.reset = lambda reference, keep_clock: (references.append(reference), reset(reference, keep_clock))
    session.run_once()
    assert "no_reference" not in stats.faults
    assert len(references) == 1 and references[0] is session.file_reference


def test_a_failing_step_stops_the_stream_with_a_fault(clock):
    session, stats, _ = make_session(clock)
    session.offer_real_frame(real_frame(10))
    session.set_mode("digital")

    def broken_step():
        raise RuntimeError("out of memory")

    session.model.step = broken_step
    with pytest.raises(RuntimeError):
        session.run_once()
    assert "out of memory" in stats.faults["generation"]
    assert session.run_once() > 0 and session.pop_due() is None


def test_skeletons_going_back_in_time_are_dropped_and_counted(clock):
    session, stats, _ = make_session(clock)
    session.offer_real_frame(real_frame(10))
    session.set_mode("digital")
    session.offer_skeleton(hands(), T0 + 0.5)
    session.offer_skeleton(hands(), T0)
    session.offer_skeleton(np.full((2, 21), 7.0), T0 + 0.6)  # neither joints nor an image
    session.run_once()
    assert stats.dropped["skeleton"] == 2
