"""The bridge's ROS-free core: modes, camera routing, limits, watchdog, safe transition, commander."""

import itertools
import json
import threading
from pathlib import Path

import numpy as np
import pytest

from rynn_common.action_layout import ACTION_DIM, LEFT_ARM
from rynn_common.action_trajectory import ActionTrajectory
from rynn_common.description.joint_limits import JointLimits, joint_limits_from_urdf
from rynn_robot_bridge.bridge.camera_router import CameraRouter, FrameFormat, Routed
from rynn_robot_bridge.bridge.command_limiter import ActionInbox, CommandLimiter
from rynn_robot_bridge.bridge.commander import Phase, RobotCommander
from rynn_robot_bridge.bridge.counters import mirror_bridge_counters
from rynn_robot_bridge.bridge.lcm_link import LcmRobotLink
from rynn_robot_bridge.bridge.mode import Mode
from rynn_robot_bridge.bridge.rate_loop import FixedRateThread
from rynn_robot_bridge.bridge.settings import BridgeSettings, load_bridge_settings
from rynn_robot_bridge.bridge.transition import SafeTransition, TransitionLimits
from rynn_robot_bridge.image_layout import ImageHeader
from rynn_robot_bridge.lcm_protocol import RobotState
from rynn_robot_bridge.robot_safety import Fault

RATE = 200.0
DT = 1.0 / RATE
CANONICAL = FrameFormat("rgb8", 640, 480, "camera_color_optical_frame")
CLOCK_NS = 10**12  # the receiver's clock: every stamp in these tests is in its past


def image(stamp_ns: int, fmt: FrameFormat = CANONICAL) -> ImageHeader:
    """The header of a well-laid-out frame of ``fmt`` (rgb8/bgr8: 3 bytes a pixel, no row padding)."""
    return ImageHeader(stamp_ns, fmt.frame_id, fmt.width, fmt.height, fmt.encoding, fmt.width * 3, fmt.width * 3 * fmt.height)


@pytest.fixture(scope="module")
def limits() -> JointLimits:
    return joint_limits_from_urdf()


# --- mode ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [("real", Mode.REAL), (" Digital ", Mode.DIGITAL), (0, Mode.REAL),
                                             (1, Mode.DIGITAL), ("1", Mode.DIGITAL), (Mode.REAL, Mode.REAL)])
def test_mode_parses_names_and_numbers(value, expected):
    assert Mode.parse(value) is expected


@pytest.mark.parametrize("value", ["simulated", "", 2, -1, True, None, 0.0])
def test_invalid_mode_is_a_clear_error(value):
    with pytest.raises(ValueError, match=r"invalid mode .*expected one of real \(0\), digital \(1\)"):
        Mode.parse(value)


def test_mode_values_match_the_interface_constants():
    msgs = pytest.importorskip("rynn_teleop_msgs.msg")
    srv = pytest.importorskip("rynn_teleop_msgs.srv")
    assert (Mode.REAL, Mode.DIGITAL) == (msgs.TeleopStatus.MODE_REAL, msgs.TeleopStatus.MODE_DIGITAL)
    assert (Mode.REAL, Mode.DIGITAL) == (srv.SetMode.Request.MODE_REAL, srv.SetMode.Request.MODE_DIGITAL)


# --- camera router ------------------------------------------------------------------------


def test_router_forwards_only_the_active_source_and_switches():
    router = CameraRouter(Mode.REAL, CANONICAL, stall_timeout_s=0.5, now=0.0)
    published = []

    def offer(source, stamp):
        return router.offer_image(source, image(stamp, CANONICAL), 0.1, CLOCK_NS, lambda: published.append((source, stamp)))

    assert offer(Mode.REAL, 1) is Routed.FORWARDED
    assert offer(Mode.DIGITAL, 1) is Routed.INACTIVE_SOURCE
    router.switch(Mode.DIGITAL, now=0.2)
    assert offer(Mode.REAL, 2) is Routed.INACTIVE_SOURCE
    assert offer(Mode.DIGITAL, 2) is Routed.FORWARDED
    assert published == [(Mode.REAL, 1), (Mode.DIGITAL, 2)]
    assert router.offer_info(Mode.REAL, lambda: published.append("info")) is Routed.INACTIVE_SOURCE
    assert router.offer_info(Mode.DIGITAL, lambda: published.append("info")) is Routed.FORWARDED
    assert published[-1] == "info"


def test_no_frame_of_the_old_source_is_published_after_switch_returns():
    router = CameraRouter(Mode.REAL, CANONICAL, stall_timeout_s=0.5, now=0.0)
    switched = threading.Event()
    late_real_frames = []
    stop = threading.Event()

    def publish_real():
        if switched.is_set():
            late_real_frames.append(1)

    def hammer_real():
        stamp = 0
        while not stop.is_set():
            stamp += 1
            router.offer_image(Mode.REAL, image(stamp, CANONICAL), 0.0, CLOCK_NS, publish_real)

    worker = threading.Thread(target=hammer_real)
    worker.start()
    try:
        for _ in range(2000):  # let the worker get going, then switch under contention
            router.offer_image(Mode.DIGITAL, image(1, CANONICAL), 0.0, CLOCK_NS, lambda: None)
        router.switch(Mode.DIGITAL, now=0.0)
        switched.set()
        threading.Event().wait(0.05)
    finally:
        stop.set()
        worker.join()
    assert late_real_frames == []


def test_router_rejects_other_formats_and_frames_whose_stamp_does_not_advance():
    router = CameraRouter(Mode.DIGITAL, CANONICAL, stall_timeout_s=0.5, now=0.0)

    def publish():
        pass

    for wrong in (FrameFormat("bgr8", 640, 480, CANONICAL.frame_id), FrameFormat("rgb8", 832, 480, CANONICAL.frame_id),
                  FrameFormat("rgb8", 640, 480, "camera_link")):
        assert router.offer_image(Mode.DIGITAL, image(10, wrong), 0.0, CLOCK_NS, publish) is Routed.WRONG_FORMAT
    assert router.offer_image(Mode.DIGITAL, image(10, CANONICAL), 0.0, CLOCK_NS, publish) is Routed.FORWARDED
    assert router.offer_image(Mode.DIGITAL, image(10, CANONICAL), 0.0, CLOCK_NS, publish) is Routed.STAMP_NOT_ADVANCING  # repeated
    assert router.offer_image(Mode.DIGITAL, image(9, CANONICAL), 0.0, CLOCK_NS, publish) is Routed.STAMP_NOT_ADVANCING  # reordered
    assert router.offer_image(Mode.DIGITAL, image(11, CANONICAL), 0.0, CLOCK_NS, publish) is Routed.FORWARDED


def test_stall_of_the_active_source_is_reported_and_a_new_source_gets_one_timeout():
    router = CameraRouter(Mode.REAL, CANONICAL, stall_timeout_s=0.5, now=0.0)
    assert router.stall(now=0.5) is None
    assert router.stall(now=0.6) == "real camera stalled: no frame for 600 ms (timeout 500 ms)"
    router.offer_image(Mode.REAL, image(1, CANONICAL), 1.0, CLOCK_NS, lambda: None)
    assert router.stall(now=1.4) is None
    router.switch(Mode.DIGITAL, now=2.0)
    assert router.stall(now=2.3) is None
    assert router.stall(now=2.7).startswith("digital camera stalled: no frame for 700 ms")
    router.offer_image(Mode.DIGITAL, image(1, CANONICAL), 2.8, CLOCK_NS, lambda: None)
    assert router.stall(now=3.0) is None


# --- joint limits and command limiting ----------------------------------------------------


def test_limiter_clamps_to_joint_limits_and_per_step_velocity(limits):
    limiter = CommandLimiter(limits, RATE, velocity_scale=0.5)
    limiter.reset(np.zeros(ACTION_DIM))
    target = np.zeros(ACTION_DIM)
    target[0] = 10.0  # left_arm_joint1: upper 0.9, 2.6 rad/s
    target[1] = -1.0  # left_arm_joint2: lower -0.35
    first = limiter.step(target)
    assert first[0] == pytest.approx(2.6 * 0.5 / RATE)  # 0.0065 rad per 5 ms
    assert first[1] == pytest.approx(-2.6 * 0.5 / RATE)
    assert limiter.velocity[0] == pytest.approx(1.3)
    for _ in range(400):
        settled = limiter.step(target)
    assert settled[0] == pytest.approx(0.9) and settled[1] == pytest.approx(-0.35)
    assert limiter.velocity[0] == 0.0


def test_limiter_reset_clamps_the_start_into_the_limits(limits):
    limiter = CommandLimiter(limits, RATE)
    start = np.zeros(ACTION_DIM)
    start[0] = 5.0
    assert limiter.reset(start)[0] == 0.9


def test_action_inbox_rejects_bad_actions_and_goes_stale():
    inbox = ActionInbox(stale_after_s=0.1)
    assert inbox.submit(np.zeros(ACTION_DIM - 1), now=0.0) == "wrong_size"
    bad = np.zeros(ACTION_DIM)
    bad[5] = np.nan
    assert inbox.submit(bad, now=0.0) == "non_finite"
    bad[5] = np.inf
    assert inbox.submit(bad, now=0.0) == "non_finite"
    assert inbox.fresh(now=0.0) is None and inbox.newest is None
    assert inbox.submit(np.full(ACTION_DIM, 0.1), now=1.0) is None
    assert inbox.fresh(now=1.09) is not None
    assert inbox.fresh(now=1.11) is None
    assert inbox.newest[0] == 0.1


def test_actions_taken_together_the_newest_valid_wins_and_every_other_one_is_counted():
    """The bridge takes every queued /rynn/action at once: none may vanish uncounted."""
    inbox = ActionInbox(stale_after_s=0.1)
    nan = np.full(ACTION_DIM, np.nan)
    older, newer = np.full(ACTION_DIM, 0.1), np.full(ACTION_DIM, 0.2)
    intake = inbox.submit_newest([older, nan, newer, np.zeros(ACTION_DIM - 1), nan], now=1.0)
    assert intake.rejected == ["non_finite", "wrong_size", "non_finite"] and intake.superseded == 1
    np.testing.assert_array_equal(inbox.fresh(now=1.0), newer)
    intake = inbox.submit_newest([nan], now=2.0)  # only bad ones: the stored action stays, and ages
    assert intake.rejected == ["non_finite"] and intake.superseded == 0
    assert inbox.fresh(now=2.0) is None and inbox.newest[0] == 0.2


# --- Ruckig transition --------------------------------------------------------------------


def test_transition_reaches_the_target_within_the_reduced_limits(limits):
    reduced = TransitionLimits(arm_velocity=0.5, arm_acceleration=1.0, arm_jerk=5.0,
                               hand_velocity=1.0, hand_acceleration=4.0, hand_jerk=40.0)
    start = limits.clamp(np.zeros(ACTION_DIM))
    target = start.copy()
    target[LEFT_ARM] += np.array([0.4, 0.3, 0.2, -0.3, 0.1, 0.2, -0.2])
    target = limits.clamp(target)
    approach = SafeTransition(reduced, limits, RATE, start)
    path = [start]
    while not approach.done and len(path) < 10 * RATE:
        path.append(approach.step(target))
    path = np.array(path)
    velocity = np.diff(path, axis=0) / DT
    acceleration = np.diff(velocity, axis=0) / DT
    assert approach.done and np.abs(path[-1] - target).max() <= reduced.arrival_tolerance_rad
    assert np.abs(velocity[:, LEFT_ARM]).max() <= 0.5 + 1e-6
    assert np.abs(acceleration[:, LEFT_ARM]).max() <= 1.0 + 1e-3
    assert 1.0 < len(path) * DT < 4.0  # 0.4 rad with v=0.5, a=1, j=5: about 2 s, not a jump
    assert np.abs(np.diff(path, axis=0)).max() < 0.5 * DT + 1e-9


def test_transition_clamps_an_out_of_limit_target(limits):
    approach = SafeTransition(TransitionLimits(), limits, RATE, np.zeros(ACTION_DIM))
    target = np.zeros(ACTION_DIM)
    target[0] = 1.5  # above left_arm_joint1's 0.9
    for _ in range(int(6 * RATE)):
        position = approach.step(target)
    assert approach.done and position[0] == pytest.approx(0.9, abs=0.005)


def test_transition_moves_as_the_shared_action_trajectory(limits):
    """The approach is rynn_common's ActionTrajectory (synchronised) with the reduced limits, step
    for step, the same wrapper the retarget smoother runs on."""
    reduced = TransitionLimits()
    start = limits.clamp(np.zeros(ACTION_DIM))
    target = limits.clamp(start + 0.3)
    approach = SafeTransition(reduced, limits, RATE, start)
    reference = ActionTrajectory(RATE, *reduced.per_joint(limits.velocity), start=start, synchronized=True)
    reference.set_target(target)
    for _ in range(int(2 * RATE)):
        position = approach.step(target)
        assert reference.step()
        np.testing.assert_array_equal(position, reference.position)


# --- commander ----------------------------------------------------------------------------


_state_sequences = itertools.count(1)


def measure(commander, position, now, sequence=None, velocity=None, echo=(-1, 0)) -> Fault:
    """Feed the commander one measured robot state (sequence numbers increase unless given)."""
    position = np.asarray(position, dtype=np.float64)
    velocity = np.zeros(ACTION_DIM) if velocity is None else np.asarray(velocity, dtype=np.float64)
    state = RobotState(0, next(_state_sequences) if sequence is None else sequence, echo[0], echo[1],
                       position, velocity, np.zeros(ACTION_DIM), 0, 0, 0, 0, 0, 0, 0, 0)
    return commander.update_measured(state, now)


def make_commander(limits, mode=Mode.REAL) -> RobotCommander:
    return RobotCommander(mode, limits, RATE, action_timeout_s=0.1, state_timeout_s=0.1,
                          transition_limits=TransitionLimits(), velocity_scale=1.0)


def test_real_mode_sends_nothing_without_robot_state_and_holds_without_actions(limits):
    commander = make_commander(limits)
    assert commander.cycle(0.0) is None
    measured = limits.clamp(np.full(ACTION_DIM, 0.2))
    measure(commander, measured, now=0.0)
    hold = commander.cycle(0.01)
    assert hold.hold and np.array_equal(hold.position, measured)
    assert commander.faults(0.01) == {"actions": "no fresh action for 100 ms: real robot holding"}


def test_real_mode_approaches_from_the_measured_pose_then_tracks(limits):
    commander = make_commander(limits)
    measured = limits.clamp(np.zeros(ACTION_DIM))
    target = measured.copy()
    target[LEFT_ARM] += 0.2
    target = limits.clamp(target)
    now = 0.0
    measure(commander, measured, now)
    commander.submit_action(target, now)
    first = commander.cycle(now)
    assert not first.hold and commander.phase is Phase.APPROACHING
    assert np.abs(first.position - measured).max() < 1e-3  # starts where the robot is: no jump
    sent = [first.position]
    while commander.phase is Phase.APPROACHING and now < 5.0:
        now += DT
        measure(commander, sent[-1], now)
        commander.submit_action(target, now)
        sent.append(commander.cycle(now).position)
    assert commander.phase is Phase.TRACKING and commander.approaches == 1
    steps = np.abs(np.diff(np.array(sent), axis=0))
    assert steps[:, LEFT_ARM].max() <= 0.5 * DT + 1e-9  # the reduced arm velocity, not the URDF's 2.6 rad/s
    now += DT
    measure(commander, sent[-1], now)
    commander.submit_action(target, now)
    np.testing.assert_allclose(commander.cycle(now).position, target, atol=1e-9)


def test_stale_actions_hold_and_fresh_ones_restart_with_an_approach(limits):
    commander = make_commander(limits)
    measured = limits.clamp(np.zeros(ACTION_DIM))
    measure(commander, measured, 0.0)
    commander.submit_action(measured, 0.0)
    assert not commander.cycle(0.0).hold
    measure(commander, measured, 0.2)
    held = commander.cycle(0.2)  # last action 200 ms old > 100 ms
    assert held.hold and commander.watchdog_trips == 1 and commander.phase is Phase.HOLDING
    commander.submit_action(measured, 0.21)
    assert not commander.cycle(0.21).hold
    assert commander.approaches == 2 and commander.phase in (Phase.APPROACHING, Phase.TRACKING)


def test_silent_robot_state_holds_and_is_a_fault(limits):
    commander = make_commander(limits)
    measured = limits.clamp(np.zeros(ACTION_DIM))
    measure(commander, measured, 0.0)
    commander.submit_action(measured, 0.25)
    assert commander.cycle(0.25).hold
    assert commander.faults(0.25)["robot_state"] == "robot LCM state silent for 250 ms (timeout 100 ms)"


def test_digital_mode_never_commands_and_reports_the_limited_virtual_state(limits):
    commander = make_commander(limits)
    measured = limits.clamp(np.full(ACTION_DIM, 0.1))
    measure(commander, measured, 0.0)
    assert commander.request_mode(Mode.DIGITAL, 0.0) == (True, "switched to digital: no commands reach the real robot")
    np.testing.assert_array_equal(commander.virtual_state()[0], measured)  # starts at the robot's pose
    target = measured.copy()
    target[0] = 10.0
    for i in range(1, 401):
        commander.submit_action(target, i * DT)
        assert commander.cycle(i * DT) is None
        position, velocity = commander.virtual_state()
        if i == 1:
            assert position[0] == pytest.approx(0.1 + 2.6 * DT) and velocity[0] == pytest.approx(2.6)
    assert position[0] == pytest.approx(0.9)  # clamped to left_arm_joint1's upper limit
    assert "actions" not in commander.faults(2.0)


def test_the_virtual_robot_advances_by_measured_time_however_many_cycles_ran(limits):
    """A starved bridge runs fewer cycles; the digital robot must still be where the velocity limit
    allows after the same time (it stepped one period per cycle before: 10x slower at 10 cycles/s)."""
    measured = limits.clamp(np.full(ACTION_DIM, 0.1))
    target = measured.copy()
    target[0] = 10.0  # left_arm_joint1: 2.6 rad/s, upper limit 0.9
    positions = {}
    for name, period in (("200 Hz", DT), ("starved, 10 Hz", 0.1)):
        commander = make_commander(limits)
        measure(commander, measured, 0.0)
        assert commander.request_mode(Mode.DIGITAL, 0.0)[0]
        for now in np.arange(1, round(0.2 / period) + 1) * period:
            commander.submit_action(target, now)
            assert commander.cycle(now) is None
        positions[name], velocity = commander.virtual_state()
        assert velocity[0] == pytest.approx(2.6)  # never faster than the limit, whatever the cycle length
    assert positions["200 Hz"][0] == pytest.approx(0.1 + 2.6 * 0.2)
    np.testing.assert_allclose(positions["starved, 10 Hz"], positions["200 Hz"], atol=1e-9)


def test_switch_to_real_is_refused_while_the_robot_state_is_unknown_or_silent(limits):
    commander = make_commander(limits, mode=Mode.DIGITAL)
    ok, message = commander.request_mode(Mode.REAL, 0.0)
    assert not ok and message == "refusing to switch to real: robot state unknown: no LCM state received yet"
    measure(commander, np.zeros(ACTION_DIM), 1.0)
    ok, message = commander.request_mode(Mode.REAL, 1.5)
    assert not ok and "robot LCM state silent for 500 ms" in message and commander.mode is Mode.DIGITAL
    measure(commander, np.zeros(ACTION_DIM), 1.5)
    commander.submit_action(np.zeros(ACTION_DIM), 1.5)
    ok, message = commander.request_mode(Mode.REAL, 1.5)
    assert ok and message.startswith("switched to real; approaching the operator command")
    assert commander.mode is Mode.REAL and commander.phase is Phase.HOLDING
    assert commander.request_mode(Mode.REAL, 1.5) == (True, "already in real mode")


# --- settings -----------------------------------------------------------------------------


def test_bridge_yaml_loads_and_unknown_keys_are_errors(tmp_path):
    settings = load_bridge_settings()
    assert settings.start_mode == "real" and settings.image_topic == "/camera/camera/color/image_raw"
    assert settings.transition.arm_velocity == 0.5 and isinstance(settings.transition, TransitionLimits)
    assert settings == BridgeSettings()  # the file and the code defaults agree
    bad = tmp_path / "bridge.yaml"
    bad.write_text("action_timeout: 1\n")
    with pytest.raises(ValueError, match="action_timeout"):
        load_bridge_settings(bad)


# --- untrusted robot state and a second commander (issue 17 rows 1-3, 5) --------------------


def tracking_commander(limits):
    """A real-mode commander that has taken a good state and an action, and sent its first command."""
    commander = make_commander(limits)
    measured = limits.clamp(np.zeros(ACTION_DIM))
    assert measure(commander, measured, 0.0) == Fault.NONE
    commander.submit_action(measured, 0.0)
    first = commander.cycle(0.0)
    assert first is not None and not first.hold
    return commander, measured


@pytest.mark.parametrize("bad_position, bad_velocity, fault, counter", [
    (np.nan, 0.0, Fault.NON_FINITE, "rejected_non_finite"),
    (np.inf, 0.0, Fault.NON_FINITE, "rejected_non_finite"),
    (0.0, np.nan, Fault.NON_FINITE, "rejected_non_finite"),
    (1e3, 0.0, Fault.JOINT_LIMIT, "rejected_joint_limit"),  # finite but absurd
    (0.0, 100.0, Fault.JOINT_LIMIT, "rejected_joint_limit"),  # reported speed far above the limit
])
def test_a_rejected_state_is_counted_and_nothing_is_derived_from_it(limits, bad_position, bad_velocity, fault, counter):
    commander, measured = tracking_commander(limits)
    position, velocity = measured.copy(), np.zeros(ACTION_DIM)
    position[0] += bad_position
    velocity[0] = bad_velocity
    assert measure(commander, position, 0.001, velocity=velocity) == fault
    assert getattr(commander.state_validator.counters, counter) == 1
    commander.submit_action(measured, 0.005)
    hold = commander.cycle(0.005)  # the robot holds at the last good pose, never the rejected one
    assert hold.hold and np.array_equal(hold.position, measured) and np.isfinite(hold.position).all()
    assert "robot state rejected" in commander.faults(0.005)["robot_state"]
    ok, message = commander.request_mode(Mode.DIGITAL, 0.006)
    np.testing.assert_array_equal(commander.virtual_state()[0], measured)  # the digital robot starts from it too
    ok, message = commander.request_mode(Mode.REAL, 0.007)
    assert not ok and "robot state rejected" in message
    # Good states for longer than the state timeout clear the fault; motion restarts with an approach from them.
    for i in range(1, 30):
        assert measure(commander, measured, 0.007 + i * DT) == Fault.NONE
    now = 0.007 + 30 * DT
    assert "robot_state" not in commander.faults(now)
    assert commander.request_mode(Mode.REAL, now)[0]
    commander.submit_action(measured, now)
    resumed = commander.cycle(now)
    assert not resumed.hold and np.abs(resumed.position - measured).max() < 1e-3


def test_states_that_jump_or_go_backwards_are_rejected_and_a_restarted_robot_is_taken_back(limits):
    commander = make_commander(limits)
    measured = limits.clamp(np.zeros(ACTION_DIM))
    assert measure(commander, measured, 0.0, sequence=10) == Fault.NONE
    assert measure(commander, measured, 0.002, sequence=10) == Fault.SEQUENCE  # did not advance
    assert measure(commander, measured, 0.004, sequence=3) == Fault.SEQUENCE
    jumped = measured.copy()
    jumped[0] -= 0.5  # within the limits, but 0.5 rad in 6 ms is ~80 rad/s
    assert measure(commander, jumped, 0.006, sequence=11) == Fault.JOINT_LIMIT
    assert measure(commander, measured + 0.001, 0.008, sequence=12) == Fault.NONE
    counters = commander.state_validator.counters
    assert (counters.accepted_states, counters.rejected_sequence, counters.rejected_joint_limit) == (2, 2, 1)
    # The robot restarts (sequence from 1, another pose): after the state timeout it is the new baseline.
    assert measure(commander, jumped, 0.5, sequence=1) == Fault.NONE


def test_the_virtual_robot_never_takes_a_non_finite_state(limits):
    commander = make_commander(limits)
    measured = limits.clamp(np.full(ACTION_DIM, 0.1))
    measure(commander, measured, 0.0)
    for i in range(1, 27):  # 130 ms of NaN states around the switch
        measure(commander, np.full(ACTION_DIM, np.nan), i * DT)
        if i == 13:
            assert commander.request_mode(Mode.DIGITAL, i * DT)[0]
        commander.submit_action(measured + 0.05, i * DT)
        command = commander.cycle(i * DT)
        if i < 13:  # real mode: a hold at the last good pose
            assert command.hold and np.array_equal(command.position, measured)
            continue
        assert command is None
        position, velocity = commander.virtual_state()
        assert np.isfinite(position).all() and np.isfinite(velocity).all()
    assert commander.state_validator.counters.rejected_non_finite == 26


def test_an_echo_of_another_senders_command_stops_commanding_until_the_operator_rearms(limits):
    commander, measured = tracking_commander(limits)
    ours = commander.cycle(0.001)
    assert measure(commander, measured, 0.002, echo=(ours.sequence, ours.utime)) == Fault.NONE
    assert "second_commander" not in commander.faults(0.002)
    # Another sender with a higher sequence: the robot accepted its command.
    assert measure(commander, measured, 0.004, echo=(ours.sequence + 50, 123)) == Fault.NONE
    assert "did not send" in commander.faults(0.004)["second_commander"]
    assert commander.cycle(0.005) is None and commander.hold_command() is None  # the bridge stops commanding
    # Same sequence as ours but another sender's utime: also foreign.
    other, _ = tracking_commander(limits)
    sent = other.cycle(0.001)
    measure(other, measured, 0.002, echo=(sent.sequence, sent.utime + 1))
    assert other.second_commander is not None
    # The operator's way out: request real mode again; the bridge resumes with an approach from the measured pose.
    commander.submit_action(measured, 0.006)
    ok, message = commander.request_mode(Mode.REAL, 0.006)
    assert ok and message.startswith("resuming real mode from the measured pose")
    resumed = commander.cycle(0.007)
    assert resumed is not None and not resumed.hold and commander.approaches == 2
    assert measure(commander, measured, 0.008, echo=(ours.sequence + 50, 123)) == Fault.NONE  # the old echo: baseline
    assert measure(commander, measured, 0.009, echo=(ours.sequence + 51, 123)) == Fault.NONE  # in flight at the re-arm
    assert measure(commander, measured, 0.010, echo=(resumed.sequence, resumed.utime)) == Fault.NONE
    assert "second_commander" not in commander.faults(0.010)
    assert measure(commander, measured, 0.011, echo=(ours.sequence + 52, 123)) == Fault.NONE
    assert "did not send" in commander.faults(0.011)["second_commander"]  # after our echo: a new conflict


def test_command_sequences_start_above_any_earlier_run(limits):
    first, _ = tracking_commander(limits)
    later, _ = tracking_commander(limits)
    a, b = first.cycle(0.001), later.cycle(0.001)
    assert b.sequence > a.sequence and first.cycle(0.002).sequence == a.sequence + 1


def test_hold_command_is_the_last_good_pose_in_real_mode(limits):
    commander, measured = tracking_commander(limits)
    hold = commander.hold_command()
    assert hold.hold and np.array_equal(hold.position, measured) and commander.phase is Phase.HOLDING
    commander.request_mode(Mode.DIGITAL, 0.001)
    assert commander.hold_command() is None


# --- counters on /diagnostics -------------------------------------------------------------


RUCKIG_FAILURE = Path(__file__).resolve().parents[2] / "rynn_common/test/data/ruckig_phase_sync_failure.json"


def diagnostics_values(commander, command_loop, link) -> dict[str, str]:
    """The bridge's /diagnostics key/values, built as its status timer builds them."""
    from builtin_interfaces.msg import Time

    from rynn_common.pipeline_stats import PipelineStats
    from rynn_common.ros_conversions import make_diagnostics

    stats = PipelineStats()
    mirror_bridge_counters(stats, commander, command_loop, link, frames_forwarded=0)
    return {kv.key: kv.value for kv in make_diagnostics(stats, "rynn_bridge", link.url, Time()).status[0].values}


def test_an_approach_cycle_planned_per_joint_is_counted_on_the_diagnostics(limits, lcm_url):
    """The soak's state in which Ruckig's synchronised re-plan raised, met by the bridge's approach: the cycle is
    planned per joint and /diagnostics says so (an event: no input was dropped or rejected)."""
    case = json.loads(RUCKIG_FAILURE.read_text())
    link = LcmRobotLink(lcm_url, "TEST_COUNTERS_COMMAND", "TEST_COUNTERS_STATE", lambda state, at: None)
    loop = FixedRateThread(RATE, lambda now: None, "test_counters")  # never started: its counts are 0
    commander = make_commander(limits)
    start, target = np.array(case["current_position"]), np.array(case["target_position"])
    measure(commander, start, 0.0)
    commander.submit_action(target, 0.0)
    assert not commander.cycle(0.0).hold and commander.phase is Phase.APPROACHING
    assert diagnostics_values(commander, loop, link)["events.approach_unsynchronized_steps"] == "0"
    trajectory = commander._approach._trajectory  # the approach in motion, where the soak's cycle began
    trajectory.reset(start)
    trajectory._input.current_velocity = case["current_velocity"]
    trajectory._input.current_acceleration = case["current_acceleration"]
    measure(commander, start, DT)
    commander.submit_action(target, DT)
    assert not commander.cycle(DT).hold  # moved, not held: the cycle was planned
    values = diagnostics_values(commander, loop, link)
    assert values["events.approach_unsynchronized_steps"] == "1"
    assert values["dropped.command_cycle_errors"] == "0" and not any(key.startswith("rejected.") for key in values)
