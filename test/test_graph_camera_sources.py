"""Choosing the real camera and the robot in the graph: camera:=sim|realsense, robot:=sim|lcm, and the
graph's comparison conditions and conditional parameters that express them (plain Python, no ROS)."""

from __future__ import annotations

import re

import pytest

from rynn_world.launcher.graph import GraphError, condition, node_parameters, resolve
from test_embedded_launcher import REAL_CAMERA_REMAPS, by_name, graph  # noqa: F401  (graph: the fixture)


def nodes(graph, **arguments):
    return by_name(resolve(graph, {k: str(v) for k, v in arguments.items()}, check_modules=False))


def test_default_is_the_simulated_robot_rendering_the_camera(graph):
    specs = nodes(graph)
    assert "realsense_camera" not in specs
    assert "render_rate_hz" not in specs["sim_robot"].parameters  # the simulated robot's own rate
    assert specs["robot_state_publisher"].parameters == {"urdf_path": ""}


def test_realsense_camera_replaces_the_simulated_camera(graph):
    specs = nodes(graph, camera="realsense", realsense_serial="f1230455", camera_width=848, camera_height=480,
                  realsense_recording="/data/head.db3", urdf_path="/robots/m6.urdf")
    camera = specs["realsense_camera"]
    assert camera.required and camera.remappings == REAL_CAMERA_REMAPS == specs["sim_robot"].remappings
    assert camera.parameters == {"serial_no": "f1230455", "rosbag_filename": "/data/head.db3",
                                 "rgb_camera.color_profile": "848,480,30"}
    assert specs["sim_robot"].parameters["render_rate_hz"] == 0.0  # still the robot on LCM, without its camera
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
