"""The suite's one Ruckig wrapper: limits held, the two synchronisation modes, failures reported;
and no second wrapper anywhere in the sources."""

import json
from pathlib import Path

import numpy as np
import pytest

from rynn_common.action_layout import ACTION_DIM, LEFT_ARM, LEFT_HAND, RIGHT_ARM, RIGHT_HAND
from rynn_common.action_trajectory import ActionTrajectory, arm_hand_vector

RATE = 200.0
SOURCES = Path(__file__).resolve().parents[2]  # src/


def test_arm_hand_vector_puts_each_value_on_its_joints():
    vector = arm_hand_vector(1.5, -2.0)
    assert vector.shape == (ACTION_DIM,)
    assert (vector[LEFT_ARM] == 1.5).all() and (vector[RIGHT_ARM] == 1.5).all()
    assert (vector[LEFT_HAND] == -2.0).all() and (vector[RIGHT_HAND] == -2.0).all()


def _trajectory(synchronized: bool, start=None) -> ActionTrajectory:
    limits = arm_hand_vector(1.0, 4.0), arm_hand_vector(5.0, 20.0), arm_hand_vector(50.0, 400.0)
    return ActionTrajectory(RATE, *limits, start=np.zeros(ACTION_DIM) if start is None else start,
                            synchronized=synchronized)


@pytest.mark.parametrize("synchronized", [False, True])
def test_motion_respects_the_velocity_limits_and_reaches_the_target(synchronized):
    trajectory = _trajectory(synchronized)
    target = np.full(ACTION_DIM, 0.5)
    target[0] = 1.0
    trajectory.set_target(target)
    previous = trajectory.position
    for _ in range(int(5 * RATE)):
        assert trajectory.step()
        step = np.abs(trajectory.position - previous) * RATE
        assert (step <= arm_hand_vector(1.0, 4.0) + 1e-9).all()
        if trajectory.at_target:  # what lets the smoother skip the rest of a catch-up: never before arrival
            np.testing.assert_allclose(trajectory.position, target, rtol=0.0, atol=1e-9)
        previous = trajectory.position
    assert trajectory.at_target
    np.testing.assert_allclose(trajectory.position, target, atol=1e-9)
    np.testing.assert_allclose(trajectory.velocity, 0.0, atol=1e-9)


def test_synchronized_joints_arrive_together_independent_ones_do_not():
    def arrival_steps(synchronized: bool) -> np.ndarray:
        trajectory = _trajectory(synchronized)
        target = np.full(ACTION_DIM, 0.05)
        target[0] = 1.0  # one far joint
        trajectory.set_target(target)
        arrived = np.full(ACTION_DIM, -1)
        for k in range(int(5 * RATE)):
            trajectory.step()
            arrived[(arrived < 0) & (np.abs(trajectory.position - target) < 1e-6)] = k
        return arrived

    independent, together = arrival_steps(False), arrival_steps(True)
    assert independent[1] < independent[0] / 2  # a near joint does not wait for the far one
    assert together.max() - together.min() <= 0.02 * together.max()  # every joint within 2 % of the far one


def test_reset_stops_at_rest_where_asked():
    trajectory = _trajectory(False)
    trajectory.set_target(np.ones(ACTION_DIM))
    for _ in range(20):
        trajectory.step()
    assert np.abs(trajectory.velocity).max() > 0
    trajectory.reset(np.full(ACTION_DIM, 0.2))
    assert trajectory.step()
    np.testing.assert_array_equal(trajectory.position, np.full(ACTION_DIM, 0.2))
    np.testing.assert_array_equal(trajectory.velocity, np.zeros(ACTION_DIM))


def test_a_synchronised_plan_ruckig_cannot_make_falls_back_to_one_cycle_per_joint():
    """A state the bridge's approach met in a soak: Ruckig's synchronised plan raised and the bridge held the
    robot. The cycle is planned per joint instead (within the limits) and the next tries synchronised again."""
    case = json.loads((Path(__file__).parent / "data" / "ruckig_phase_sync_failure.json").read_text())
    limits = [np.array(case[key]) for key in ("max_velocity", "max_acceleration", "max_jerk")]
    trajectory = ActionTrajectory(RATE, *limits, start=np.array(case["current_position"]), synchronized=True)
    trajectory._input.current_velocity = case["current_velocity"]
    trajectory._input.current_acceleration = case["current_acceleration"]
    trajectory.set_target(np.array(case["target_position"]))
    before = trajectory.position
    assert trajectory.step() and trajectory.unsynchronized_steps == 1
    assert (np.abs(trajectory.velocity) <= limits[0] + 1e-9).all()
    assert (np.abs(trajectory.position - before) * RATE <= limits[0] + 1e-6).all()
    for _ in range(int(10 * RATE)):
        assert trajectory.step()
    assert trajectory.at_target and trajectory.unsynchronized_steps < 5
    np.testing.assert_allclose(trajectory.position, case["target_position"], atol=1e-9)


def test_no_other_module_drives_ruckig():
    """The smoother (rynn_retarget) and the safe approach (rynn_robot_bridge) both go through
    ActionTrajectory; a second Ruckig wrapper would let their motion rules drift apart."""
    users = sorted(str(path.relative_to(SOURCES)) for path in SOURCES.rglob("*.py")
                   if "/test/" not in str(path) and ("from ruckig" in path.read_text() or "import ruckig" in path.read_text()))
    assert users == ["rynn_common/rynn_common/action_trajectory.py"], users
