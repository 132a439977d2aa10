"""The simulated camera renders only frames someone receives, at its configured rate, beside the 500 Hz loop."""

from __future__ import annotations

import time

import numpy as np
import pytest

import rynn_robot_bridge.sim  # noqa: F401  (headless GL before mujoco)
from rynn_common.description import D435I_COLOR
from rynn_robot_bridge.config import load_robot_config
from rynn_robot_bridge.sim.realtime import RealtimeSimRobot
from rynn_robot_bridge.sim.simulator import HeadCameraView, SimulatedRobot

pytest.importorskip("lcm")
SMALL_CAMERA = D435I_COLOR.scaled(160, 120)


def started_runtime(lcm_url: str, render_rate_hz: float, frame_wanted) -> tuple[RealtimeSimRobot, list[float]]:
    config = load_robot_config().with_lcm_url(lcm_url).with_sim(render_rate_hz=render_rate_hz)
    rendered: list[float] = []
    runtime = RealtimeSimRobot(config, SimulatedRobot("empty", camera=SMALL_CAMERA),
                               on_frame=lambda rgb, captured: rendered.append(time.monotonic()), frame_wanted=frame_wanted)
    runtime.start()
    return runtime, rendered


def test_no_frame_is_rendered_while_none_is_wanted_and_rendering_resumes_when_one_is(lcm_url, repo_conftest):
    wait_until = repo_conftest.wait_until
    wanted = {"now": False}
    runtime, rendered = started_runtime(lcm_url, 20.0, lambda: wanted["now"])
    try:
        assert wait_until(lambda: runtime.stats.skipped_frames >= 10, 60.0)  # half a second of due frames
        assert rendered == [] and runtime.stats.frames == 0
        wanted["now"] = True
        assert wait_until(lambda: len(rendered) >= 3, 30.0)
        assert runtime.stats.steps > 0  # the control loop ran all along
    finally:
        runtime.stop()
        runtime.robot.close()


def test_camera_keeps_its_configured_rate_and_never_renders_faster(lcm_url, repo_conftest):
    """Lower bound generous (a loaded 2-core machine), upper bound exact: 20 frames at 20 Hz take >= ~0.9 s."""
    wait_until = repo_conftest.wait_until
    runtime, rendered = started_runtime(lcm_url, 20.0, lambda: True)
    try:
        assert wait_until(lambda: len(rendered) >= 1, 60.0)  # the camera thread's GL context is up
        first = len(rendered)
        assert wait_until(lambda: len(rendered) >= first + 20, 30.0)
        span = rendered[first + 19] - rendered[first - 1]
        assert span >= 19 / 20 - 0.1, span  # one late frame may be followed by one early one, no more
        assert span < 4.0, span  # at least 5 Hz: the configured rate, not e.g. the 1 Hz digital one
    finally:
        runtime.stop()
        runtime.robot.close()


@pytest.mark.ros
def test_sim_robot_node_renders_only_while_its_camera_has_a_subscriber(lcm_url, ros_node, repo_conftest):
    """In-process, so the node's render counter is read directly; frames arrive only over DDS."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image

    from rynn_common.ros_names import IMAGE_TOPIC
    from rynn_robot_bridge.nodes.sim_robot_node import SimRobotNode

    wait_until = repo_conftest.wait_until
    rclpy.init(args=["--ros-args", "-p", f"lcm.url:={lcm_url}", "-p", "sim.image_width:=160",
                     "-p", "sim.image_height:=120", "-p", "sim.render_rate_hz:=20.0"])
    node = SimRobotNode()
    stats = node.runtime.stats
    try:
        assert wait_until(lambda: stats.skipped_frames >= 10, 90.0)
        assert stats.frames == 0  # nobody subscribed: nothing rendered

        arrived: list[float] = []
        subscription = ros_node.create_subscription(Image, IMAGE_TOPIC, lambda _msg: arrived.append(time.monotonic()),
                                                    QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        assert wait_until(lambda: len(arrived) >= 5, 60.0, spin=ros_node.spin_once)

        ros_node.destroy_subscription(subscription)
        skipped = stats.skipped_frames
        assert wait_until(lambda: stats.skipped_frames > skipped, 60.0)  # the subscriber's leaving is discovered
        frames, skipped = stats.frames, stats.skipped_frames
        assert wait_until(lambda: stats.skipped_frames >= skipped + 10, 30.0)
        assert stats.frames == frames  # rendering stopped with the last subscriber
    finally:
        node.destroy_node()
        rclpy.shutdown()


@pytest.mark.parametrize("samples", [0, 4])
def test_the_camera_thread_renders_with_the_configured_anti_aliasing(lcm_url, repo_conftest, samples):
    """A frame of the robot at rest is the picture a view with ``sim.multisamples`` samples renders, not the other."""
    config = load_robot_config().with_lcm_url(lcm_url).with_sim(render_rate_hz=10.0, multisamples=samples)
    frames: list = []
    runtime = RealtimeSimRobot(config, SimulatedRobot("empty", camera=SMALL_CAMERA),
                               on_frame=lambda rgb, captured: frames.append(rgb.copy()))
    runtime.start()
    try:
        assert repo_conftest.wait_until(lambda: len(frames) >= 1, 60.0)
    finally:
        runtime.stop()
        runtime.robot.close()
    reference = SimulatedRobot("empty", camera=SMALL_CAMERA)
    try:
        difference = {}
        for other in (0, 4):
            view = HeadCameraView(reference.model, reference.camera, other)
            try:
                difference[other] = np.abs(frames[0].astype(int) - view.render(reference.data).astype(int)).sum()
            finally:
                view.close()
    finally:
        reference.close()
    assert difference[samples] * 3 < difference[4 - samples], difference
