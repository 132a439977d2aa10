"""The simulated robot's camera follows the bridge's mode: anchor frames only in digital, full rate in real at once."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.ros


def frames_in(frames: list, since: float) -> int:
    return sum(1 for arrived in frames if arrived > since)


def test_camera_renders_anchor_frames_only_while_digital_and_full_rate_again_when_real(
        start_process, lcm_url, ros_node, repo_conftest):
    import time

    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image
    from std_msgs.msg import String

    from rynn_common.qos import CAMERA_DRIVER_QOS

    wait_until, read_log = repo_conftest.wait_until, repo_conftest.read_log
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    mode_pub = ros_node.create_publisher(String, "/rynn/mode", latched)
    mode_pub.publish(String(data="digital"))  # latched: the node sees it whenever it starts
    frames: list[float] = []
    ros_node.create_subscription(Image, "/camera/camera/color/image_raw", lambda _msg: frames.append(time.monotonic()),
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    sim = start_process(["-m", "rynn_robot_bridge.nodes.sim_robot_node", "--ros-args", "-p", f"lcm.url:={lcm_url}",
                         "-p", "sim.image_width:=160", "-p", "sim.image_height:=120", "-p", "sim.render_rate_hz:=20.0",
                         "-p", "sim.digital_render_rate_hz:=0.25"], "sim_robot")
    spin = ros_node.spin_once
    assert wait_until(lambda: "mode digital: camera at 0.25 Hz" in read_log(sim), 90.0, spin=spin), read_log(sim)
    assert wait_until(lambda: len(frames) >= 1, 30.0, spin=spin), read_log(sim)
    # the camera QoS is the one realsense_camera_node offers too (rynn_common.qos.CAMERA_DRIVER_QOS)
    offered = [info.qos_profile for info in ros_node.get_publishers_info_by_topic("/camera/camera/color/image_raw")]
    assert [(q.reliability, q.durability) for q in offered] == [(CAMERA_DRIVER_QOS.reliability, CAMERA_DRIVER_QOS.durability)]
    digital_from = time.monotonic()
    wait_until(lambda: False, 3.0, spin=spin)  # three seconds of digital mode
    assert frames_in(frames, digital_from) <= 2, frames_in(frames, digital_from)  # one every 4 s, not 20 a second

    mode_pub.publish(String(data="real"))
    switched = time.monotonic()
    assert wait_until(lambda: frames_in(frames, switched) >= 1, 5.0, spin=spin), read_log(sim)
    first_real = next(arrived for arrived in frames if arrived > switched)
    assert first_real - switched < 2.0  # at once, not after the rest of a 4 s digital-rate period
    assert wait_until(lambda: frames_in(frames, switched) >= 15, 10.0, spin=spin), read_log(sim)
    assert "mode real: camera at 20 Hz" in read_log(sim)
