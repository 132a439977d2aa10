"""The live simulated camera renders without anti-aliasing (robot.yaml's ``sim.multisamples``, 0), because
what the world model sees of a frame, shrunk to its input size, is the same picture either way."""

from __future__ import annotations

import numpy as np
import pytest

import rynn_robot_bridge.sim  # noqa: F401  (headless GL before mujoco)
from rynn_common.description import D435I_COLOR
from rynn_robot_bridge.config import load_robot_config
from rynn_robot_bridge.sim.simulator import HeadCameraView, SimulatedRobot
from rynn_world.image_input import to_model_rgb

MODEL_HEIGHT, MODEL_WIDTH = 128, 208  # the embedded model's frames


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    return float(10 * np.log10(255.0 ** 2 / np.mean((a.astype(float) - b.astype(float)) ** 2)))


@pytest.fixture(scope="module")
def renders():
    """One task scene at the configured 640x480, rendered with 0 and with MuJoCo's 4 samples a pixel."""
    config = load_robot_config()
    robot = SimulatedRobot("block_pushing", seed=0, camera=D435I_COLOR.scaled(config.sim.image_width, config.sim.image_height))
    robot.step(100)
    frames = {}
    for samples in (0, 4):
        view = HeadCameraView(robot.model, robot.camera, samples)
        try:
            frames[samples] = view.render(robot.data)
        finally:
            view.close()
    robot.close()
    return config, frames


def test_the_live_camera_is_configured_without_anti_aliasing(renders):
    config, _ = renders
    assert config.sim.multisamples == 0


def test_the_setting_reaches_the_renderer(renders):
    """Edges differ at full size: the samples asked for are the samples rendered."""
    _, frames = renders
    changed = np.abs(frames[0].astype(int) - frames[4].astype(int)).max(axis=2) > 32
    assert changed.mean() > 0.001, changed.mean()


def test_shrunk_to_the_models_input_the_two_renders_are_the_same_picture(renders):
    """47-50 dB over the four tasks (bench_sim_robot.py --multisamples); the generated stream is ~21 dB from the truth."""
    _, frames = renders
    seen = [to_model_rgb(frames[samples], MODEL_HEIGHT, MODEL_WIDTH) for samples in (0, 4)]
    assert psnr(*seen) > 40.0


def test_negative_samples_are_a_clear_error():
    robot = SimulatedRobot("empty", camera=D435I_COLOR.scaled(64, 48))
    try:
        with pytest.raises(ValueError, match="multisamples"):
            HeadCameraView(robot.model, robot.camera, -1)
    finally:
        robot.close()
