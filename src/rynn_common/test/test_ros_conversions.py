"""The message builders reject what must never reach a robot and keep what is missing visible."""

import numpy as np
import pytest

from rynn_common.action_layout import ACTION_DIM, joint_names, split_action, validate_action

ros_conversions = pytest.importorskip("rynn_common.ros_conversions", reason="needs the built rynn_teleop_msgs")


@pytest.mark.parametrize("length", [0, 53, 55, 108])
def test_robot_action_rejects_wrong_size(length):
    with pytest.raises(ValueError, match="exactly 54"):
        ros_conversions.make_robot_action(np.zeros(length), 0.0)


def test_robot_action_rejects_matrix_shaped_input():
    with pytest.raises(ValueError, match="exactly 54"):
        ros_conversions.make_robot_action(np.zeros((6, 9)), 0.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_robot_action_rejects_non_finite_and_names_the_joint(bad):
    values = np.zeros(ACTION_DIM)
    values[20] = bad
    with pytest.raises(ValueError, match="left_finger2_joint3"):
        ros_conversions.make_robot_action(values, 0.0)


def test_robot_action_round_trip_and_stamp():
    values = np.linspace(-2, 2, ACTION_DIM)
    msg = ros_conversions.make_robot_action(values, 10.25, sequence=7)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.sequence) == (10, 250_000_000, 7)
    np.testing.assert_array_equal(ros_conversions.robot_action_to_array(msg), values)


def test_layout_constants_match_the_message():
    from rynn_teleop_msgs.msg import RobotAction

    assert RobotAction.ACTION_DIM == ACTION_DIM == len(joint_names())
    parts = split_action(np.arange(ACTION_DIM, dtype=float))
    assert parts["right_arm"][0] == RobotAction.RIGHT_ARM_START
    assert parts["left_hand"][0] == RobotAction.LEFT_HAND_START
    assert parts["right_hand"][0] == RobotAction.RIGHT_HAND_START
    assert joint_names()[RobotAction.LEFT_HAND_START] == "left_finger1_joint1"


def test_hand_skeleton_marks_nan_joints_missing_and_all_nan_hand_invalid():
    pts = np.ones((21, 3))
    pts[4] = np.nan
    msg = ros_conversions.make_hand_skeleton("left", pts, 0.0, "wrist")
    assert msg.valid and msg.confidence[4] == 0.0 and np.isfinite([msg.joints[4].x]).all()
    lost = ros_conversions.make_hand_skeleton("right", np.full((21, 3), np.nan), 0.0, "wrist")
    assert not lost.valid


def test_hand_skeleton_rejects_wrong_shape_and_side():
    with pytest.raises(ValueError, match=r"\(21, 3\)"):
        ros_conversions.make_hand_skeleton("left", np.zeros((20, 3)), 0.0, "wrist")
    with pytest.raises(ValueError, match="side"):
        ros_conversions.make_hand_skeleton("middle", np.zeros((21, 3)), 0.0, "wrist")


def test_validate_action_returns_float64_copy():
    out = validate_action(list(range(ACTION_DIM)))
    assert out.dtype == np.float64 and out.shape == (ACTION_DIM,)


def test_status_and_diagnostics_report_counters_latencies_and_faults():
    from diagnostic_msgs.msg import DiagnosticStatus

    from rynn_common.pipeline_stats import PipelineStats

    stats = PipelineStats()
    for ms in (1.0, 2.0, 3.0):
        stats.record("ik", ms * 1e-3)
    stats.drop("stale", 2)
    stats.reject("nan_joint")
    stats.count_output(5)
    stamp = ros_conversions.time_from_seconds(1.0)
    status = ros_conversions.make_teleop_status(stats, "retarget", 1, stamp)
    assert (status.dropped_inputs, status.rejected_inputs, status.outputs, status.mode) == (2, 1, 5, 1)
    assert status.latencies[0].stage == "ik" and status.latencies[0].last == pytest.approx(3e-3)
    assert status.latencies[0].p50 == pytest.approx(2e-3)
    diag = ros_conversions.make_diagnostics(stats, "retarget", "operator", stamp).status[0]
    assert diag.level == DiagnosticStatus.WARN
    assert {kv.key: kv.value for kv in diag.values}["rejected.nan_joint"] == "1"
    stats.set_fault("stale", "no tracker data for 250 ms")
    diag = ros_conversions.make_diagnostics(stats, "retarget", "operator", stamp).status[0]
    assert diag.level == DiagnosticStatus.ERROR and "250 ms" in diag.message
    stats.clear_fault("stale")
    assert not ros_conversions.make_teleop_status(stats, "r", 0, stamp).faults
