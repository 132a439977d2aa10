"""Every custom interface crosses a real DDS link between two processes."""

import json

import numpy as np
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ros_test_tools import read_log, wait_until

pytestmark = pytest.mark.ros

LATCHED = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def test_messages_and_set_mode_cross_processes(ros_node, start_process):
    from rynn_teleop_msgs.msg import BimanualSkeleton, RobotAction, TeleopStatus
    from rynn_teleop_msgs.srv import SetMode

    from rynn_common.ros_conversions import robot_action_to_array
    from rynn_common.skeleton_arrays import bimanual_skeleton_to_arrays

    got: dict = {}
    ros_node.create_subscription(RobotAction, "/test/robot_action", lambda m: got.setdefault("action", m), LATCHED)
    ros_node.create_subscription(BimanualSkeleton, "/test/skeleton", lambda m: got.setdefault("skeleton", m), LATCHED)
    ros_node.create_subscription(TeleopStatus, "/test/status", lambda m: got.setdefault("status", m), LATCHED)
    requests = []

    def on_set_mode(request, response):
        requests.append(request.mode)
        response.success, response.message = True, "switched to digital"
        response.previous_mode = SetMode.Request.MODE_REAL
        return response

    ros_node.create_service(SetMode, "/test/set_mode", on_set_mode)
    talker = start_process(["test/support/interface_talker.py"], "talker")

    assert wait_until(lambda: len(got) == 3 and requests, 60.0, spin=ros_node.spin_once), (
        f"received only {sorted(got)} and {requests} over DDS\n{read_log(talker)}"
    )
    action = got["action"]
    assert action.sequence == 42 and action.header.frame_id == "base_link"
    assert (action.header.stamp.sec, action.header.stamp.nanosec) == (1234, 500_000_000)
    np.testing.assert_allclose(robot_action_to_array(action), np.linspace(-1.0, 1.0, 54))

    skel = bimanual_skeleton_to_arrays(got["skeleton"])
    expected = np.arange(2 * 21 * 3, dtype=float).reshape(2, 21, 3) * 1e-3
    expected[1, 7] = np.nan
    assert got["skeleton"].header.frame_id == "camera_color_optical_frame"
    assert got["skeleton"].left.side == got["skeleton"].left.LEFT
    assert got["skeleton"].right.side == got["skeleton"].right.RIGHT
    np.testing.assert_allclose(skel["joints"], expected)
    assert skel["confidence"][1, 7] == 0.0 and skel["confidence"].sum() == 41.0
    assert skel["valid"].tolist() == [True, True]
    np.testing.assert_allclose(skel["elbows"][0], [0.1, 0.2, 0.3])
    assert np.isnan(skel["elbows"][1]).all()

    status = got["status"]
    assert status.mode == TeleopStatus.MODE_DIGITAL and status.source == "interface_talker"
    assert (status.dropped_inputs, status.rejected_inputs, status.outputs) == (3, 2, 99)
    assert list(status.faults) == ["lcm link silent"]
    assert status.latencies[0].stage == "dit" and status.latencies[0].p99 == pytest.approx(0.03)

    assert requests == [SetMode.Request.MODE_DIGITAL]
    assert wait_until(lambda: "previous_mode" in read_log(talker), 30.0), read_log(talker)
    reply = json.loads(read_log(talker).strip().splitlines()[-1])
    assert reply == {"success": True, "message": "switched to digital", "previous_mode": SetMode.Request.MODE_REAL}
