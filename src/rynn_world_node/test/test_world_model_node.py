"""The world-model node in its own process, driven over DDS like the bridge and retargeter would.

Tiny random-weight model: these tests check the node's contract (formats, stamps,
mode following, re-anchoring, faults), not image quality.
"""

from dataclasses import dataclass, field

import numpy as np
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ros_test_tools import read_log, wait_for_log, wait_until

pytestmark = pytest.mark.ros

RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
MODE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
FPS = 16.0


def stamp_s(header) -> float:
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def real_frame(node, value: int):
    from rynn_robot_bridge.ros_camera import make_image

    return make_image(np.full((480, 640, 3), value, np.uint8), node.get_clock().now().to_msg())


def skeleton(node, stamp_msg):
    from rynn_common.ros_conversions import make_bimanual_skeleton

    hand = np.zeros((21, 3))
    hand[:, 0] = np.linspace(-0.05, 0.05, 21)
    hand[:, 2] = 0.5
    return make_bimanual_skeleton(hand - [0.1, 0, 0], hand + [0.1, 0, 0], stamp_msg, "camera_color_optical_frame",
                                  left_elbow=[-0.2, 0.2, 0.6], right_elbow=[0.2, 0.2, 0.6])


@pytest.fixture
def world_model(start_process):
    """The node, up (its start-up line logged): the deadlines below then time behaviour, not imports."""
    proc = start_process(
        ["-m", "rynn_world.nodes.world_model_node", "--ros-args", "-p", "model_config:=tiny",
         "-p", "reanchor_every:=12", "-p", "status_rate_hz:=10.0"],
        "world_model",
    )
    assert wait_for_log(proc, r"world model .* on \w+"), read_log(proc)
    return proc


@dataclass
class NodeTopics:
    """The node's outputs as collected here, and publishers of its inputs (as the bridge and the
    retargeter would send them)."""

    mode: object  # /rynn/mode, latched
    real_camera: object
    skeletons: object
    images: list = field(default_factory=list)
    infos: list = field(default_factory=list)
    statuses: list = field(default_factory=list)
    diagnostics: list = field(default_factory=list)


@pytest.fixture
def topics(ros_node) -> NodeTopics:
    from diagnostic_msgs.msg import DiagnosticArray
    from rynn_teleop_msgs.msg import BimanualSkeleton, TeleopStatus
    from sensor_msgs.msg import CameraInfo, Image
    from std_msgs.msg import String

    topics = NodeTopics(
        mode=ros_node.create_publisher(String, "/rynn/mode", MODE_QOS),
        real_camera=ros_node.create_publisher(Image, "/rynn/real/camera/color/image_raw", RELIABLE),
        skeletons=ros_node.create_publisher(BimanualSkeleton, "/rynn/operator/skeleton_camera", RELIABLE),
    )
    ros_node.create_subscription(TeleopStatus, "/rynn/status", topics.statuses.append, RELIABLE)
    ros_node.create_subscription(Image, "/rynn/digital/camera/color/image_raw", topics.images.append, RELIABLE)
    ros_node.create_subscription(CameraInfo, "/rynn/digital/camera/color/camera_info", topics.infos.append, RELIABLE)
    ros_node.create_subscription(DiagnosticArray, "/diagnostics", topics.diagnostics.append, RELIABLE)
    return topics


def test_digital_mode_streams_realsense_identical_frames_stamped_by_skeleton(ros_node, world_model, topics):
    from rynn_teleop_msgs.msg import TeleopStatus
    from std_msgs.msg import String

    from rynn_common.description import D435I_COLOR
    from rynn_common.ros_conversions import time_from_seconds

    images, infos, diagnostics, statuses = topics.images, topics.infos, topics.diagnostics, topics.statuses
    mode_pub, real_pub, skeleton_pub = topics.mode, topics.real_camera, topics.skeletons

    # Real mode: the real camera runs (10 Hz here), the node waits and publishes nothing.
    mode_pub.publish(String(data="real"))
    camera_frames = 0

    def camera_and_spin():
        nonlocal camera_frames
        if ros_node.get_clock().now().nanoseconds * 1e-9 > camera_start + camera_frames / 10.0:
            real_pub.publish(real_frame(ros_node, 200))
            camera_frames += 1
        ros_node.spin_once(0.01)

    camera_start = ros_node.get_clock().now().nanoseconds * 1e-9
    assert wait_until(lambda: real_pub.get_subscription_count() > 0, 30.0, spin=camera_and_spin), read_log(world_model)
    wait_until(lambda: False, 1.5, spin=camera_and_spin)
    assert not images, "frames were generated in real mode"

    # Digital: skeletons at 30 Hz; frames must follow the 16 FPS skeleton clock.
    mode_pub.publish(String(data="digital"))
    t0 = ros_node.get_clock().now().nanoseconds * 1e-9
    sent = 0

    def feed_and_spin():
        nonlocal sent
        now = ros_node.get_clock().now().nanoseconds * 1e-9
        while t0 + sent / 30.0 <= now:
            skeleton_pub.publish(skeleton(ros_node, time_from_seconds(t0 + sent / 30.0)))
            sent += 1
        camera_and_spin()

    assert wait_until(lambda: len(images) >= 20, 90.0, spin=feed_and_spin), read_log(world_model)
    checked = images[:20]

    def infos_follow_checked_images() -> bool:  # each image's info is published right after it
        have = {round(stamp_s(info.header), 6) for info in infos}
        return all(round(stamp_s(image.header), 6) in have for image in checked)

    assert wait_until(infos_follow_checked_images, 30.0, spin=feed_and_spin), "a CameraInfo never followed its image"
    for image in checked:
        assert (image.encoding, image.width, image.height) == ("rgb8", 640, 480)
        assert image.header.frame_id == "camera_color_optical_frame" and image.step == 640 * 3
        assert len(image.data) == 640 * 480 * 3
    stamps = np.array([stamp_s(i.header) for i in checked])
    assert np.all(np.diff(stamps) > 0), "stamps must increase"
    skeleton_ticks = stamps[stamps >= t0]
    assert len(skeleton_ticks) >= 12
    assert skeleton_ticks.max() <= t0 + sent / 30.0, "a frame claims a time no skeleton has reached"
    # On the model clock (after the first block, which may hold null-action frames stamped
    # "now"); a block that fell behind jumps ahead to the newest skeleton, never back, and frames
    # are never closer than a model period. How many land exactly one period apart depends on the
    # CPU the node gets (blocks that fall behind skip ahead, late frames are dropped): exact spacing
    # is tested on a fake clock (test_live_session), the live rate by bench_digital_latency.
    gaps = np.diff(skeleton_ticks[4:])
    assert gaps.min() >= 1.0 / FPS - 1e-3, gaps
    info_by_stamp = {round(stamp_s(i.header), 6): i for i in infos}
    for image in checked:
        info = info_by_stamp[round(stamp_s(image.header), 6)]
        assert (info.width, info.height, info.header.frame_id) == (640, 480, "camera_color_optical_frame")
        np.testing.assert_allclose(info.k, D435I_COLOR.matrix().ravel())

    # Back to real: once the node has taken the switch (its status says so), generation stops.
    statuses.clear()
    mode_pub.publish(String(data="real"))

    def took_real_mode() -> bool:
        return any(s.source == "world_model_node" and s.mode == TeleopStatus.MODE_REAL for s in statuses)

    assert wait_until(took_real_mode, 30.0, spin=feed_and_spin), read_log(world_model)
    wait_until(lambda: False, 0.5, spin=feed_and_spin)  # frames already in flight arrive
    count = len(images)
    wait_until(lambda: False, 1.5, spin=feed_and_spin)
    assert len(images) == count, "frames kept coming after the switch to real"
    values = {kv.key: kv.value for d in diagnostics for s in d.status for kv in s.values}
    assert float(values["step.p50_ms"]) > 0.0
    assert world_model.poll() is None


def test_without_any_reference_the_node_reports_a_fault_and_publishes_nothing(ros_node, world_model, topics):
    from rynn_teleop_msgs.msg import TeleopStatus
    from std_msgs.msg import String

    images, statuses = topics.images, topics.statuses
    topics.mode.publish(String(data="digital"))

    def fault_reported():
        return any(s.source == "world_model_node" and any("no reference image" in f for f in s.faults) for s in statuses)

    assert wait_until(fault_reported, 60.0, spin=ros_node.spin_once), read_log(world_model)
    assert statuses[-1].mode == TeleopStatus.MODE_DIGITAL
    assert not images


def test_digital_mode_never_anchors_on_the_held_real_robots_camera(ros_node, world_model, topics):
    """After the switch the bridge holds the real robot, so its camera no longer shows what the
    operator commands. The node anchors on a real frame at the switch and never again while
    digital: the held camera's frames here are unreadable (yuv422), so a node that converted one
    for a periodic re-anchor (every 12 frames: 2 blocks) would count a rejected real_image."""
    from std_msgs.msg import String

    from rynn_common.ros_conversions import time_from_seconds

    images, diagnostics = topics.images, topics.diagnostics
    mode_pub, real_pub, skeleton_pub = topics.mode, topics.real_camera, topics.skeletons
    mode_pub.publish(String(data="real"))
    assert wait_until(lambda: real_pub.get_subscription_count() > 0, 30.0, spin=ros_node.spin_once), read_log(world_model)
    held_camera, last_frame, skeletons_from, sent = False, 0.0, None, 0

    def feed_and_spin():
        """The real camera at 10 Hz (unreadable once held) and, once started, skeletons at 30 Hz."""
        nonlocal last_frame, sent
        now = ros_node.get_clock().now().nanoseconds * 1e-9
        if now - last_frame > 0.1:
            frame = real_frame(ros_node, 200)
            if held_camera:
                frame.encoding = "yuv422"
            real_pub.publish(frame)
            last_frame = now
        while skeletons_from is not None and skeletons_from + sent / 30.0 <= now:
            skeleton_pub.publish(skeleton(ros_node, time_from_seconds(skeletons_from + sent / 30.0)))
            sent += 1
        ros_node.spin_once(0.01)

    mode_pub.publish(String(data="digital"))
    skeletons_from = ros_node.get_clock().now().nanoseconds * 1e-9
    # The first frames: the switch anchor has taken a (readable) real frame.
    assert wait_until(lambda: len(images) >= 4, 90.0, spin=feed_and_spin), read_log(world_model)
    held_camera = True
    anchored = len(images)
    # 24 frames are 6 blocks: at least 2 periodic re-anchors, each a chance to read the held camera.
    assert wait_until(lambda: len(images) >= anchored + 24, 120.0, spin=feed_and_spin), read_log(world_model)
    diagnostics.clear()
    assert wait_until(lambda: diagnostics, 10.0, spin=feed_and_spin)
    values = {kv.key: kv.value for d in diagnostics for s in d.status for kv in s.values}
    assert float(values["reanchor.p50_ms"]) > 0.0
    assert "rejected.real_image" not in values, "a periodic re-anchor read the held real robot's camera"
    assert "ignoring a real camera frame" not in read_log(world_model)
