"""The simulated robot as its own process: real LCM over UDP multicast in, real DDS camera out."""

from __future__ import annotations

import time

import numpy as np
import pytest

from rynn_robot_bridge.lcm_protocol import NUM_JOINTS, decode_state, encode_command
from rynn_robot_bridge.robot_safety import Fault

pytestmark = pytest.mark.ros
lcm = pytest.importorskip("lcm")
STATE_CHANNEL, COMMAND_CHANNEL = "RYNN_ROBOT_STATE", "RYNN_ROBOT_COMMAND"
ARM_ELBOW_RIGHT = 7 + 3


class StateListener:
    """Receives robot_state_t in the test process (polled, no thread)."""

    def __init__(self, url: str):
        self.lc = lcm.LCM(url)
        self.latest = None
        self.count = 0
        self.lc.subscribe(STATE_CHANNEL, self._on_state)

    def _on_state(self, channel, data):
        self.latest = decode_state(data)
        self.count += 1

    def poll(self, seconds: float = 0.0) -> None:
        deadline = time.monotonic() + seconds
        while True:
            self.lc.handle_timeout(max(1, int(1000 * min(0.005, deadline - time.monotonic()))))
            if time.monotonic() >= deadline:
                return

    def send(self, packet: bytes) -> None:
        self.lc.publish(COMMAND_CHANNEL, packet)


def start_sim(start_process, lcm_url, *extra):
    return start_process(
        ["-m", "rynn_robot_bridge.nodes.sim_robot_node", "--ros-args", "-p", f"lcm.url:={lcm_url}", *extra],
        "sim_robot",
    )


def test_state_follows_commands_rejects_bad_packets_and_watchdog_holds(start_process, lcm_url, repo_conftest):
    wait_until, read_log = repo_conftest.wait_until, repo_conftest.read_log
    proc = start_sim(start_process, lcm_url, "-p", "sim.render_rate_hz:=0.0")
    link = StateListener(lcm_url)
    assert wait_until(lambda: link.count > 10, 60, spin=link.poll), read_log(proc)
    first = link.latest
    assert first.fault_flags & Fault.WATCHDOG and first.last_command_sequence == -1  # no commands yet: holding
    home = first.position.copy()

    target = home.copy()
    target[0] -= 0.3  # left shoulder pitch
    target[ARM_ELBOW_RIGHT] -= 0.25  # right elbow bends, lifting the hand off the table
    target[20] += 0.5  # a left finger joint
    sequence = 0
    for step in range(240):  # 1.2 s at 200 Hz, ramping in over the first half
        sequence += 1
        blend = min(1.0, step / 120)
        link.send(encode_command(home + blend * (target - home), sequence))
        if step == 150:  # bad input in the middle of a healthy stream
            link.send(b"\x00garbage")
            link.send(encode_command(target, sequence + 1)[:-20])
            link.send(encode_command(np.full(NUM_JOINTS, np.nan), sequence + 1))
            link.send(encode_command(target[:50], sequence + 1))
            beyond = target.copy()
            beyond[3] = 1.0  # elbow upper limit is 0
            link.send(encode_command(beyond, sequence + 1))
        link.poll(0.005)
    assert wait_until(lambda: link.latest.last_command_sequence == sequence, 2, spin=link.poll)
    link.poll(0.05)  # a few more states: the target was reached 0.6 s ago
    state = link.latest
    assert state.fault_flags & Fault.WATCHDOG == 0, state.fault_flags
    np.testing.assert_allclose(state.position, target, atol=0.01)
    assert state.accepted_commands == sequence
    assert state.rejected_malformed == 2
    assert (state.rejected_non_finite, state.rejected_wrong_length, state.rejected_joint_limit) == (1, 1, 1)

    # Silence: the controller must hold and flag the watchdog within its 100 ms period.
    silent_since = time.monotonic()
    assert wait_until(lambda: link.latest.fault_flags & Fault.WATCHDOG, 1.0, spin=link.poll)
    assert time.monotonic() - silent_since < 0.5
    held = link.latest.position.copy()
    link.poll(0.3)
    assert link.latest.watchdog_trips == 1
    np.testing.assert_allclose(link.latest.position, held, atol=1e-3)

    # A resumed stream (here a restarted sender, sequence from 1) clears the fault.
    link.send(encode_command(target, 1))
    assert wait_until(lambda: link.latest.fault_flags == Fault.NONE and link.latest.last_command_sequence == 1, 2,
                      spin=link.poll), link.latest.fault_flags
    assert proc.poll() is None, read_log(proc)


def test_camera_arrives_over_dds_like_realsense2_camera(start_process, lcm_url, ros_node, repo_conftest):
    wait_until, read_log = repo_conftest.wait_until, repo_conftest.read_log
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import CameraInfo, Image

    proc = start_sim(start_process, lcm_url, "-p", "sim.image_width:=832", "-p", "sim.image_height:=480",
                     "-p", "sim.render_rate_hz:=10.0")
    images, infos = [], []
    # A best-effort (sensor-data) subscriber and a reliable one must both match the publisher.
    ros_node.create_subscription(Image, "/camera/camera/color/image_raw", images.append, qos_profile_sensor_data)
    ros_node.create_subscription(CameraInfo, "/camera/camera/color/camera_info", infos.append, 10)
    stamp = lambda msg: (msg.header.stamp.sec, msg.header.stamp.nanosec)  # noqa: E731
    paired = lambda: [m for m in images if stamp(m) in {stamp(i) for i in infos}]  # noqa: E731
    assert wait_until(lambda: len(paired()) >= 3, 60, spin=ros_node.spin_once), read_log(proc)

    image = paired()[-1]
    assert (image.encoding, image.header.frame_id) == ("rgb8", "camera_color_optical_frame")
    assert (image.width, image.height, image.step) == (832, 480, 832 * 3)
    pixels = np.frombuffer(bytes(image.data), np.uint8).reshape(480, 832, 3)
    assert pixels.std() > 10  # a rendered scene, not a blank buffer
    info = next(i for i in infos if stamp(i) == stamp(image))  # every image has its CameraInfo twin
    assert info.header.frame_id == "camera_color_optical_frame" and info.distortion_model == "plumb_bob"
    assert (info.width, info.height) == (832, 480)
    np.testing.assert_allclose(info.k, [615.0 * 832 / 640, 0, 320.0 * 832 / 640, 0, 615.0, 240.0, 0, 0, 1])
    np.testing.assert_allclose(np.reshape(info.p, (3, 4))[:, :3].ravel(), info.k)
    assert list(info.d) == [0.0] * 5
