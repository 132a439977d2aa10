"""Issue 34: CDR bytes no message serializes to, published raw on /joint_states and /tf.

The fuzzer (scripts/fuzz_inputs.py) found that one such message on /joint_states killed the robot
state publisher: its raw subscription let rclpy's RMWError out of the callback, and the executor
died with it. The same held for the retarget node's /tf and glove inputs (raw, in-process capable
subscriptions). Now the bytes are rejected, counted (``rejected.malformed_joint_states``,
``rejected.tf_malformed``) and logged, and both nodes go on serving their outputs.
"""

from __future__ import annotations

import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy

from ros_test_tools import chest_tracker_tf, read_log, wait_until, watch_reject_counters

pytestmark = pytest.mark.ros

RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


def malformed(msg, length_offset: int) -> list[bytes]:
    """``msg``'s bytes cut short, and with the sequence length at ``length_offset`` spoiled (they keep the frame
    names the receivers look for). Each is checked to be bytes no message of the type serialises to: a cut or a
    spoiled field can still be a valid message (a JointState without its last 3 bytes is one; its bytes 4-8 are
    the stamp's seconds, any value of which is valid)."""
    from rclpy.serialization import serialize_message

    from rynn_common.cdr import MalformedMessage, deserialize

    raw = serialize_message(msg)
    spoiled = raw[:length_offset] + b"\xff\xff\xff\xff" + raw[length_offset + 4:]
    candidates = [raw[:len(raw) * 2 // 3], raw[:len(raw) // 3], spoiled]
    for candidate in candidates:
        with pytest.raises(MalformedMessage):
            deserialize(candidate, type(msg))
    return candidates


def test_malformed_joint_states_and_tf_are_counted_and_the_nodes_live_on(ros_node, start_process):
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage

    from rynn_common.action_layout import joint_names

    rsp = start_process(["-m", "rynn_robot_bridge.nodes.robot_state_publisher_node"], "robot_state_publisher")
    retarget = start_process(["-m", "rynn_retarget.nodes.retarget_node"], "retarget")
    logs = lambda: read_log(rsp)[-2000:] + read_log(retarget)[-2000:]  # noqa: E731
    rsp_counters = watch_reject_counters(ros_node, "robot_state_publisher", RELIABLE)
    retarget_counters = watch_reject_counters(ros_node, "retarget_node", RELIABLE)
    tf_out: list[int] = []
    ros_node.create_subscription(TFMessage, "/tf", lambda m: tf_out.append(len(m.transforms)), RELIABLE)

    joint_pub = ros_node.create_publisher(JointState, "/joint_states", RELIABLE)
    tf_pub = ros_node.create_publisher(TFMessage, "/tf", RELIABLE)
    def subscribed() -> bool:
        return joint_pub.get_subscription_count() > 0 and any(
            info.node_name == "retarget_node" for info in ros_node.get_subscriptions_info_by_topic("/tf"))

    assert wait_until(subscribed, 90.0, spin=ros_node.spin_once), logs()

    state = JointState(name=list(joint_names()), position=[0.0] * 54)
    tracker = chest_tracker_tf(ros_node.get_clock().now().to_msg(), 0.1)
    # Offsets past the 4-byte encapsulation header: JointState's name count follows its header (stamp 8 bytes,
    # frame_id "" as a 4-byte length and 1 byte, padded to 4); TFMessage starts with its transforms' count.
    bad_states, bad_trackers = malformed(state, 4 + 8 + 8), malformed(tracker, 4)

    def counted() -> bool:
        """Malformed bytes again until both nodes counted some (DDS may lose what it sent before the readers matched).
        Only bytes that are malformed are sent: the robot state publisher deserialises only the newest joint state
        at each tick (the older ones are dropped unread), so a valid one last would hide the bad ones."""
        for raw in bad_states:
            joint_pub.publish(raw)
        for raw in bad_trackers:
            tf_pub.publish(raw)
        ros_node.spin_once(0.1)
        return (rsp_counters.get("rejected.malformed_joint_states", 0) >= 1
                and retarget_counters.get("rejected.tf_malformed", 0) >= 1)

    assert wait_until(counted, 60.0), (rsp_counters, retarget_counters, logs())
    assert rsp.poll() is None and retarget.poll() is None, logs()

    # Still serving: a good joint state becomes /tf from the robot state publisher.
    def moving_tf() -> bool:
        state.header.stamp = ros_node.get_clock().now().to_msg()
        joint_pub.publish(state)
        ros_node.spin_once(0.05)
        return any(count >= 40 for count in tf_out)  # the robot's moving joints, not an operator sample

    assert wait_until(moving_tf, 60.0), logs()
    assert "malformed JointState" in read_log(rsp) and "malformed TFMessage" in read_log(retarget), logs()
