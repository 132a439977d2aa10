"""Robot state publishing: the ROS-free core against Pinocchio FK, then the node over real DDS, with the
recorder putting /tf_static and /robot_description (latched, as offered) into its bag."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from ros_test_tools import read_log, wait_until
from rynn_common.action_layout import joint_names
from rynn_common.description import default_urdf_path
from rynn_common.description.joint_limits import joint_limits_from_urdf
from rynn_common.description.kinematic_model import frame_pose, load_model
from rynn_common.rotations import quaternions_xyzw
from rynn_robot_bridge.robot_state import RobotStatePublisherCore

CAMERA = "camera_color_optical_frame"
TIMEOUT = 60.0


def chain_pose(edges: dict[str, tuple[str, np.ndarray]], link: str, root: str = "base_link") -> tuple[np.ndarray, list[str]]:
    """Compose parent->child transforms from ``root`` down to ``link``; also the links passed."""
    pose, path = np.eye(4), [link]
    while link != root:
        assert link in edges, f"no transform reaches {link} (path so far {path})"
        parent, matrix = edges[link]
        pose, link = matrix @ pose, parent
        path.append(link)
    return pose, path[::-1]


def random_configuration(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Random joint positions within limits: (in joint_names() order as on /joint_states, in Pinocchio's q order)."""
    limits = joint_limits_from_urdf()
    positions = np.random.default_rng(seed).uniform(limits.lower, limits.upper)
    model = load_model(default_urdf_path())
    q = np.zeros(model.nq)
    for name, position in zip(joint_names(), positions):
        q[model.joints[model.getJointId(name)].idx_q] = position
    return positions, q


@pytest.fixture(scope="module")
def core():
    return RobotStatePublisherCore(default_urdf_path())


def test_fixed_and_moving_transforms_compose_to_pinocchio_fk(core):
    positions, q = random_configuration()
    static = core.static_transforms()
    moving = core.update(joint_names(), positions)
    assert len(moving) == 54 and {t.joint for t in moving} == set(joint_names())
    assert {t.child for t in static} >= {"torso_link", "head_link", "camera_link", CAMERA}
    edges = {t.child: (t.parent, t.matrix) for t in static + moving}
    model = load_model(default_urdf_path())
    for link in (CAMERA, "left_ee_link", "right_finger3_tip_link", "left_palm_link"):
        pose, path = chain_pose(edges, link)
        np.testing.assert_allclose(pose, frame_pose(model, link, q), atol=1e-9, err_msg=link)
    _, camera_path = chain_pose(edges, CAMERA)
    assert camera_path == ["base_link", "torso_link", "head_link", "camera_link", CAMERA]


def test_camera_optical_frame_follows_rep_103(core):
    """z forward (and down, towards the table), x right (-y of base_link), y down."""
    pose = frame_pose(load_model(default_urdf_path()), CAMERA)
    x_axis, z_axis = pose[:3, 0], pose[:3, 2]
    assert z_axis[0] > 0.5 and z_axis[2] < 0 and x_axis[1] == pytest.approx(-1.0, abs=1e-6)


def test_bad_joint_states_are_counted_not_used(core):
    before = core.update(["left_arm_joint1"], [0.2])[0].matrix
    assert core.update(["left_arm_joint1"], [float("nan")]) == []
    assert core.update(["left_arm_joint1", "left_arm_joint2"], [0.1]) == []
    assert [t.joint for t in core.update(["left_arm_joint1", "tail_joint"], [0.2, 1.0])] == ["left_arm_joint1"]
    np.testing.assert_allclose(core.update(["left_arm_joint1"], [0.2])[0].matrix, before)
    assert core.drops == {"NaN/inf position": 1, "names/positions length mismatch": 1, "unknown joint": 1}


def test_the_packed_tf_is_the_message_of_the_same_transforms_for_any_set_of_moving_joints(core):
    from builtin_interfaces.msg import Time
    from rclpy.serialization import deserialize_message
    from tf2_msgs.msg import TFMessage

    from rynn_common.ros_conversions import TfMessagePacker
    from rynn_robot_bridge.nodes.robot_state_publisher_node import stamped_transforms, transforms_bytes

    packer = TfMessagePacker()
    for stamp_sec, (names, positions) in enumerate([(["left_arm_joint1"], [0.2]), (["left_arm_joint1"], [-0.4]),
                                                    (["right_arm_joint1", "left_arm_joint2"], [0.1, 0.3])], start=1):
        transforms = core.update(names, positions)
        packed = deserialize_message(transforms_bytes(packer, transforms, stamp_sec * 10**9 + 7, "robot/"), TFMessage)
        assert packed == stamped_transforms(transforms, Time(sec=stamp_sec, nanosec=7), "robot/")
        rotation = packed.transforms[0].transform.rotation
        np.testing.assert_allclose([rotation.x, rotation.y, rotation.z, rotation.w],
                                   quaternions_xyzw(transforms[0].matrix[None, :3, :3])[0])
    assert len(packer.layouts) == 2  # one per set of frames, kept


@pytest.mark.ros
def test_node_publishes_the_tf_tree_and_the_recorder_keeps_it(ros_node, start_process, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rosbags.rosbag2 import Reader
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    from std_srvs.srv import Trigger
    from tf2_msgs.msg import TFMessage

    from rynn_common.bag_types import make_typestore

    config = tmp_path / "recorder.yaml"
    config.write_text(yaml.safe_dump({
        "output_dir": str(tmp_path / "bags"), "status_rate_hz": 2.0,
        "topics": ["/tf tf2_msgs/msg/TFMessage", "/tf_static tf2_msgs/msg/TFMessage",
                   "/robot_description std_msgs/msg/String"],
        "latched_topics": ["/tf_static", "/robot_description"],
    }))
    publisher = start_process(["-m", "rynn_robot_bridge.nodes.robot_state_publisher_node", "--ros-args",
                               "-p", "publish_frequency:=50.0"], "robot_state_publisher")
    recorder = start_process(["-m", "rynn_robot_bridge.nodes.recorder_node", "--ros-args",
                              "-p", f"config_file:={config}"], "recorder")

    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    received = {"static": [], "tf": [], "description": []}
    ros_node.create_subscription(TFMessage, "/tf_static", received["static"].append, latched)
    ros_node.create_subscription(TFMessage, "/tf", received["tf"].append, QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    ros_node.create_subscription(String, "/robot_description", received["description"].append, latched)
    recorder_totals: dict[str, str] = {}

    def on_diagnostics(msg) -> None:
        for status in msg.status:
            if status.name == "rynn_recorder":
                recorder_totals.update({kv.key: kv.value for kv in status.values})

    ros_node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    joints = ros_node.create_publisher(JointState, "/joint_states", 10)
    start = ros_node.create_client(Trigger, "/rynn/recorder/start")
    stop = ros_node.create_client(Trigger, "/rynn/recorder/stop")

    assert wait_until(lambda: received["static"] and received["description"], TIMEOUT, spin=ros_node.spin_once), \
        read_logs(publisher, recorder)
    assert received["description"][0].data == default_urdf_path().read_text()

    positions, q = random_configuration(seed=11)
    state = JointState(name=joint_names(), position=positions.tolist())
    state.header.stamp.sec = 1234

    def moved():
        joints.publish(state)
        return any(m.transforms[0].header.stamp.sec == 1234 for m in received["tf"])

    assert wait_until(moved, TIMEOUT, spin=ros_node.spin_once), read_logs(publisher, recorder)
    edges = {}
    for msg in received["static"] + [m for m in received["tf"] if m.transforms[0].header.stamp.sec == 1234][-1:]:
        for t in msg.transforms:
            edges[t.child_frame_id] = (t.header.frame_id, matrix_from_transform(t.transform))
    model = load_model(default_urdf_path())
    for link in (CAMERA, "right_ee_link", "left_finger1_tip_link"):
        pose, _ = chain_pose(edges, link)
        np.testing.assert_allclose(pose, frame_pose(model, link, q), atol=1e-6, err_msg=link)

    # The recorder, started after both latched messages were sent, still records them with their QoS.
    assert start.wait_for_service(timeout_sec=TIMEOUT) and stop.wait_for_service(timeout_sec=TIMEOUT)
    def recorder_holds_latched() -> bool:  # its /diagnostics count what it received of each topic
        return all(int(recorder_totals.get(f"total{topic}.received", 0)) >= 1 for topic in ("/tf_static", "/robot_description"))

    assert wait_until(recorder_holds_latched, TIMEOUT, spin=ros_node.spin_once), (recorder_totals, read_logs(recorder))
    response = call(ros_node, start)
    assert response.success, response.message
    episode = tmp_path / "bags" / response.message.rsplit("/", 1)[-1]
    assert call(ros_node, stop).success
    info = yaml.safe_load((episode / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    topics = {t["topic_metadata"]["name"]: t for t in info["topics_with_message_count"]}
    assert topics["/tf_static"]["message_count"] == topics["/robot_description"]["message_count"] == 1, read_logs(recorder)
    for name in ("/tf_static", "/robot_description"):
        (offered,) = topics[name]["topic_metadata"]["offered_qos_profiles"]  # one publisher: the node's
        assert (offered["durability"], offered["reliability"]) == ("transient_local", "reliable")  # depth: DDS does not tell (0)
    store = make_typestore()
    with Reader(episode) as reader:
        static = [store.deserialize_cdr(raw, c.msgtype) for c, _, raw in reader.messages() if c.topic == "/tf_static"]
    assert CAMERA in {t.child_frame_id for t in static[0].transforms}


def matrix_from_transform(transform) -> np.ndarray:
    from transforms3d.quaternions import quat2mat

    r = transform.rotation
    matrix = np.eye(4)
    matrix[:3, :3] = quat2mat([r.w, r.x, r.y, r.z])
    matrix[:3, 3] = [transform.translation.x, transform.translation.y, transform.translation.z]
    return matrix


def call(node, client):
    from std_srvs.srv import Trigger

    future = client.call_async(Trigger.Request())
    assert wait_until(future.done, TIMEOUT, spin=node.spin_once), "service did not answer"
    return future.result()


def read_logs(*procs) -> str:
    return "\n".join(read_log(p) for p in procs)
