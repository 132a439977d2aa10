import numpy as np
import pytest

from rynn_retarget.kinematics.hand_retarget import DISTAL_JOINT_INDICES, TIPS, HandRetargetConfig, HandRetargeter, StampedEma
from rynn_retarget.kinematics.robot_model import build_hand_chain
from rynn_retarget.operator.hand_model import grasp_pose, keypoints, pinch_pose
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig


def fingertip_error(chain, q, skeleton):
    return np.linalg.norm(chain.keypoints(q)[list(TIPS)] - skeleton[list(TIPS)], axis=1)


def check_retargets_robot_skeletons(chain):
    """Skeletons made by the hand's own FK are reproduced (vectors are exactly reachable)."""
    retargeter = HandRetargeter(chain, HandRetargetConfig(iterations=40, ema_alpha=1.0))
    rng = np.random.default_rng(3)
    mid = (chain.lower + chain.upper) / 2
    errors = []
    for _ in range(10):
        q_true = np.clip(mid + rng.uniform(-0.35, 0.35, 20), chain.lower, chain.upper)
        retargeter.reset()
        q = retargeter.solve(chain.keypoints(q_true))
        assert np.all(q >= chain.lower - 1e-12) and np.all(q <= chain.upper + 1e-12)
        errors.append(fingertip_error(chain, q, chain.keypoints(q_true)).max())
    assert np.median(errors) < 0.003


@pytest.mark.parametrize("side", ["left", "right"])
def test_project_hand_reproduces_its_own_skeletons(robot_model, robot_limits, side):
    check_retargets_robot_skeletons(build_hand_chain(robot_model, side, robot_limits))


def test_real_wuji_urdf_reproduces_its_own_skeletons(wuji_right_hand):
    check_retargets_robot_skeletons(wuji_right_hand)


@pytest.mark.parametrize("side", ["left", "right"])
def test_hand_closes_when_the_human_hand_closes(robot_model, robot_limits, side):
    chain = build_hand_chain(robot_model, side, robot_limits)
    retargeter = HandRetargeter(chain)
    flexion = {}
    for closure in (0.0, 1.0):
        retargeter.reset()
        for index in range(30):
            q = retargeter.retarget(keypoints(grasp_pose(closure), side), index / 60)
        flexion[closure] = q[[4, 6, 8, 10, 12, 14, 16, 18]].mean()  # fingers 2-5, joints 1 and 3
        assert fingertip_error(chain, q, keypoints(grasp_pose(closure), side)).max() < 0.035
    assert flexion[1.0] > flexion[0.0] + 0.8


def test_pinch_brings_thumb_and_index_together(robot_model, robot_limits):
    chain = build_hand_chain(robot_model, "right", robot_limits)
    retargeter = HandRetargeter(chain)
    for index in range(30):
        q = retargeter.retarget(keypoints(pinch_pose(1.0), "right"), index / 60)
    points = chain.keypoints(q)
    assert np.linalg.norm(points[4] - points[8]) < 0.025


def sampled_step(rate_hz: float, alpha: float = 0.6, until_s: float = 0.3) -> dict[int, float]:
    """A unit step just after t = 0, sampled at ``rate_hz`` from t = -0.1 s, filtered; the output
    at each 50 ms instant (key: ms). (A sample stands for the time since the previous one, so the
    step lies in the interval both rates see end at the same sample.)"""
    ema = StampedEma(alpha, reference_rate_hz=60.0)
    outputs = {}
    for index in range(round(-0.1 * rate_hz), round(until_s * rate_hz) + 1):
        t = index / rate_hz
        value = ema.update(np.array([1.0 if t > 0.0 else 0.0]), t)[0]
        if round(1000 * t) % 50 == 0:
            outputs[round(1000 * t)] = value
    return outputs


def test_filter_lag_is_in_seconds_not_samples():
    """A step sampled at 60 Hz and at 20 Hz (a starved solver) reads the same at the same time,
    1 - 0.4^(60 t); a per-call filter read 1 - 0.4^(20 t) at 20 Hz (0.60 instead of 0.94 at 50 ms)."""
    at_60, at_20 = sampled_step(60.0), sampled_step(20.0)
    assert at_60.keys() == at_20.keys() and len(at_60) == 9
    for ms, value in at_60.items():
        expected = 0.0 if ms < 0 else 1.0 - 0.4 ** (60 * ms / 1000)
        assert value == pytest.approx(expected, abs=1e-12)
        assert at_20[ms] == pytest.approx(expected, abs=1e-12), f"{ms} ms"


def test_filter_first_sample_passes_and_untimed_samples_get_no_weight():
    ema = StampedEma(0.6, reference_rate_hz=60.0)
    assert ema.update(np.array([2.0]), 10.0)[0] == 2.0  # first sample: nothing to lag behind
    assert ema.update(np.array([5.0]), 10.0)[0] == 2.0  # same stamp: no time passed, held
    assert ema.update(np.array([5.0]), 9.0)[0] == 2.0  # older stamp: held
    assert ema.update(np.array([5.0]), float("nan"))[0] == 2.0  # no stamp: held
    assert ema.stamp == 10.0
    assert ema.update(np.array([5.0]), 10.0 + 1 / 60)[0] == pytest.approx(2.0 + 0.6 * 3.0)
    assert ema.update(np.array([0.0]), 12.0)[0] == pytest.approx(0.0, abs=1e-12)  # 2 s later: caught up
    ema.reset()
    assert ema.update(np.array([7.0]), 0.0)[0] == 7.0


def test_hand_output_is_the_solutions_filtered_over_their_stamps(robot_model, robot_limits):
    """First skeleton: its solution as is; one 50 ms later weighs 1 - 0.4^3 (at 60 Hz, 0.6)."""
    chain = build_hand_chain(robot_model, "right", robot_limits)
    retargeter = HandRetargeter(chain, HandRetargetConfig(ema_alpha=0.6, ema_reference_rate_hz=60.0))
    first = retargeter.retarget(keypoints(grasp_pose(0.0), "right"), 5.0)
    assert np.array_equal(first, retargeter._solution)
    second = retargeter.retarget(keypoints(grasp_pose(1.0), "right"), 5.05)
    assert np.abs(retargeter._solution - first).max() > 0.3
    weight = 1.0 - 0.4**3
    assert np.allclose(second, weight * retargeter._solution + (1.0 - weight) * first, atol=1e-9)
    retargeter.reset()
    assert np.array_equal(retargeter.retarget(keypoints(grasp_pose(1.0), "right"), 6.0), retargeter._solution)


def closing_sequence():
    """A human hand closing from open to a full fist over one second at 120 Hz."""
    return [keypoints(grasp_pose(closure), "right") for closure in np.linspace(0.0, 1.0, 120)]


def check_closing_hand_never_bends_back(chain):
    retargeter = HandRetargeter(chain)
    for index, skeleton in enumerate(closing_sequence()):
        q = retargeter.retarget(skeleton, index / 120)
        distal = q[list(DISTAL_JOINT_INDICES)]
        assert distal.min() > -0.2, f"distal joint bent back to {distal.min():.2f} rad at closure"
        assert fingertip_error(chain, q, skeleton).max() < 0.035


def test_project_hand_closes_without_bending_a_finger_back(robot_model, robot_limits):
    check_closing_hand_never_bends_back(build_hand_chain(robot_model, "right", robot_limits))


def test_wuji_hand_closes_without_bending_a_finger_back(wuji_right_hand):
    check_closing_hand_never_bends_back(wuji_right_hand)


def test_synthetic_operator_fingertips_within_9mm_p95_and_never_bent_back(robot_model, robot_limits):
    """The operator's scripted grasps and pinches: fingertip p95 < 9 mm (was 17.6), no finger bent back."""
    chain = build_hand_chain(robot_model, "right", robot_limits)
    retargeter = HandRetargeter(chain, HandRetargetConfig(ema_alpha=1.0))
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=0))
    errors, distal = [], []
    for index in range(0, 120 * 10, 2):
        skeleton = operator.frame_at(index / 120).hand("right").points
        q = retargeter.retarget(skeleton, index / 120)
        errors.append(fingertip_error(chain, q, skeleton))
        distal.append(q[list(DISTAL_JOINT_INDICES)].min())
    assert np.percentile(errors, 95) < 0.009
    assert min(distal) > -0.2
