"""The composed operator container keeps reporting while /tf carries the robot's transforms too.

/tf is shared: robot_state_publisher puts the robot's TF tree on it (54 transforms at 20 Hz), and the
retarget node listens to it for the trackers. Composed (tracker, glove and retarget node in one
process, rynn_common.local_delivery), the node's one executor thread deserialised every robot /tf
message it never used; on the loaded machine that took longer than they came, its status timer
waited behind them for good, and bench_soak found no /rynn/status or /diagnostics from the
retarget node (so none of its injected bad /tf counted). Here this process puts a robot /tf stream
on the topic that costs three cores to deserialise in Python (whatever the machine: the rate comes
from the measured cost), while the container, a recorder (its own process, recording /rynn/status)
and this process run over real DDS. The retarget node must keep reporting on /rynn/status (its
``source``) and /diagnostics during the stream, count the NaN trackers it is sent meanwhile, and
its reports must be in the recorder's bag.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from ros_test_tools import chest_tracker_tf, read_log, wait_for_log, wait_until, watch_reject_counters

pytestmark = pytest.mark.ros

SOURCE_ARGS = ["-p", "source:=synthetic"]
ROBOT_LINKS = 400  # transforms per robot /tf message (robot_state_publisher sends 54)
OVERLOAD = 3.0  # CPU-seconds a second that deserialising the robot stream would take: one thread cannot
STREAM_S = 20.0  # of robot /tf
STATUS_RATE_HZ = 2.0  # the retarget node's (src/rynn_retarget/config/retarget.yaml)
NAN_TRACKERS = 5
TIMEOUT_S = 120.0  # deadlines, not sleeps: two cores another job loads


def robot_tf(links: int):
    """A robot_state_publisher-like TFMessage (``base_link`` -> ``link_i``): no operator frame in it."""
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    transforms = [TransformStamped(child_frame_id=f"link_{i}") for i in range(links)]
    for transform in transforms:
        transform.header.frame_id = "base_link"
        transform.transform.rotation.w = 1.0
    return TFMessage(transforms=transforms)


def deserialise_cpu_s(data: bytes, msg_type, repeats: int = 20) -> float:
    from rclpy.serialization import deserialize_message

    started = time.process_time()
    for _ in range(repeats):
        deserialize_message(data, msg_type)
    return (time.process_time() - started) / repeats


def stamp_s(header) -> float:
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def test_composed_retarget_node_reports_to_subscribers_and_the_bag_under_robot_tf(ros_node, start_process, tmp_path):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.serialization import serialize_message
    from rosbags.rosbag2 import Reader
    from rynn_teleop_msgs.msg import TeleopStatus
    from std_srvs.srv import Trigger
    from tf2_msgs.msg import TFMessage

    from rynn_common.bag_types import make_typestore
    from rynn_common.qos import STATUS_QOS, TF_QOS
    from rynn_common.ros_names import RECORDER_SERVICES, STATUS_TOPIC, TF_TOPIC

    config = tmp_path / "recorder.yaml"
    config.write_text(yaml.safe_dump({"output_dir": str(tmp_path / "bags"), "latched_topics": [],
                                      "topics": [f"{STATUS_TOPIC} rynn_teleop_msgs/msg/TeleopStatus"]}))
    recorder = start_process(["-m", "rynn_robot_bridge.nodes.recorder_node", "--ros-args",
                              "-p", f"config_file:={config}"], "recorder")
    node = "--node"
    operator = start_process(["-m", "rynn_world.launcher.container", "operator",
                              node, "rynn_retarget.nodes.tracker_node", "--ros-args", *SOURCE_ARGS,
                              node, "rynn_retarget.nodes.glove_node", "--ros-args", *SOURCE_ARGS,
                              node, "rynn_retarget.nodes.retarget_node"], "operator")
    logs = lambda: read_log(operator)[-3000:] + read_log(recorder)[-2000:]  # noqa: E731
    assert wait_for_log(operator, "container operator up:") and wait_for_log(recorder, "recorder up"), logs()

    statuses = []  # the retarget node's: (stamp, rejected inputs)
    ros_node.create_subscription(TeleopStatus, STATUS_TOPIC, lambda m: statuses.append((stamp_s(m.header), m.rejected_inputs))
                                 if m.source == "retarget_node" else None, STATUS_QOS)
    reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    counters = watch_reject_counters(ros_node, "retarget_node", reliable)
    # The robot's /tf as robot_state_publisher offers it; the NaN trackers from a writer of their own (another device's),
    # whose history the robot stream cannot overwrite before a starved container took them.
    robot_pub = ros_node.create_publisher(TFMessage, TF_TOPIC, TF_QOS)
    tracker_pub = ros_node.create_publisher(TFMessage, TF_TOPIC, reliable)
    clients = {verb: ros_node.create_client(Trigger, RECORDER_SERVICES[verb]) for verb in ("start", "stop")}

    def call(verb: str) -> str:
        future = clients[verb].call_async(Trigger.Request())
        assert wait_until(future.done, TIMEOUT_S, spin=ros_node.spin_once), f"/rynn/recorder/{verb} did not answer\n{logs()}"
        assert future.result().success, future.result().message
        return future.result().message

    # Up and reporting, before the robot's /tf.
    assert wait_until(lambda: len(statuses) >= 2 and robot_pub.get_subscription_count() >= 1
                      and tracker_pub.get_subscription_count() >= 1
                      and ros_node.count_subscribers(STATUS_TOPIC) >= 2, TIMEOUT_S, spin=ros_node.spin_once), (
        f"no /rynn/status from retarget_node, or no /tf or /rynn/status subscriber, before the robot /tf\n{logs()}")
    assert all(client.wait_for_service(timeout_sec=TIMEOUT_S) for client in clients.values()), logs()
    episode = Path(call("start"))

    robot = serialize_message(robot_tf(ROBOT_LINKS))
    rate_hz = OVERLOAD / deserialise_cpu_s(robot, TFMessage)
    started = ros_node.get_clock().now().nanoseconds * 1e-9
    begin, sent = time.monotonic(), 0
    nan_at = [STREAM_S * (i + 1) / (NAN_TRACKERS + 1) for i in range(NAN_TRACKERS)]  # spread over the stream
    while (elapsed := time.monotonic() - begin) < STREAM_S:
        for _ in range(int(elapsed * rate_hz) - sent):  # catches up after this process was starved: the rate holds
            robot_pub.publish(robot)
            sent += 1
        if nan_at and elapsed >= nan_at[0]:
            tracker_pub.publish(chest_tracker_tf(ros_node.get_clock().now().to_msg(), float("nan")))
            nan_at.pop(0)
        ros_node.spin_once(0.002)
    ended = ros_node.get_clock().now().nanoseconds * 1e-9

    # The node kept reporting through the stream (its timer skips periods the starved machine made it miss: a
    # quarter of them is asked; behind the robot /tf it reported in none), and counted the NaN trackers.
    during = lambda: [stamp for stamp, _ in statuses if started <= stamp <= ended]  # noqa: E731
    wanted = int(0.25 * STATUS_RATE_HZ * (ended - started))
    assert wait_until(lambda: len(during()) >= wanted and counters.get("rejected.tf_nonfinite", 0) >= NAN_TRACKERS,
                      TIMEOUT_S, spin=ros_node.spin_once), (
        f"{sent} robot /tf messages at {rate_hz:.0f} Hz over {ended - started:.1f} s: retarget_node reported "
        f"{len(during())} times in it (wanted {wanted}), counted {counters.get('rejected.tf_nonfinite', 0)} of "
        f"{NAN_TRACKERS} NaN trackers\n{logs()}")
    assert max(rejected for _, rejected in statuses) >= NAN_TRACKERS  # /rynn/status's total says so too
    assert operator.poll() is None, logs()

    call("stop")
    store = make_typestore()
    with Reader(episode) as reader:
        recorded = [store.deserialize_cdr(raw, connection.msgtype) for connection, _, raw in reader.messages()
                    if connection.topic == STATUS_TOPIC]
    in_bag = [stamp_s(msg.header) for msg in recorded if msg.source == "retarget_node"]
    assert len([stamp for stamp in in_bag if started <= stamp <= ended]) >= wanted, (
        f"{len(in_bag)} retarget_node statuses in the bag, sources {sorted({msg.source for msg in recorded})}")
