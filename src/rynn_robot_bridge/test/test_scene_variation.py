"""Scene variation: a function of the seed, different across seeds, within the bounds that keep the
task doable (objects reachable, distractors out of the way), and the success checks follow the sizes."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

import rynn_robot_bridge.sim  # noqa: F401  (headless GL before mujoco loads)
from rynn_robot_bridge.sim import scene_variation as sv
from rynn_robot_bridge.sim.scenes import TASKS, set_object_pose, yaw_quat
from rynn_robot_bridge.sim.simulator import SimulatedRobot

BASE_COLOURS = {"apple": (0.8, 0.1, 0.08, 1.0), "banana": (0.95, 0.82, 0.15, 1.0)}


def test_the_same_seed_gives_the_same_scene_and_other_seeds_differ():
    first = SimulatedRobot("dual_picking", seed=5, vary_scene=True)
    again = SimulatedRobot("dual_picking", seed=5, vary_scene=True)
    other = SimulatedRobot("dual_picking", seed=6, vary_scene=True)
    assert first.variation.as_dict() == again.variation.as_dict()
    np.testing.assert_array_equal(first.model.geom_size, again.model.geom_size)
    np.testing.assert_array_equal(first.model.geom_rgba, again.model.geom_rgba)
    np.testing.assert_array_equal(first.data.qpos, again.data.qpos)
    assert first.variation.as_dict() != other.variation.as_dict()
    assert not np.array_equal(first.data.body("apple").xpos, other.data.body("apple").xpos)
    # the variation has its own random stream: object poses are those of the same seed without it
    plain = SimulatedRobot("dual_picking", seed=5)
    np.testing.assert_allclose(first.data.body("plate").xpos[:2], plain.data.body("plate").xpos[:2])
    assert first.model.ngeom > plain.model.ngeom or first.variation.distractors == ()


def test_variation_is_applied_to_the_model():
    robot = SimulatedRobot("lid_placement", seed=11, vary_scene=True)
    plain = SimulatedRobot("lid_placement", seed=11)
    variation = robot.variation
    lid = robot.model.body("lid").id
    lid_geoms = np.flatnonzero(robot.model.geom_bodyid == lid)
    plain_geoms = np.flatnonzero(plain.model.geom_bodyid == plain.model.body("lid").id)
    np.testing.assert_allclose(robot.model.geom_size[lid_geoms], variation.size_scale * plain.model.geom_size[plain_geoms])
    np.testing.assert_allclose(robot.model.geom_rgba[lid_geoms[0], :3], variation.colours["lid"][:3])
    assert sum(name.startswith("distractor_") for name in _body_names(robot.model)) == len(variation.distractors)
    camera = robot.model.camera("head_camera")
    shift = camera.pos - plain.model.camera("head_camera").pos
    np.testing.assert_allclose(shift, variation.camera_shift, atol=1e-9)
    assert robot.task.parameters["box_height"] == pytest.approx(0.10 * variation.size_scale)


@pytest.mark.parametrize("seed", range(40))
def test_sampled_variation_stays_within_bounds(seed):
    variation = sv.sample_variation(np.random.default_rng([seed, 2]), BASE_COLOURS)
    assert sv.SIZE_RANGE[0] <= variation.size_scale <= sv.SIZE_RANGE[1]
    assert np.abs(variation.camera_shift).max() <= sv.CAMERA_SHIFT_M
    assert np.abs(variation.camera_tilt).max() <= sv.CAMERA_TILT_RAD
    assert sv.DISTRACTORS[0] <= len(variation.distractors) <= sv.DISTRACTORS[1]
    for distractor in variation.distractors:
        x, y = distractor.xy
        assert sv.DISTRACTOR_X[0] <= x <= sv.DISTRACTOR_X[1] and sv.DISTRACTOR_Y[0] <= y <= sv.DISTRACTOR_Y[1]
        assert max(distractor.size) <= 0.04
    for name, rgba in variation.colours.items():
        assert np.abs(np.subtract(rgba[:3], BASE_COLOURS[name][:3])).max() <= sv.COLOUR_JITTER + 1e-9


@pytest.mark.parametrize("task", TASKS)
def test_varied_scenes_keep_objects_on_the_table_in_reach_and_clear_of_distractors(task):
    for seed in range(3):
        robot = SimulatedRobot(task, seed=seed, vary_scene=True)
        mujoco.mj_step(robot.model, robot.data, 200)  # 0.4 s: everything settles, nothing falls or flies
        state = robot.task.state(robot.data)
        for obj in state.objects.values():
            assert 0.2 <= obj.position[0] <= 0.62 and abs(obj.position[1]) <= 0.25, (task, seed, obj)
            assert -0.005 <= obj.position[2] <= 0.1, (task, seed, obj)
            for index in range(len(robot.variation.distractors)):
                distractor = robot.data.body(f"distractor_{index}").xpos
                assert np.linalg.norm(distractor[:2] - obj.position[:2]) > 0.12
                assert distractor[2] > 0.0  # resting on the table


def test_the_success_checks_follow_the_object_sizes():
    robot = next(r for r in (SimulatedRobot("lid_placement", seed=s, vary_scene=True) for s in range(20))
                 if abs(r.variation.size_scale - 1.0) > 0.05)  # a box clearly bigger or smaller than the plain one
    box = robot.data.body("box")
    top = box.xpos[2] + robot.task.parameters["box_height"] + robot.task.parameters["lid_thickness"] / 2
    yaw = float(np.arctan2(box.xmat[3], box.xmat[0]))
    set_object_pose(robot.model, robot.data, "lid", [box.xpos[0], box.xpos[1], top], yaw_quat(yaw))
    mujoco.mj_forward(robot.model, robot.data)
    assert robot.task.success(robot.model, robot.data)
    set_object_pose(robot.model, robot.data, "lid", [box.xpos[0], box.xpos[1], top + 0.03], yaw_quat(yaw))
    mujoco.mj_forward(robot.model, robot.data)
    assert not robot.task.success(robot.model, robot.data)


def _body_names(model) -> list[str]:
    return [model.body(i).name for i in range(model.nbody)]
