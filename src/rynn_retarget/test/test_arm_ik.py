import numpy as np
import pinocchio as pin
import pytest

from rynn_retarget.kinematics.arm_ik import ArmIkConfig, ArmIkSolver, bounded_damped_step, damped_pseudo_inverse
from rynn_retarget.kinematics.box_least_squares import clamp, solve_linear
from rynn_retarget.kinematics.robot_model import build_arm_chain
from rynn_retarget.kinematics.transforms import pose, rotation_angle, scale_translation, wrist_target

NEUTRAL = np.array([-0.4, -0.05, 0.0, -1.5, -1.5, 0.0, 0.0])


@pytest.fixture(scope="module")
def left_arm(robot_model, robot_limits):
    return build_arm_chain(robot_model, "left", robot_limits)


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


def near_limit_configuration(arm, rng, joints=3, margin=0.03):
    """Uniform q with ``joints`` random joints within ``margin`` of their range from a limit."""
    q = rng.uniform(arm.lower, arm.upper)
    near = rng.choice(arm.model.nq, joints, replace=False)
    span = arm.upper - arm.lower
    upper_side = rng.integers(0, 2, joints).astype(bool)
    q[near] = np.where(upper_side, arm.upper[near] - margin * span[near], arm.lower[near] + margin * span[near])
    return q


def test_cold_solves_of_targets_near_the_joint_limits_need_no_restarts(left_arm):
    """Clipping after the step solved 37/60 of these; limits inside the step + escape solve >= 48/60."""
    solver = ArmIkSolver(left_arm, ArmIkConfig(max_iterations=100, restarts=0))
    rng = np.random.default_rng(11)
    ok = 0
    for _ in range(60):
        target = left_arm.ee_pose(near_limit_configuration(left_arm, rng))
        result = solver.solve(target, NEUTRAL)
        ok += result.position_error < 1e-3 and result.orientation_error < np.deg2rad(1.0)
        assert np.all(result.q >= left_arm.lower) and np.all(result.q <= left_arm.upper)
    assert ok >= 48


def test_tracking_joint_sines_to_near_the_limits_keeps_every_frame(left_arm):
    """Warm-started at 120 Hz over 90 % of every joint's range: no joint stays pinned (was 138 missed frames)."""
    solver = ArmIkSolver(left_arm, ArmIkConfig())
    rng = np.random.default_rng(2)
    frequency, phase = rng.uniform(0.05, 0.3, 7), rng.uniform(0, 2 * np.pi, 7)
    middle, half_range = (left_arm.lower + left_arm.upper) / 2, (left_arm.upper - left_arm.lower) / 2
    times = np.arange(1200) / 120.0
    trajectory = middle + 0.9 * half_range * np.sin(2 * np.pi * frequency * times[:, None] + phase)
    q = trajectory[0].copy()
    missed = 0
    for q_true in trajectory:
        result = solver.solve(left_arm.ee_pose(q_true), q)
        q = result.q
        missed += not (result.position_error < 1e-3 and result.orientation_error < np.deg2rad(1.0))
    assert missed <= 12


def test_bounded_step_keeps_the_limits_and_hands_the_error_to_free_joints():
    """A joint that would cross its bound is held there; the others re-solve the error it leaves."""
    jacobian = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    error = np.array([1.0, 0.5])
    low, high = np.full(3, -1.0), np.array([0.1, 2.0, 2.0])
    step, free, _ = bounded_damped_step(jacobian, error, low, high, 1e-6)
    assert step[0] == pytest.approx(0.1)
    assert not free[0] and free[1] and free[2]
    assert jacobian @ step == pytest.approx(error, abs=1e-4)  # the free joint took over joint 0's share


def out_of_reach_targets(arm, rng, count):
    """Random reachable poses pushed 1.1-1.8x further from the shoulder."""
    shoulder = arm.elbow_position(np.zeros(7)) + np.array([0, 0, 0.3])
    targets = []
    for _ in range(count):
        target = arm.ee_pose(rng.uniform(arm.lower, arm.upper))
        target[:3, 3] = shoulder + rng.uniform(1.1, 1.8) * (target[:3, 3] - shoulder)
        targets.append(target)
    return targets


def test_fruitless_escape_stop_cuts_out_of_reach_solves_and_leaves_converging_ones_alone(left_arm):
    escaping = ArmIkSolver(left_arm, ArmIkConfig())
    stopping = ArmIkSolver(left_arm, ArmIkConfig(fruitless_escapes=1))
    rng = np.random.default_rng(3)
    far = out_of_reach_targets(left_arm, rng, 20)
    full = [escaping.solve(target, NEUTRAL) for target in far]
    cut = [stopping.solve(target, NEUTRAL) for target in far]
    assert sum(not result.reachable for result in full) >= 15
    assert sum(r.iterations for r in cut) < 0.9 * sum(r.iterations for r in full)
    converged = 0
    for target in (left_arm.ee_pose(rng.uniform(left_arm.lower, left_arm.upper)) for _ in range(10)):
        start = NEUTRAL + 0.05
        a, b = escaping.solve(target, start), stopping.solve(target, start)
        if a.position_error < 1e-4 and a.orientation_error < 1e-3:
            converged += 1
            assert np.array_equal(a.q, b.q) and a.iterations == b.iterations
    assert converged >= 8


def test_escapes_after_fruitless_ones_still_lower_the_error_so_the_stop_is_off_by_default(left_arm):
    """Why ``fruitless_escapes`` defaults to 0: stopping after one fruitless escape leaves out-of-reach
    solves measurably worse than escaping to max_iterations."""
    assert ArmIkConfig().fruitless_escapes == 0
    escaping = ArmIkSolver(left_arm, ArmIkConfig())
    stopping = ArmIkSolver(left_arm, ArmIkConfig(fruitless_escapes=1))
    worse = 0
    for target in out_of_reach_targets(left_arm, np.random.default_rng(3), 40):
        full, cut = escaping.solve(target, NEUTRAL), stopping.solve(target, NEUTRAL)
        full_error = np.hypot(full.position_error, full.orientation_error)
        assert np.hypot(cut.position_error, cut.orientation_error) >= full_error - 1e-12
        worse += np.hypot(cut.position_error, cut.orientation_error) > full_error + 1e-3
    assert worse >= 2


def test_clamp_gives_numpys_numbers_bit_for_bit_and_solve_linear_numpys_to_rounding():
    """The solvers' fast paths must not move the command. numpy and scipy each bundle their own OpenBLAS,
    which picks its kernels by CPU: on an AVX-512 machine the same gesv differs in the last bits (3.5e-16
    of the solution's scale seen), so the solve is held to rounding, not to numpy's bits."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        values, low = rng.normal(size=20), -np.abs(rng.normal(size=20))
        assert np.array_equal(clamp(values, low, -low), np.clip(values, low, -low))
        jacobian = rng.normal(size=(57, 20))
        hessian, rhs = jacobian.T @ jacobian + 1e-4 * np.eye(20), rng.normal(size=20)
        expected = np.linalg.solve(hessian, rhs)
        np.testing.assert_allclose(solve_linear(hessian, rhs), expected, rtol=0, atol=1e-14 * np.abs(expected).max())
    assert np.isnan(clamp(np.array([np.nan, 2.0]), np.zeros(2), np.ones(2))).tolist() == [True, False]
    with pytest.raises(np.linalg.LinAlgError):
        solve_linear(np.zeros((3, 3)), np.ones(3))


def test_pose_error_from_the_homogeneous_matrix_equals_the_se3_members_bit_for_bit(left_arm):
    rng = np.random.default_rng(6)
    for _ in range(200):
        target = left_arm.ee_pose(rng.uniform(left_arm.lower, left_arm.upper))
        current, _ = left_arm.ee_jacobian(rng.uniform(left_arm.lower, left_arm.upper))
        error = np.zeros(6)
        ArmIkSolver._pose_error(target[:3, :3], target[:3, 3], current.homogeneous, error)
        assert np.array_equal(error[:3], target[:3, 3] - current.translation)
        assert np.array_equal(error[3:], pin.log3(target[:3, :3] @ current.rotation.T))
