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


def test_tf_message_carries_each_pose_and_is_refilled_in_place_only_for_the_same_frames():
    from builtin_interfaces.msg import Time
    from transforms3d.euler import euler2mat

    from rynn_common.rotations import quaternions_xyzw

    poses = np.tile(np.eye(4), (2, 1, 1))
    poses[0, :3, :3], poses[0, :3, 3] = euler2mat(0.3, -0.2, 1.1), (0.1, -0.2, 1.3)
    poses[1, :3, 3] = (-0.5, 0.0, 2.0)
    frames = [("operator_world", "operator_chest"), ("operator_world", "operator_left_wrist")]
    first = ros_conversions.make_tf_message(frames, poses, Time(sec=5, nanosec=7))
    read = lambda msg: [(t.header.frame_id, t.child_frame_id, t.header.stamp.sec, t.header.stamp.nanosec,  # noqa: E731
                         [t.transform.translation.x, t.transform.translation.y, t.transform.translation.z],
                         [t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z, t.transform.rotation.w])
                        for t in msg.transforms]
    expected_q = quaternions_xyzw(poses[:, :3, :3])
    for (parent, child, sec, nanosec, xyz, q), frame, pose, q_expected in zip(read(first), frames, poses, expected_q, strict=True):
        assert (parent, child, sec, nanosec) == (*frame, 5, 7)
        np.testing.assert_allclose(xyz, pose[:3, 3])
        np.testing.assert_allclose(q, q_expected)

    with pytest.raises(ValueError, match="2 frames but 1 poses"):
        ros_conversions.make_tf_message(frames, poses[:1], Time(sec=8))


def test_a_packed_bimanual_skeleton_equals_a_fresh_message_and_keeps_nothing_of_the_one_packed_before():
    from rclpy.serialization import deserialize_message
    from rynn_teleop_msgs.msg import BimanualSkeleton

    from rynn_common.cdr_layout import BimanualSkeletonLayout

    rng = np.random.default_rng(4)
    first_joints, joints = rng.normal(size=(2, 21, 3)), rng.normal(size=(2, 21, 3))
    joints[1, 5] = np.nan
    layout = BimanualSkeletonLayout("camera", "left_wrist", "camera")
    ros_conversions.bimanual_skeleton_bytes(layout, first_joints[0], first_joints[1], 1_000_000_000, left_elbow=[0.1, 0.2, 0.3],
                                            right_elbow=[0.4, 0.5, 0.6], left_confidence=np.full(21, 0.5))
    arguments = dict(left_joints=joints[0], right_joints=joints[1], left_valid=False, right_elbow=[0.7, 0.8, 0.9])
    packed = deserialize_message(ros_conversions.bimanual_skeleton_bytes(layout, stamp_ns=2_500_000_000, **arguments),
                                 BimanualSkeleton)
    assert packed == ros_conversions.make_bimanual_skeleton(**arguments, stamp=2.5, frame_id="camera",
                                                            left_frame_id="left_wrist")
    assert not packed.left_elbow_valid and packed.right.confidence[5] == 0.0 and packed.left.confidence[0] == 1.0


@pytest.mark.parametrize("seconds, sec, nanosec", [
    (1.0, 1, 0), (1.25, 1, 250_000_000), (-0.5, -1, 500_000_000),
    (1.9999999999, 2, 0),  # the fraction rounds up to a whole second: it carries (it once wrapped to 1.0 s)
    (1_764_825_600.123456789, 1_764_825_600, 123_456_717),  # an epoch stamp: float64 holds ~0.2 us of it
])
def test_float_seconds_become_a_stamp_that_never_goes_back(seconds, sec, nanosec):
    stamp = ros_conversions.time_from_seconds(seconds)
    assert (stamp.sec, stamp.nanosec) == (sec, nanosec)
    assert ros_conversions.stamp_ns_from_seconds(seconds) == sec * 1_000_000_000 + nanosec
