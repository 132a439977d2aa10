import numpy as np
import pytest

from rynn_retarget.kinematics.arm_ik import ArmIkConfig, ArmIkSolver, damped_pseudo_inverse
from rynn_retarget.kinematics.robot_model import build_arm_chain
from rynn_retarget.kinematics.transforms import rotation_angle, scale_translation, wrist_target, pose

NEUTRAL = np.array([-0.4, -0.05, 0.0, -1.5, -1.5, 0.0, 0.0])


@pytest.fixture(scope="module")
def left_arm(robot_model):
    return build_arm_chain(robot_model, "left")


def test_transform_chain_scales_translation_only():
    chest = pose(translation=[1.0, 2.0, 1.3])
    wrist = pose(np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]]), [1.2, 2.1, 1.0])
    target = wrist_target(chest, wrist, np.eye(4), np.eye(4), 1.5)
    assert target[:3, 3] == pytest.approx([0.3, 0.15, -0.45])
    assert target[:3, :3] == pytest.approx(wrist[:3, :3])
    assert scale_translation(wrist, 2.0)[:3, :3] == pytest.approx(wrist[:3, :3])


def test_damping_follows_the_paper_formula():
    jacobian = np.diag([2.0, 0.5, 1e-6])
    pinv = damped_pseudo_inverse(jacobian, 0.01)
    damping = 0.01 + 0.01 / 3.0
    assert np.diag(pinv) == pytest.approx([s / (s * s + damping**2) for s in (2.0, 0.5, 1e-6)])


def test_random_reachable_targets_are_solved_within_1mm_1deg(left_arm):
    solver = ArmIkSolver(left_arm, ArmIkConfig(max_iterations=100, restarts=10))
    rng = np.random.default_rng(7)
    ok = 0
    for _ in range(40):
        q_true = rng.uniform(left_arm.lower, left_arm.upper)
        result = solver.solve(left_arm.ee_pose(q_true), NEUTRAL)
        ok += result.position_error < 1e-3 and result.orientation_error < np.deg2rad(1.0)
        assert np.all(result.q >= left_arm.lower) and np.all(result.q <= left_arm.upper)
    assert ok >= 39


def test_unreachable_target_is_flagged_and_stays_in_limits(left_arm):
    solver = ArmIkSolver(left_arm)
    far = pose(translation=[2.0, 0.5, 0.5])
    result = solver.solve(far, NEUTRAL)
    assert not result.reachable and result.position_error > 0.5
    assert np.all(np.isfinite(result.q))
    assert np.all(result.q >= left_arm.lower) and np.all(result.q <= left_arm.upper)


def test_shoulder_prior_pulls_the_elbow_towards_the_reference(left_arm):
    """Same hand target, two elbow references: the elbow follows the reference."""
    solver = ArmIkSolver(left_arm, ArmIkConfig(max_iterations=200))
    target = left_arm.ee_pose(NEUTRAL)
    shoulder = left_arm.elbow_position(np.zeros(7)) + np.array([0, 0, 0.3])  # elbow hangs 0.3 below
    elbows = {}
    for name, direction in (("out", [0.0, 1.0, -1.0]), ("in", [0.0, -0.3, -1.0])):
        reference = shoulder + 0.3 * np.array(direction) / np.linalg.norm(direction)
        result = solver.solve(target, NEUTRAL, reference)
        assert result.position_error < 1e-3
        elbows[name] = left_arm.elbow_position(result.q)
    assert elbows["out"][1] > elbows["in"][1] + 0.03


def test_orientation_helper():
    assert rotation_angle(np.eye(3), pose(np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0.0]]))[:3, :3]) == pytest.approx(np.pi / 2)
