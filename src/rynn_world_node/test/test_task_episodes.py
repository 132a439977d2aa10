"""Generated episodes with the task operator: the scene as it started (object poses, sizes, the variation)
is in the episode's metadata, reproducible from the seed, and the recorded actions go for the object."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rynn_robot_bridge.sim  # noqa: F401  (headless GL before mujoco loads)
from rynn_retarget.pipeline import ARM_SLICES, RetargetPipeline
from rynn_robot_bridge.sim.simulator import SimulatedRobot
from rynn_world.episodes.generate import main
from rynn_world.episodes.rollout import EpisodeSettings, make_operator

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
    """Two seconds in, the hand that goes first (the left, to the apple) has closed most of its distance."""
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


def test_each_frame_has_the_task_objects_segmentation_and_positions(generated):
    summary = json.loads((generated / "dual_picking" / "episode_0000" / "episode.json").read_text())
    arrays = np.load(generated / "dual_picking" / "episode_0000" / "frames.npz")
    masks, positions = arrays["object_mask"], arrays["object_position"]
    assert summary["mask_objects"] == ["plate", "apple", "banana"]
    assert masks.shape == (summary["frames"], 72, 96) and masks.dtype == np.uint8
    assert positions.shape == (summary["frames"], 3, 3)
    assert set(np.unique(masks)) <= {0, 1, 2, 3}
    assert all((masks[0] == label).any() for label in (1, 2, 3)), "plate, apple and banana are in view at the start"
    for column, name in enumerate(summary["mask_objects"]):
        np.testing.assert_allclose(positions[0, column], summary["scene"]["objects"][name]["position"], atol=1e-5)


def test_the_object_mask_follows_the_object():
    """The apple's label is where the apple is: gone when it is moved out of view, back when it returns."""
    import mujoco

    from rynn_common.description import D435I_COLOR

    robot = SimulatedRobot("dual_picking", seed=3, camera=D435I_COLOR.scaled(96, 72))
    apple = robot.task.object_names().index("apple") + 1
    try:
        seen = robot.object_mask()
        assert (seen == apple).sum() > 5
        joint = robot.model.body("apple").jntadr[0]
        address = robot.model.jnt_qposadr[joint]
        start = robot.data.qpos[address: address + 3].copy()
        robot.data.qpos[address: address + 3] = [0.0, 5.0, 0.5]  # far to the side, out of the camera's view
        mujoco.mj_forward(robot.model, robot.data)
        assert not (robot.object_mask() == apple).any()
        robot.data.qpos[address: address + 3] = start
        mujoco.mj_forward(robot.model, robot.data)
        np.testing.assert_array_equal(robot.object_mask(), seen)
        assert robot.render().shape == (72, 96, 3)  # the colour render is unaffected by the segmentation pass
    finally:
        robot.close()
