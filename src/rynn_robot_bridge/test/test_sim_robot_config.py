"""Configuration precedence of the simulated robot, as a real node process over DDS.

A parameter given on the command line beats the ``config_file``, the file beats the
dataclass defaults. The bug this guards against: the node took its parameter defaults
from the default robot.yaml, then overwrote a custom file's scene, seed, image size
and render rate with them.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytestmark = pytest.mark.ros

CUSTOM_ROBOT_YAML = """\
sim:
  scene: block_pushing
  seed: 7
  render_rate_hz: 4.0
  image_width: 320
  image_height: 240
"""


def run_sim(start_process, ros_node, repo_conftest, config_file, lcm_url, *overrides):
    """Start the node, return (its start-up log line, the images it published in a few seconds)."""
    from sensor_msgs.msg import Image

    wait_until, read_log = repo_conftest.wait_until, repo_conftest.read_log
    args = ["-p", f"config_file:={config_file}", "-p", f"lcm.url:={lcm_url}"]
    for override in overrides:
        args += ["-p", override]
    proc = start_process(["-m", "rynn_robot_bridge.nodes.sim_robot_node", "--ros-args", *args], "sim_robot")
    images = []
    ros_node.create_subscription(Image, "/camera/camera/color/image_raw", images.append, 10)
    assert wait_until(lambda: len(images) >= 6, 90, spin=ros_node.spin_once), read_log(proc)
    line = re.search(r"simulated robot up: .*", read_log(proc))
    assert line, read_log(proc)
    return line.group(0), images


def stamp_intervals(images) -> np.ndarray:
    stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in images])
    return np.diff(stamps)


def test_custom_config_file_keeps_its_scene_seed_size_and_rate(start_process, ros_node, repo_conftest, lcm_url, tmp_path):
    config_file = tmp_path / "robot.yaml"
    config_file.write_text(CUSTOM_ROBOT_YAML)
    line, images = run_sim(start_process, ros_node, repo_conftest, config_file, lcm_url)

    assert "scene=block_pushing seed=7 " in line, line
    assert f"lcm={lcm_url} " in line, line  # the lcm.url parameter beats the file's default URL
    assert "camera 320x240 @ 4 Hz" in line, line
    assert {(m.width, m.height) for m in images} == {(320, 240)}
    # 4 Hz from the file, not robot.yaml's 30 Hz: frames ~0.25 s apart (load only stretches them).
    assert np.median(stamp_intervals(images)) > 0.2, stamp_intervals(images)


def test_parameter_overrides_beat_the_config_file(start_process, ros_node, repo_conftest, lcm_url, tmp_path):
    config_file = tmp_path / "robot.yaml"
    config_file.write_text(CUSTOM_ROBOT_YAML)
    line, images = run_sim(start_process, ros_node, repo_conftest, config_file, lcm_url,
                           "sim.seed:=11", "sim.image_width:=256", "sim.render_rate_hz:=3.0")

    assert "scene=block_pushing seed=11 " in line, line  # scene from the file, seed from the parameter
    assert "camera 256x240 @ 3 Hz" in line, line  # width and rate from parameters, height from the file
    assert {(m.width, m.height) for m in images} == {(256, 240)}
    assert np.median(stamp_intervals(images)) > 0.28, stamp_intervals(images)
