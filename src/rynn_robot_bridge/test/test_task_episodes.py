"""Generated episodes with the task operator: the scene as it started (object poses, sizes, the variation)
is in the episode's metadata, reproducible from the seed, and the recorded actions go for the object."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("rynn_retarget.pipeline")
import rynn_robot_bridge.sim  # noqa: F401  (headless GL before mujoco loads)
from rynn_retarget.pipeline import ARM_SLICES, RetargetPipeline
from rynn_robot_bridge.episodes.generate import main
from rynn_robot_bridge.episodes.rollout import EpisodeSettings, make_operator
from rynn_robot_bridge.sim.simulator import SimulatedRobot

ARGS = ["--tasks", "dual_picking", "--episodes", "2", "--seed", "3", "--duration", "2.0", "--fps", "4",
        "--width", "96", "--height", "72"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("task_episodes")
    main([*ARGS, "--out", str(out)])
    return out


def test_the_episode_metadata_holds_the_scene_and_its_variation(generated):
    summaries = [json.loads((generated / "dual_picking" / f"episode_000{i}" / "episode.json").read_text())
                 for i in range(2)]
    for summary in summaries:
        assert summary["operator"] == "task"
        scene = summary["scene"]
        assert set(scene["objects"]) == {"plate", "apple", "banana"}
        variation = scene["variation"]
        assert 0.9 <= variation["size_scale"] <= 1.1
        assert scene["objects"]["apple"]["half_extents"][0] == pytest.approx(0.035 * variation["size_scale"], abs=1e-5)
        assert {"colours", "distractors", "table_texture", "light_direction", "camera_shift"} <= set(variation)
    assert summaries[0]["scene"] != summaries[1]["scene"]
    # regenerated from its seed, the episode starts from the same scene
    robot = SimulatedRobot("dual_picking", seed=summaries[0]["seed"], vary_scene=True)
    assert robot.variation.as_dict() == summaries[0]["scene"]["variation"]
    np.testing.assert_allclose(robot.data.body("apple").xpos, summaries[0]["scene"]["objects"]["apple"]["position"],
                               atol=1e-5)


def test_the_recorded_arms_reach_for_the_fruit(generated):
    """Two seconds in, the hand that goes first (left: apple, right: banana) has closed most of its distance."""
    summary = json.loads((generated / "dual_picking" / "episode_0000" / "episode.json").read_text())
    joints = np.load(generated / "dual_picking" / "episode_0000" / "frames.npz")["joint_position"]
    pipeline = RetargetPipeline()
    ratios = []
    for side, fruit in (("left", "apple"), ("right", "banana")):
        arm, fruit_position = pipeline.arms[side], np.asarray(summary["scene"]["objects"][fruit]["position"])
        start, end = (arm.palm_pose(joints[i][ARM_SLICES[side]])[:3, 3] for i in (0, -1))
        ratios.append(np.linalg.norm(end - fruit_position) / np.linalg.norm(start - fruit_position))
    assert min(ratios) < 0.6, ratios


def test_the_operator_kind_is_checked():
    robot = SimulatedRobot("block_pushing", seed=0)
    with pytest.raises(ValueError, match="unknown operator 'puppet'"):
        make_operator("block_pushing", 0, EpisodeSettings(operator="puppet"), RetargetPipeline(), robot)
