import socket
from pathlib import Path

import numpy as np
import pytest

from rynn_common.action_layout import ACTION_DIM, LEFT_ARM, RIGHT_ARM, RIGHT_HAND
from rynn_common.action_trajectory import ActionTrajectory
from rynn_common.description import D435I_COLOR
from rynn_retarget.config import load_retarget_config
from rynn_retarget.kinematics.calibration import load_calibration, save_calibration
from rynn_retarget.kinematics.transforms import rotation_angle, wrist_target
from rynn_retarget.operator.frame import HandSkeleton, OperatorFrame
from rynn_retarget.operator.openvr_source import DeviceUnavailableError, OpenVrTrackerSource
from rynn_retarget.operator.replay import ReplaySource, read_session, write_session
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig, neutral_frame
from rynn_retarget.operator.udp import UdpOperatorSource, send_frame
from rynn_retarget.pipeline import RetargetPipeline

CONFIG = Path(__file__).resolve().parents[1] / "config" / "retarget.yaml"


@pytest.fixture(scope="module")
def pipeline_config():
    return load_retarget_config(CONFIG)


def test_neutral_pose_maps_to_robot_neutral_and_calibration_round_trips(pipeline_config, tmp_path):
    pipeline = RetargetPipeline(pipeline_config)
    calibration = pipeline.calibrate(neutral_frame(seed=5))
    output = pipeline.step(neutral_frame(seed=5), now=0.0)
    assert output.action[LEFT_ARM] == pytest.approx(pipeline_config.neutral_arm("left"), abs=1e-3)
    save_calibration(tmp_path / "cal.yaml", calibration)
    loaded = load_calibration(tmp_path / "cal.yaml")
    assert np.allclose(loaded.right.base_matrix(), calibration.right.base_matrix())
    assert np.allclose(loaded.left.ee_matrix(), calibration.left.ee_matrix())


def test_synthetic_stream_reaches_the_scaled_wrist_targets(pipeline_config):
    pipeline = RetargetPipeline(pipeline_config)
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=1, duration_s=10.0))
    worst_position, worst_angle = 0.0, 0.0
    for frame in operator.frames():
        output = pipeline.step(frame, frame.stamp)
        for side, arm in (("left", LEFT_ARM), ("right", RIGHT_ARM)):
            cal = pipeline.calibration.side(side)
            target = wrist_target(
                frame.trackers["chest"], frame.trackers[f"{side}_wrist"], cal.base_matrix(), cal.ee_matrix(), 1.5
            )
            reached = pipeline.arms[side].ee_pose(output.action[arm])
            worst_position = max(worst_position, np.linalg.norm(reached[:3, 3] - target[:3, 3]))
            worst_angle = max(worst_angle, rotation_angle(reached[:3, :3], target[:3, :3]))
    assert worst_position < 0.01 and worst_angle < np.deg2rad(3)
    assert pipeline.counters["unreachable_left"] + pipeline.counters["unreachable_right"] == 0


def test_robot_hand_closes_with_the_synthetic_grasp_and_skeleton_is_in_view(pipeline_config):
    pipeline = RetargetPipeline(pipeline_config)
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="grasp", seed=2))
    closure = {}
    for t in (0.0, 0.6 * 4.0):  # open at the start, closed mid-grasp
        for k in range(60):
            output = pipeline.step(operator.frame_at(t + k * 1e-3), t + k * 1e-3)
        closure[t] = output.action[RIGHT_HAND].mean()
        pixels = D435I_COLOR.project(output.skeleton_camera.reshape(-1, 3))
        assert np.all(output.skeleton_camera[..., 2] > 0.2)
        assert np.all((pixels >= 0) & (pixels <= [640, 480]))
    assert closure[2.4] > closure[0.0] + 0.4


def bad_frames(good: OperatorFrame):
    nan_wrist = dict(good.trackers, left_wrist=np.full((4, 4), np.nan))
    jumped = dict(good.trackers)
    jumped["right_wrist"] = good.trackers["right_wrist"].copy()
    jumped["right_wrist"][:3, 3] += [0.5, 0.0, 0.0]
    missing = {k: v for k, v in good.trackers.items() if k != "chest"}
    nan_hand = HandSkeleton(np.full((21, 3), np.nan), np.ones(21), True)
    return {
        "nonfinite_tracker": OperatorFrame(good.stamp + 0.01, nan_wrist, good.left_hand, good.right_hand),
        "tracker_jump": OperatorFrame(good.stamp + 0.02, jumped, good.left_hand, good.right_hand),
        "missing_tracker": OperatorFrame(good.stamp + 0.03, missing, good.left_hand, good.right_hand),
        "invalid_hand": OperatorFrame(good.stamp + 0.04, good.trackers, nan_hand, good.right_hand),
        "out_of_order": OperatorFrame(good.stamp - 1.0, good.trackers, good.left_hand, good.right_hand),
    }


def test_each_bad_input_is_counted_and_never_yields_nan(pipeline_config):
    pipeline = RetargetPipeline(pipeline_config)
    good = neutral_frame()
    for k in range(40):  # let the hand filters settle
        pipeline.step(OperatorFrame(-0.5 + 0.01 * k, good.trackers, good.left_hand, good.right_hand), 0.0)
    reference = pipeline.step(good, 0.0).action
    for counter, frame in bad_frames(good).items():
        before = pipeline.counters[counter]
        output = pipeline.step(frame, frame.stamp)
        assert pipeline.counters[counter] == before + 1, counter
        action = reference if output is None else output.action
        assert np.all(np.isfinite(action)) and action.shape == (ACTION_DIM,)
        assert np.abs(action - reference).max() < 0.05, counter  # held, not jumped
    assert pipeline.step("garbage", 1.0) is None and pipeline.counters["malformed_frames"] == 1
    assert not pipeline.guard.check_stale(0.05 + 0.05)
    assert pipeline.guard.check_stale(5.0) and pipeline.guard.check_stale(5.1)
    assert pipeline.counters["stale"] == 1
    unreachable = OperatorFrame(10.0, dict(good.trackers), good.left_hand, good.right_hand)
    unreachable.trackers["left_wrist"] = good.trackers["left_wrist"].copy()
    unreachable.trackers["left_wrist"][:3, 3] += 0.12 * good.trackers["chest"][:3, 0]
    for k in range(15):  # a jump, believed after jump_accept_after samples; then unreachable
        pipeline.step(OperatorFrame(10.0 + k * 0.01, unreachable.trackers, good.left_hand, good.right_hand), 10.0)
    far = dict(unreachable.trackers)
    for k in range(40):
        far["left_wrist"] = far["left_wrist"].copy()
        far["left_wrist"][:3, 3] += 0.01 * good.trackers["chest"][:3, 0]
        output = pipeline.step(OperatorFrame(11.0 + k * 0.01, dict(far), good.left_hand, good.right_hand), 11.0)
        assert np.all(np.isfinite(output.action))
        assert np.all(output.action >= pipeline.lower) and np.all(output.action <= pipeline.upper)
    assert pipeline.counters["unreachable_left"] > 0


def test_smoother_runs_at_200hz_within_limits_and_converges_after_input_stalls(pipeline_config):
    pipeline = RetargetPipeline(pipeline_config)
    smoother = pipeline.make_smoother()
    velocity_limit, acceleration_limit, _ = pipeline_config.smoothing.limits()
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="bimanual_lift", seed=4))
    previous_velocity = np.zeros(ACTION_DIM)
    positions = []
    for tick in range(int(3.0 * 200)):  # 3 s of 200 Hz; inputs at 120 Hz for 1.5 s, then stall
        t = tick / 200.0
        if t < 1.5 and int(t * 120) != int((t - 1 / 200.0) * 120):
            output = pipeline.step(operator.frame_at(t), t)
            smoother.set_target(output.action)
        position, velocity = smoother.step()
        assert np.all(np.abs(velocity) <= velocity_limit + 1e-6)
        assert np.all(np.abs(velocity - previous_velocity) * 200 <= acceleration_limit * 1.01 + 1e-6)
        previous_velocity = velocity
        positions.append(position)
    assert np.abs(positions[-1] - smoother.target).max() < 1e-6
    assert not smoother.set_target(np.full(ACTION_DIM, np.nan))
    assert smoother.counters["rejected_targets"] == 1


def test_smoother_moves_as_the_shared_action_trajectory(pipeline_config):
    """The smoother is rynn_common's ActionTrajectory (joints independent) with the configured
    limits, step for step, the same wrapper the bridge's safe approach runs on."""
    pipeline = RetargetPipeline(pipeline_config)
    smoother = pipeline.make_smoother()
    start = smoother.target
    reference = ActionTrajectory(pipeline_config.smoothing.rate_hz, *pipeline_config.smoothing.limits(), start=start,
                                 synchronized=False)
    rng = np.random.default_rng(2)
    for tick in range(300):
        if tick % 5 == 0:
            target = np.clip(start + rng.normal(0.0, 0.2, ACTION_DIM), pipeline.lower, pipeline.upper)
            smoother.set_target(target)
            reference.set_target(target)
        position, velocity = smoother.step()
        assert reference.step()
        np.testing.assert_array_equal(position, reference.position)
        np.testing.assert_array_equal(velocity, reference.velocity)


def test_smoother_stepped_over_skipped_periods_moves_as_fast_in_time(pipeline_config):
    """A loop that publishes every 4th period (3 skipped) advances its smoother by 4 periods a tick: at each
    of its ticks it is exactly where one stepped every period is, reaches the target at the same time, and
    between its commands stays within the velocity limit over the time they span."""
    pipeline = RetargetPipeline(pipeline_config)
    every_period, starved = pipeline.make_smoother(), pipeline.make_smoother()
    velocity_limit = pipeline_config.smoothing.limits()[0]
    previous = starved.target  # at rest there
    target = np.clip(previous + 0.5, pipeline.lower, pipeline.upper)
    every_period.set_target(target)
    starved.set_target(target)
    for tick in range(1, 101):  # 2 s at 200 Hz; arms at 2 rad/s arrive after ~0.35 s
        for _ in range(4):
            position, _ = every_period.step()
        starved_position, _ = starved.step(4)
        np.testing.assert_allclose(starved_position, position, atol=1e-9)
        assert np.all(np.abs(starved_position - previous) <= velocity_limit * 4 * every_period.period + 1e-9)
        previous = starved_position
        if tick == 25:  # 0.5 s: already moved as far as the limits allow in 0.5 s, not in 25 periods
            assert np.abs(starved_position - starved.target).max() < 0.05
    np.testing.assert_allclose(starved_position, target, atol=1e-9)


def test_output_schedule_numbers_every_period_once_whatever_the_lateness():
    """Ticks late by less than the catch-up bound are caught up (one period each, due at once); a longer stall
    is skipped: the next tick covers the whole periods missed, so the period indices (the command sequence)
    always equal the elapsed time x rate, and the grid of the first tick is kept."""
    from rynn_retarget.smoothing import OutputSchedule

    period = 0.005
    schedule = OutputSchedule(period, max_catch_up_s=0.02, start=100.0)
    assert schedule.next_tick(100.001) == (pytest.approx(0.004), 1)  # on time: wait for the next period
    assert schedule.index == 1
    delay, periods = schedule.next_tick(100.025)  # due at 100.010, 15 ms late: caught up, no skip
    assert (periods, schedule.skipped) == (1, 0) and delay == pytest.approx(-0.015)
    delay, periods = schedule.next_tick(100.5123)  # due at 100.015: 497.3 ms late, 99 whole periods skipped
    assert (periods, schedule.skipped, schedule.index) == (100, 99, 102)
    assert delay == pytest.approx(100.0 + 102 * period - 100.5123) and -period < delay <= 0  # on the grid, due now
    now = 100.5123
    for _ in range(1000):  # a starved loop: each tick ends 3-40 ms after the last
        now += 0.003 + 0.037 * ((_ * 7919) % 100) / 100
        delay, periods = schedule.next_tick(now)
        assert periods == 1 or delay > -period
        now += max(delay, 0.0)
    assert schedule.index == round((now - 100.0) / period)  # every period published or skipped, once
    assert schedule.skipped > 0


def test_synthetic_operator_is_repeatable_and_seedable():
    a = SyntheticOperator(SyntheticOperatorConfig(seed=9)).frame_at(3.21)
    b = SyntheticOperator(SyntheticOperatorConfig(seed=9)).frame_at(3.21)
    c = SyntheticOperator(SyntheticOperatorConfig(seed=10)).frame_at(3.21)
    assert np.array_equal(a.trackers["left_wrist"], b.trackers["left_wrist"])
    assert np.array_equal(a.right_hand.points, b.right_hand.points)
    assert not np.allclose(a.trackers["chest"], c.trackers["chest"])


def test_session_file_round_trips_exactly(tmp_path):
    frames = list(SyntheticOperator(SyntheticOperatorConfig(seed=3, duration_s=0.2)).frames())
    frames[3].trackers.pop("left_upper_arm")
    frames[4].left_hand.valid = False
    path = tmp_path / "session.jsonl"
    assert write_session(path, frames, meta={"operator": "synthetic"}) == len(frames)
    meta, loaded = read_session(path)
    assert meta == {"operator": "synthetic"} and len(loaded) == len(frames)
    for original, copy in zip(frames, loaded):
        assert copy.stamp == original.stamp
        assert copy.trackers.keys() == original.trackers.keys()
        for name in original.trackers:
            assert np.array_equal(copy.trackers[name], original.trackers[name])
        for side in ("left", "right"):
            assert np.array_equal(copy.hand(side).points, original.hand(side).points)
            assert copy.hand(side).valid == original.hand(side).valid
    replayed = list(ReplaySource(path).frames())
    assert [f.stamp for f in replayed] == [f.stamp for f in frames]


def test_session_rejects_other_versions(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text('{"format": "rynn_operator_session", "version": 99}\n')
    with pytest.raises(ValueError, match="version 99"):
        read_session(path)


def test_udp_ingest_receives_frames_and_counts_garbage():
    source = UdpOperatorSource(host="127.0.0.1", port=0)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        frame = SyntheticOperator(SyntheticOperatorConfig(seed=1)).frame_at(0.5)
        sender.sendto(b"not json", source.address)
        send_frame(sender, source.address, frame)
        received = next(iter(source.frames()))
        assert np.array_equal(received.trackers["chest"], frame.trackers["chest"])
        assert source.counters == {"received": 1, "malformed": 1}
    finally:
        sender.close()
        source.close()


def test_openvr_adapter_fails_clearly_without_openvr():
    """Without the package (this machine) or without SteamVR the message says what is missing."""
    with pytest.raises(DeviceUnavailableError, match="openvr|SteamVR"):
        OpenVrTrackerSource({"chest": "LHR-0000"})
