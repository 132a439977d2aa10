"""Choosing the real camera and the robot in the graph: camera:=sim|realsense, robot:=sim|lcm, and the
graph's comparison conditions and conditional parameters that express them (plain Python, no ROS)."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest
from test_embedded_launcher import REAL_CAMERA_REMAPS, by_name

from ros_test_tools import REPO_ROOT
from rynn_world.launcher.graph import GraphError, condition, load_graph, node_parameters, resolve


def load_module(path):
    """A test module of another package (its recording helpers), by path: test directories are not packages."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def graph():
    return load_graph()


def nodes(graph, **arguments):
    return by_name(resolve(graph, {k: str(v) for k, v in arguments.items()}, check_modules=False))


def test_default_is_the_simulated_robot_rendering_the_camera(graph):
    specs = nodes(graph)
    assert "realsense_camera" not in specs
    assert "sim.render_rate_hz" not in specs["sim_robot"].parameters  # the simulated robot's own rate
    assert specs["robot_state_publisher"].parameters == {"urdf_path": ""}


def test_realsense_camera_replaces_the_simulated_camera(graph):
    specs = nodes(graph, camera="realsense", realsense_serial="f1230455", camera_width=848, camera_height=480,
                  realsense_recording="/data/head.db3", urdf_path="/robots/m6.urdf")
    camera = specs["realsense_camera"]
    assert camera.required and camera.remappings == REAL_CAMERA_REMAPS == specs["sim_robot"].remappings
    assert camera.parameters == {"serial_no": "f1230455", "rosbag_filename": "/data/head.db3",
                                 "rgb_camera.color_profile": "848,480,30"}
    assert specs["sim_robot"].parameters["sim.render_rate_hz"] == 0.0  # still the robot on LCM, without its camera
    assert specs["robot_state_publisher"].parameters["urdf_path"] == "/robots/m6.urdf"


def test_a_real_robot_on_lcm_starts_no_simulated_robot(graph):
    specs = nodes(graph, camera="realsense", robot="lcm")
    assert "sim_robot" not in specs and "realsense_camera" in specs and "rynn_bridge" in specs


@pytest.mark.parametrize("arguments, message", [
    ({"camera": "kinect"}, "argument camera:='kinect' is not one of sim, realsense"),
    ({"robot": "ros"}, "argument robot:='ros' is not one of sim, lcm"),
])
def test_bad_camera_or_robot_is_named(graph, arguments, message):
    with pytest.raises(GraphError, match=re.escape(message)):
        resolve(graph, arguments, check_modules=False)


def test_condition_forms():
    values = {"camera": "realsense", "record": True, "width": 640}
    assert condition("$(arg record)", values, "n") is True
    assert condition("$(arg camera) == realsense", values, "n") is True
    assert condition("$(arg camera) == sim", values, "n") is False
    assert condition("$(arg camera) != sim", values, "n") is True
    assert condition("$(arg width) == 640", values, "n") is True  # compared as text
    with pytest.raises(GraphError, match="node n: 'if' must resolve to true/false or compare"):
        condition("$(arg camera)", values, "node n")
    with pytest.raises(GraphError, match="names no declared argument"):
        condition("$(arg lens) == wide", values, "n")


def test_conditional_parameters():
    entry = {"name": "sim", "parameters": {"rate": {"value": 0.0, "if": "$(arg camera) == realsense"},
                                           "scene": "$(arg camera)"}}
    assert node_parameters(entry, {"camera": "realsense"}) == {"rate": 0.0, "scene": "realsense"}
    assert node_parameters(entry, {"camera": "sim"}) == {"scene": "sim"}
    with pytest.raises(GraphError, match="parameter rate as a mapping needs exactly 'value' and 'if'"):
        node_parameters({"name": "sim", "parameters": {"rate": {"value": 1.0}}}, {})


@pytest.mark.ros
@pytest.mark.slow
def test_realsense_recording_reaches_the_canonical_camera_through_the_launched_graph(tmp_path, start_process, ros_node):
    """camera:=realsense end to end: the recording (looped) -> realsense_camera -> bridge (real mode) ->
    /camera/camera/color/image_raw, while the simulated robot renders nothing and the robot's TF tree is up."""
    pytest.importorskip("pyrealsense2")
    import signal

    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image
    from tf2_msgs.msg import TFMessage

    from launched_graph import ALL_UP, launcher_args, unique_lcm_url
    from ros_test_tools import read_log, wait_until
    from rynn_robot_bridge.camera_messages import image_to_rgb
    camera_tests = load_module(REPO_ROOT / "src/rynn_robot_bridge/test/test_realsense_camera.py")
    frame_pixels, record_in_child = camera_tests.frame_pixels, camera_tests.record_in_child

    width, height, frames = 160, 120, 30
    recording = record_in_child(tmp_path / "head.db3", frames, width, height)
    launcher = start_process(launcher_args(
        tmp_path / "logs", "model_config:=tiny", f"camera_width:={width}", f"camera_height:={height}",
        f"lcm_url:={unique_lcm_url()}", "console:=false", "compose:=false", "camera:=realsense",
        f"realsense_recording:={recording}", sets=("realsense_camera.playback_repeat=true",)), "launcher")
    images, static = [], []
    ros_node.create_subscription(Image, "/camera/camera/color/image_raw", images.append,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    ros_node.create_subscription(TFMessage, "/tf_static", static.append, QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    assert wait_until(lambda: ALL_UP.search(read_log(launcher)) or launcher.poll() is not None, 180.0), read_log(launcher)
    assert launcher.poll() is None, read_log(launcher)
    output = read_log(launcher)
    assert "realsense camera up: Software D435i (recording" in output
    assert re.search(r"camera \d+x\d+ @ 0(\.0)? Hz", output), output  # the simulated robot renders nothing

    def recorded_frames() -> int:
        matches = [m for m in images if m.width == width and int(image_to_rgb(m)[0, 0, 2]) == 7]
        return sum(np.array_equal(image_to_rgb(m), frame_pixels(int(image_to_rgb(m)[0, 0, 0]), width, height))
                   for m in matches[-10:])

    assert wait_until(lambda: recorded_frames() >= 5 and static, 120.0, spin=ros_node.spin_once), (
        f"{len(images)} canonical images\n{read_log(launcher)[-4000:]}")
    assert images[-1].header.frame_id == "camera_color_optical_frame"
    assert "camera_color_optical_frame" in {t.child_frame_id for msg in static for t in msg.transforms}
    launcher.send_signal(signal.SIGINT)
    assert launcher.wait(timeout=60) == 0, read_log(launcher)[-3000:]
