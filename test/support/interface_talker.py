"""Second process of test_interfaces_two_process: publishes one of each custom
message with known values (transient-local, so a late subscriber still gets
them), calls /test/set_mode, prints the response as JSON and spins until SIGINT."""

import json

import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rynn_teleop_msgs.msg import BimanualSkeleton, RobotAction, StageLatency, TeleopStatus
from rynn_teleop_msgs.srv import SetMode

from rynn_common.ros_conversions import make_bimanual_skeleton, make_robot_action

LATCHED = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STAMP = 1234.5


def main() -> None:
    rclpy.init()
    node = rclpy.create_node("interface_talker")
    hands = np.arange(2 * 21 * 3, dtype=float).reshape(2, 21, 3) * 1e-3
    hands[1, 7] = np.nan  # a missing right-hand joint travels as confidence 0
    publishers = {
        "action": node.create_publisher(RobotAction, "/test/robot_action", LATCHED),
        "skeleton": node.create_publisher(BimanualSkeleton, "/test/skeleton", LATCHED),
        "status": node.create_publisher(TeleopStatus, "/test/status", LATCHED),
    }
    publishers["action"].publish(make_robot_action(np.linspace(-1.0, 1.0, 54), STAMP, sequence=42))
    publishers["skeleton"].publish(
        make_bimanual_skeleton(hands[0], hands[1], STAMP, "camera_color_optical_frame",
                               left_elbow=[0.1, 0.2, 0.3])
    )
    status = TeleopStatus(source="interface_talker", mode=TeleopStatus.MODE_DIGITAL,
                          dropped_inputs=3, rejected_inputs=2, outputs=99, faults=["lcm link silent"])
    status.latencies = [StageLatency(stage="dit", last=0.02, p50=0.018, p99=0.03)]
    publishers["status"].publish(status)

    client = node.create_client(SetMode, "/test/set_mode")
    if not client.wait_for_service(timeout_sec=30.0):
        print(json.dumps({"error": "set_mode service never appeared"}), flush=True)
    else:
        future = client.call_async(SetMode.Request(mode=SetMode.Request.MODE_DIGITAL))
        rclpy.spin_until_future_complete(node, future, timeout_sec=30.0)
        r = future.result()
        print(json.dumps({"success": r.success, "message": r.message, "previous_mode": r.previous_mode}), flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
