"""The synthetic operator drives the retarget node over DDS, each node in its own process.

Asserts that the commanded arms reproduce the operator's wrist targets through
the scale and calibration chain, that the right hand closes when the synthetic
right hand closes, and that the 200 Hz command respects joint and velocity limits.
"""

import signal
import time

import numpy as np
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy

from ros_test_tools import read_log, wait_until, watch_reject_counters

pytestmark = pytest.mark.ros

RELIABLE = QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE)
COLLECT_S = 6.0
SOURCE_ARGS = ["-p", "source:=synthetic", "-p", "synthetic.motion:=grasp", "-p", "synthetic.period_s:=3.0"]


def stamp_s(header) -> float:
    return header.stamp.sec + header.stamp.nanosec * 1e-9


@pytest.fixture
def operator_graph(start_process):
    procs = [
        start_process(["-m", "rynn_retarget.nodes.tracker_node", "--ros-args", *SOURCE_ARGS], "tracker"),
        start_process(["-m", "rynn_retarget.nodes.glove_node", "--ros-args", *SOURCE_ARGS], "glove"),
        start_process(["-m", "rynn_retarget.nodes.retarget_node"], "retarget"),
    ]
    return procs


def test_retarget_node_follows_the_synthetic_operator(ros_node, operator_graph):
    from rynn_teleop_msgs.msg import BimanualSkeleton, RobotAction
    from tf2_msgs.msg import TFMessage

    from rynn_common.action_layout import LEFT_ARM, RIGHT_ARM, RIGHT_HAND
    from rynn_common.config_paths import find_config
    from rynn_retarget.config import load_retarget_config
    from rynn_retarget.kinematics.transforms import matrix_from_transform
    from rynn_retarget.pipeline import RetargetPipeline

    actions, tf_samples, hands, skeletons = [], [], [], []
    ros_node.create_subscription(
        RobotAction, "/rynn/action", lambda m: actions.append((stamp_s(m.header), m.sequence, np.array(m.positions))), RELIABLE
    )
    ros_node.create_subscription(TFMessage, "/tf", lambda m: tf_samples.append(m), RELIABLE)
    ros_node.create_subscription(
        BimanualSkeleton, "/rynn/operator/hands",
        lambda m: hands.append((stamp_s(m.header), np.array([[p.x, p.y, p.z] for p in m.right.joints]))), RELIABLE,
    )
    ros_node.create_subscription(
        BimanualSkeleton, "/rynn/operator/skeleton_camera",
        lambda m: skeletons.append((stamp_s(m.header), m.header.frame_id, [m.left.joints[0], m.right.joints[0]])), RELIABLE,
    )
    logs = lambda: "\n".join(read_log(p)[-2000:] for p in operator_graph)  # noqa: E731
    assert wait_until(lambda: len(actions) > 10 and len(tf_samples) > 10, 60.0, spin=ros_node.spin_once), logs()
    actions.clear(), tf_samples.clear(), hands.clear(), skeletons.clear()
    start = time.monotonic()
    wait_until(lambda: time.monotonic() - start > COLLECT_S, COLLECT_S + 1, spin=ros_node.spin_once)
    for proc in operator_graph:
        assert proc.poll() is None, logs()

    pipeline = RetargetPipeline(load_retarget_config(find_config("rynn_retarget", "retarget.yaml")))
    names = {"operator_chest": "chest", "operator_left_wrist": "left_wrist", "operator_right_wrist": "right_wrist",
             "operator_left_upper_arm": "left_upper_arm", "operator_right_upper_arm": "right_upper_arm"}
    tracker_stamps, targets = [], {"left": [], "right": []}
    for msg in tf_samples:
        trackers = {names[t.child_frame_id]: matrix_from_transform(t.transform) for t in msg.transforms}
        tracker_stamps.append(stamp_s(msg.transforms[0].header))
        for side in ("left", "right"):
            targets[side].append(pipeline.arm_target(side, trackers)[0])
    tracker_stamps = np.array(tracker_stamps)
    action_stamps = np.array([a[0] for a in actions])
    q = np.array([a[2] for a in actions])

    # 1. The 200 Hz stream: rate, monotonic sequence, joint and velocity limits.
    duration = action_stamps[-1] - action_stamps[0]
    assert len(actions) / duration > 100.0, f"only {len(actions) / duration:.0f} Hz of commands"
    sequences = np.array([a[1] for a in actions])
    assert np.all(np.diff(sequences) > 0) and np.all(np.diff(action_stamps) > 0)
    assert np.all(q >= pipeline.lower - 1e-9) and np.all(q <= pipeline.upper + 1e-9)
    consecutive = np.diff(sequences) == 1
    step_velocity = np.abs(np.diff(q, axis=0))[consecutive] / (1.0 / pipeline.config.smoothing.rate_hz)
    smoothing = pipeline.config.smoothing
    assert step_velocity[:, :14].max() <= smoothing.arm_max_velocity * 1.01
    assert step_velocity[:, 14:].max() <= smoothing.hand_max_velocity * 1.01

    # 2a. Each IK solution puts the robot palm where the operator's wrist maps through the
    #     scale and calibration chain: the node's camera-frame skeleton is stamped with the
    #     tracker sample it came from, so the pairing is exact.
    q_any = pipeline.neutral_action()
    palm_errors = []
    for stamp, frame_id, wrists in skeletons:
        assert frame_id == "camera_color_optical_frame"
        i = int(np.argmin(np.abs(tracker_stamps - stamp)))
        if abs(tracker_stamps[i] - stamp) > 1e-5:
            continue
        for k, (side, part) in enumerate((("left", LEFT_ARM), ("right", RIGHT_ARM))):
            arm = pipeline.arms[side]
            ee_to_palm = np.linalg.inv(arm.ee_pose(q_any[part])) @ arm.palm_pose(q_any[part])
            expected = (pipeline.camera_from_base @ targets[side][i] @ ee_to_palm)[:3, 3]
            palm_errors.append(np.linalg.norm(expected - [wrists[k].x, wrists[k].y, wrists[k].z]))
    palm_errors = np.array(palm_errors)
    assert len(palm_errors) > 100, f"only {len(palm_errors)} skeleton samples matched a tracker sample"
    assert np.median(palm_errors) < 0.005 and np.percentile(palm_errors, 95) < 0.015, (
        f"IK palm error median {np.median(palm_errors) * 1e3:.1f} mm, p95 {np.percentile(palm_errors, 95) * 1e3:.1f} mm"
    )

    # 2b. The smoothed 200 Hz command follows those targets, allowing for the smoothing lag.
    def wrist_errors(lag: float):
        index = np.clip(np.searchsorted(tracker_stamps, action_stamps - lag), 0, len(tracker_stamps) - 1)
        errors = []
        for side, part in (("left", LEFT_ARM), ("right", RIGHT_ARM)):
            for k, i in enumerate(index):
                ee = pipeline.arms[side].ee_pose(q[k, part])
                errors.append(np.linalg.norm(ee[:3, 3] - targets[side][i][:3, 3]))
        return np.array(errors)

    lags = np.arange(0.0, 1.0, 0.02)
    medians = [np.median(wrist_errors(lag)) for lag in lags]
    best = lags[int(np.argmin(medians))]
    errors = wrist_errors(best)
    assert np.median(errors) < 0.025, f"median wrist error {np.median(errors) * 1e3:.1f} mm at lag {best:.2f} s"

    # 3. The right hand closes when the synthetic right hand closes (fingertips near the wrist).
    hand_stamps = np.array([h[0] for h in hands])
    openness = np.array([np.linalg.norm(h[1][[8, 12, 16, 20]], axis=1).mean() for h in hands])
    flexion = q[:, RIGHT_HAND].mean(axis=1)
    assert openness.max() - openness.min() > 0.02, "the synthetic hand did not open and close in the window"

    def hand_correlation(lag: float) -> float:
        """Spearman rank correlation: the mapping is monotonic, not linear."""
        paired = flexion[np.clip(np.searchsorted(action_stamps, hand_stamps + lag), 0, len(flexion) - 1)]
        rank = lambda x: np.argsort(np.argsort(x))  # noqa: E731
        return np.corrcoef(rank(openness), rank(paired))[0, 1]

    correlation = min(hand_correlation(lag) for lag in lags)
    assert flexion.max() - flexion.min() > 0.3, f"right hand flexion only spans {np.ptp(flexion):.2f} rad"
    assert correlation < -0.7, f"hand flexion vs. synthetic openness correlation {correlation:.2f}"


def test_bad_operator_input_is_counted_and_never_reaches_the_command(ros_node, start_process, tmp_path):
    """NaN trackers, garbage hands and out-of-order samples: counted in /rynn/status,
    the node keeps publishing finite commands, and calibration still works afterwards."""
    from builtin_interfaces.msg import Time
    from geometry_msgs.msg import TransformStamped
    from rynn_teleop_msgs.msg import BimanualSkeleton, RobotAction
    from std_srvs.srv import Trigger
    from tf2_msgs.msg import TFMessage

    calibration_file = tmp_path / "calibration.yaml"
    retarget = start_process(
        ["-m", "rynn_retarget.nodes.retarget_node", "--ros-args", "-p", f"calibration_file:={calibration_file}"],
        "retarget",
    )
    tracker = start_process(["-m", "rynn_retarget.nodes.tracker_node", "--ros-args", *SOURCE_ARGS], "tracker")
    actions = []
    ros_node.create_subscription(RobotAction, "/rynn/action", lambda m: actions.append(np.array(m.positions)), RELIABLE)

    reasons = watch_reject_counters(ros_node, "retarget_node", RELIABLE)
    tf_pub = ros_node.create_publisher(TFMessage, "/tf", RELIABLE)
    hands_pub = ros_node.create_publisher(BimanualSkeleton, "/rynn/operator/hands", RELIABLE)
    assert wait_until(lambda: len(actions) > 50, 60.0, spin=ros_node.spin_once), read_log(retarget)

    def tracker_msg(stamp: Time, value: float) -> TFMessage:
        t = TransformStamped(child_frame_id="operator_chest")
        t.header.frame_id, t.header.stamp = "operator_world", stamp
        t.transform.translation.x = value
        t.transform.rotation.w = 1.0
        return TFMessage(transforms=[t])

    # The tracker pauses while the bad /tf goes out: the node's /tf queue (KEEP_LAST) then holds only it,
    # so a node that the loaded machine starves cannot have it replaced, unseen, by the 120 Hz live stream;
    # each one reaches the node's checks and must be counted.
    old = Time(sec=1, nanosec=0)  # far older than the live stream: out of order
    tracker.send_signal(signal.SIGSTOP)
    try:
        for _ in range(5):
            tf_pub.publish(tracker_msg(ros_node.get_clock().now().to_msg(), float("nan")))
            tf_pub.publish(tracker_msg(old, 0.0))
            ros_node.spin_once(0.02)
        assert wait_until(lambda: reasons.get("rejected.tf_nonfinite", 0) >= 5 and reasons.get("dropped.tf_out_of_order", 0) >= 5,
                          20.0, spin=ros_node.spin_once), reasons
    finally:
        tracker.send_signal(signal.SIGCONT)

    # Garbage hands are judged when a tracker sample takes them (within hands_timeout of their arrival), so
    # they go out as a glove stream would, while the tracker runs again.
    garbage = BimanualSkeleton()
    garbage.left.confidence = [float("nan")] * 21
    garbage.left.joints[3].x = float("inf")
    garbage.left.valid = True

    def garbage_and_spin():
        hands_pub.publish(garbage)
        ros_node.spin_once(0.05)

    assert wait_until(lambda: reasons.get("rejected.guard_invalid_hand", 0) >= 1, 20.0, spin=garbage_and_spin), reasons
    assert retarget.poll() is None, read_log(retarget)
    assert np.isfinite(np.array(actions)).all()

    client = ros_node.create_client(Trigger, "/retarget_node/calibrate")
    assert client.wait_for_service(timeout_sec=20.0)
    future = client.call_async(Trigger.Request())
    assert wait_until(future.done, 20.0, spin=ros_node.spin_once)
    assert future.result().success, future.result().message
    saved = calibration_file.read_text()
    assert "left:" in saved and "elbow_offset" in saved
    assert tracker.poll() is None
