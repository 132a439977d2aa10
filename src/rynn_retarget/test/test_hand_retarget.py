from pathlib import Path

import numpy as np
import pytest

from rynn_retarget.kinematics.hand_retarget import DISTAL_JOINT_INDICES, TIPS, HandRetargetConfig, HandRetargeter
from rynn_retarget.kinematics.robot_model import build_hand_chain, load_model
from rynn_retarget.operator.hand_model import grasp_pose, keypoints, pinch_pose
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig

WUJI_RIGHT = Path("/work/shared/robots/wuji_hand_description/urdf/right.urdf")


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
def test_project_hand_reproduces_its_own_skeletons(robot_model, side):
    check_retargets_robot_skeletons(build_hand_chain(robot_model, side))


@pytest.mark.skipif(not WUJI_RIGHT.exists(), reason="vendor WUJI description not present")
def test_real_wuji_urdf_reproduces_its_own_skeletons():
    check_retargets_robot_skeletons(build_hand_chain(load_model(WUJI_RIGHT), "right"))


@pytest.mark.parametrize("side", ["left", "right"])
def test_hand_closes_when_the_human_hand_closes(robot_model, side):
    chain = build_hand_chain(robot_model, side)
    retargeter = HandRetargeter(chain)
    flexion = {}
    for closure in (0.0, 1.0):
        retargeter.reset()
        for _ in range(30):
            q = retargeter.retarget(keypoints(grasp_pose(closure), side))
        flexion[closure] = q[[4, 6, 8, 10, 12, 14, 16, 18]].mean()  # fingers 2-5, joints 1 and 3
        assert fingertip_error(chain, q, keypoints(grasp_pose(closure), side)).max() < 0.035
    assert flexion[1.0] > flexion[0.0] + 0.8


def test_pinch_brings_thumb_and_index_together(robot_model):
    chain = build_hand_chain(robot_model, "right")
    retargeter = HandRetargeter(chain)
    for _ in range(30):
        q = retargeter.retarget(keypoints(pinch_pose(1.0), "right"))
    points = chain.keypoints(q)
    assert np.linalg.norm(points[4] - points[8]) < 0.025


def test_ema_filters_a_step(robot_model):
    chain = build_hand_chain(robot_model, "right")
    retargeter = HandRetargeter(chain, HandRetargetConfig(ema_alpha=0.5))
    closed = keypoints(grasp_pose(1.0), "right")
    first = retargeter.retarget(closed)
    raw = retargeter._solution
    assert np.allclose(first, 0.5 * raw + 0.5 * np.clip(np.zeros(20), chain.lower, chain.upper), atol=1e-9)


def closing_sequence():
    """A human hand closing from open to a full fist over one second at 120 Hz."""
    return [keypoints(grasp_pose(closure), "right") for closure in np.linspace(0.0, 1.0, 120)]


def check_closing_hand_never_bends_back(chain):
    retargeter = HandRetargeter(chain)
    for skeleton in closing_sequence():
        q = retargeter.retarget(skeleton)
        distal = q[list(DISTAL_JOINT_INDICES)]
        assert distal.min() > -0.2, f"distal joint bent back to {distal.min():.2f} rad at closure"
        assert fingertip_error(chain, q, skeleton).max() < 0.035


def test_project_hand_closes_without_bending_a_finger_back(robot_model):
    check_closing_hand_never_bends_back(build_hand_chain(robot_model, "right"))


@pytest.mark.skipif(not WUJI_RIGHT.exists(), reason="vendor WUJI description not present")
def test_wuji_hand_closes_without_bending_a_finger_back():
    check_closing_hand_never_bends_back(build_hand_chain(load_model(WUJI_RIGHT), "right"))


def test_synthetic_operator_fingertips_within_9mm_p95_and_never_bent_back(robot_model):
    """The operator's scripted grasps and pinches: fingertip p95 < 9 mm (was 17.6), no finger bent back."""
    chain = build_hand_chain(robot_model, "right")
    retargeter = HandRetargeter(chain, HandRetargetConfig(ema_alpha=1.0))
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=0))
    errors, distal = [], []
    for index in range(0, 120 * 10, 2):
        skeleton = operator.frame_at(index / 120).hand("right").points
        q = retargeter.retarget(skeleton)
        errors.append(fingertip_error(chain, q, skeleton))
        distal.append(q[list(DISTAL_JOINT_INDICES)].min())
    assert np.percentile(errors, 95) < 0.009
    assert min(distal) > -0.2
