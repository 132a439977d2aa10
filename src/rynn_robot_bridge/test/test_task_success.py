"""The task operator does the four tasks through the real pipeline (trackers and gloves -> retargeting ->
Ruckig -> simulated robot), and the scenes' success checks are not fooled when the operator misses."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

pytest.importorskip("rynn_retarget.pipeline")
import rynn_robot_bridge.sim  # noqa: F401  (headless GL before mujoco loads)
from rynn_robot_bridge.episodes.rollout import EpisodeSettings, episode_seed, run_episode, start_episode
from rynn_robot_bridge.sim.scenes import TASKS, object_position, set_object_pose

SETTINGS = EpisodeSettings(operator="task", fps=1.0, image_width=64, image_height=48)
# Episode 0 of each task (run seed 0, as bench_task_success seeds them).
EPISODE = 0
# The lid's pinch does not hold the knob yet (README, task operator): strict, so a fix shows.
LID_UNSOLVED = pytest.mark.xfail(strict=True, reason="the pinch's thumb-index axis is near vertical for a palm-down hand")

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("task", [task if task != "lid_placement" else pytest.param(task, marks=LID_UNSOLVED)
                                  for task in TASKS])
def test_a_seeded_episode_of_each_task_succeeds(task, tmp_path):
    summary, _ = run_episode(start_episode(task, episode_seed(0, task, EPISODE), SETTINGS), tmp_path / "bag")
    assert summary["success"] is True
    assert summary["retarget_counters"]["accepted"] > 0.9 * summary["duration_s"] * SETTINGS.command_rate_hz


def test_the_same_episode_fails_when_the_object_is_not_where_the_operator_aims(tmp_path):
    """A scripted miss: the plan is made for the block where it was; it is then moved 12 cm further away."""
    task, target = "block_pushing", "block"
    episode = start_episode(task, episode_seed(0, task, EPISODE), SETTINGS)
    robot = episode.robot
    body = robot.data.body(target)
    moved = object_position(robot.data, target) + np.array([0.12, 0.0, 0.0])
    set_object_pose(robot.model, robot.data, target, moved, body.xquat.copy())
    mujoco.mj_forward(robot.model, robot.data)
    summary, _ = run_episode(episode, tmp_path / "bag")
    assert summary["success"] is False
    np.testing.assert_allclose(summary["scene"]["objects"][target]["position"], moved, atol=1e-3)  # as it started
