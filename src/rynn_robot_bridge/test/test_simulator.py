"""The MuJoCo robot: servo tracking, limits, the head camera's geometry, and the task success checks."""

import os
import subprocess
import sys

import numpy as np
import pytest

import rynn_robot_bridge.sim  # noqa: F401  (chooses the headless GL backend before mujoco loads)
from rynn_common.action_layout import ACTION_DIM, joint_names
from rynn_common.description import D435I_COLOR
from rynn_common.ros_names import CAMERA_FRAME
from rynn_robot_bridge.sim.scenes import TASKS, block_zone, set_object_pose, yaw_quat
from rynn_robot_bridge.sim.simulator import SimulatedRobot


@pytest.fixture(scope="module")
def robot():
    sim = SimulatedRobot("empty")
    yield sim
    sim.close()


def test_model_has_a_servo_per_action_joint(robot):
    assert robot.model.nu == ACTION_DIM
    assert [robot.model.actuator(i).name for i in range(ACTION_DIM)] == joint_names()


def test_servos_track_a_step_within_a_few_milliradians(robot):
    robot.reset()
    target = robot.home_pose.copy()
    target[:14] -= 0.2
    target[14:] = np.clip(target[14:] + 0.4, robot.limits.lower[14:], robot.limits.upper[14:])
    robot.set_joint_targets(target)
    robot.step(250)  # 0.5 s at 500 Hz
    assert np.abs(robot.joint_positions() - target).max() < 5e-3


def test_targets_move_no_faster_than_the_joint_velocity_limits(robot):
    robot.reset()
    target = robot.home_pose.copy()
    target[0] -= 1.0  # 1 rad jump on left shoulder pitch (limit 2.6 rad/s)
    robot.set_joint_targets(target)
    robot.step(50)  # 0.1 s
    moved = abs(robot.joint_positions()[0] - robot.home_pose[0])
    assert 0.15 < moved < 0.27


def test_command_delay_postpones_the_target():
    sim = SimulatedRobot("empty", command_delay_s=0.02)
    target = sim.home_pose.copy()
    target[3] += 0.3
    sim.set_joint_targets(target)
    sim.step(9)  # 18 ms: nothing applied yet
    assert abs(sim.joint_positions()[3] - sim.home_pose[3]) < 1e-4
    sim.step(100)
    assert abs(sim.joint_positions()[3] - target[3]) < 0.01


def _red_centroid(rgb):
    r, g, b = (rgb[..., i].astype(int) for i in range(3))
    ys, xs = np.nonzero((r > 120) & (g < 60) & (b < 60))
    assert len(xs) > 50, "the apple is not in view"
    return np.array([xs.mean(), ys.mean()])


@pytest.mark.parametrize("size", [(640, 480), (832, 480)])
def test_head_camera_projects_like_the_d435i_intrinsics(size):
    intrinsics = D435I_COLOR.scaled(*size)
    sim = SimulatedRobot("dual_picking", seed=3, camera=intrinsics)
    try:
        rgb = sim.render()
        assert rgb.shape == (size[1], size[0], 3) and rgb.dtype == np.uint8
        frame = sim.data.body(CAMERA_FRAME)
        apple_in_camera = frame.xmat.reshape(3, 3).T @ (sim.data.body("apple").xpos - frame.xpos)
        assert apple_in_camera[2] > 0.3  # optical frame: z looks forward
        expected = intrinsics.project(apple_in_camera)[0]
        np.testing.assert_allclose(_red_centroid(rgb), expected, atol=3.0)
    finally:
        sim.close()


def test_objects_settle_and_no_task_starts_solved():
    for task in TASKS:
        sim = SimulatedRobot(task, seed=11)
        start = {n: sim.data.body(n).xpos.copy() for n in sim.task.object_names()}
        sim.step(500)
        for name, position in start.items():
            assert np.linalg.norm(sim.data.body(name).xpos - position) < 0.02, (task, name)
        assert not sim.task.success(sim.model, sim.data), task


def test_fallen_objects_and_diverged_physics_are_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warning to MUJOCO_LOG.TXT in the working directory
    sim = SimulatedRobot("dual_picking", seed=0)
    sim.step(10)
    assert sim.objects_off_table() == [] and sim.physics_warnings() == {}
    set_object_pose(sim.model, sim.data, "apple", [0.30, 0.25, -0.7], yaw_quat(0))  # on the floor
    set_object_pose(sim.model, sim.data, "banana", [-1440.0, -4350.0, 4737.0], yaw_quat(0))  # where one blew up to
    sim.step(2)
    assert sim.objects_off_table() == ["apple", "banana"] and sim.physics_warnings() == {}
    dof = sim.model.jnt_dofadr[sim.model.body("banana").jntadr[0]]
    sim.data.qvel[dof : dof + 3] = 1e20  # a contact that blew up: MuJoCo resets the state and counts it
    sim.step(2)
    assert sim.physics_warnings() == {"mjWARN_BADQVEL": 1}


def test_seeds_randomise_the_object_poses():
    first = SimulatedRobot("lid_placement", seed=1).data.body("lid").xpos.copy()
    same = SimulatedRobot("lid_placement", seed=1).data.body("lid").xpos.copy()
    other = SimulatedRobot("lid_placement", seed=2).data.body("lid").xpos.copy()
    np.testing.assert_array_equal(first, same)
    assert np.linalg.norm(first - other) > 1e-3


def _settle(sim, seconds=0.6):
    sim.step(int(seconds / sim.timestep))


def test_dual_picking_success_needs_both_fruits_picked_not_only_off_the_plate():
    """Fruits that end on the table without having been held in the air (knocked or rolled off, here
    teleported) are not a success; the episode test holds the success of real picks."""
    sim = SimulatedRobot("dual_picking", seed=0)
    set_object_pose(sim.model, sim.data, "apple", [0.30, 0.25, 0.036], yaw_quat(0))
    set_object_pose(sim.model, sim.data, "banana", [0.30, -0.25, 0.017], yaw_quat(0.3))
    _settle(sim)
    assert not sim.task.success(sim.model, sim.data)
    assert sim.task.holds.summary() == {"apple": {"held_s": 0.0, "raised_m": 0.0},
                                        "banana": {"held_s": 0.0, "raised_m": 0.0}}
    assert not sim.task.was_picked("apple") and not sim.task.was_picked("banana")


def test_block_pushing_success_only_in_the_right_zone():
    sim = SimulatedRobot("block_pushing", seed=0)
    assert block_zone(sim.data) == "left"
    set_object_pose(sim.model, sim.data, "block", [0.38, 0.0, 0.036], yaw_quat(0.2))
    _settle(sim)
    assert block_zone(sim.data) == "centre" and not sim.task.success(sim.model, sim.data)
    set_object_pose(sim.model, sim.data, "block", [0.39, -0.21, 0.036], yaw_quat(-0.2))
    _settle(sim)
    assert sim.task.success(sim.model, sim.data)


def test_bimanual_lifting_success_when_the_plush_rests_in_the_tray():
    sim = SimulatedRobot("bimanual_lifting", seed=0)
    tray = sim.data.body("tray")
    set_object_pose(sim.model, sim.data, "plush", tray.xpos + [0.0, 0.0, 0.08], tray.xquat.copy())
    _settle(sim, 1.0)
    assert sim.task.success(sim.model, sim.data)
    set_object_pose(sim.model, sim.data, "plush", tray.xpos + [0.0, 0.35, 0.07], tray.xquat.copy())
    _settle(sim, 1.0)
    assert not sim.task.success(sim.model, sim.data)


def test_lid_placement_success_needs_a_centred_aligned_lid():
    sim = SimulatedRobot("lid_placement", seed=0)
    box = sim.data.body("box")
    box_yaw = 2 * np.arctan2(box.xquat[3], box.xquat[0])
    set_object_pose(sim.model, sim.data, "lid", box.xpos + [0.0, 0.0, 0.105], yaw_quat(box_yaw + np.pi / 2))
    _settle(sim)
    assert not sim.task.success(sim.model, sim.data)  # rotated a quarter turn
    set_object_pose(sim.model, sim.data, "lid", box.xpos + [0.0, 0.0, 0.105], yaw_quat(box_yaw))
    _settle(sim)
    assert sim.task.success(sim.model, sim.data)


def test_unknown_scene_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown scene"):
        SimulatedRobot("juggling")


def test_a_renderer_that_cannot_start_is_a_clear_error_and_physics_keeps_running(monkeypatch):
    from rynn_robot_bridge.sim import headless_gl
    from rynn_robot_bridge.sim.headless_gl import RendererUnavailable

    monkeypatch.setattr(headless_gl, "_failure", "no offscreen OpenGL backend works for MuJoCo (egl: test)")
    sim = SimulatedRobot("empty")
    with pytest.raises(RendererUnavailable, match="egl: test"):
        sim.render()
    sim.step(10)
    assert sim.time == pytest.approx(0.02)


@pytest.mark.parametrize("preset, expected", [(None, "1"), ("3", "3")])
def test_llvmpipe_renders_on_one_thread_unless_the_environment_says_otherwise(preset, expected):
    """Mesa reads LP_NUM_THREADS when the first GL context starts, so the choice is checked in a fresh
    interpreter: importing the sim package sets it (``headless_gl.LLVMPIPE_THREADS``), a user's value is kept."""
    env = {key: value for key, value in os.environ.items() if key not in ("LP_NUM_THREADS", "MUJOCO_GL")}
    if preset is not None:
        env["LP_NUM_THREADS"] = preset
    env["MUJOCO_GL"] = "egl"  # skip the backend probe: only the thread count is under test
    env["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)  # these sources, not an installed copy
    code = "import os, rynn_robot_bridge.sim; print(os.environ['LP_NUM_THREADS'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected
