"""HandChain.keypoints_and_jacobians (one joint Jacobian for all keypoints) against Pinocchio's
per-frame Jacobians and against finite differences of ``keypoints``."""

import numpy as np
import pinocchio as pin
import pytest

from rynn_retarget.kinematics.hand_retarget import HandRetargeter
from rynn_retarget.kinematics.robot_model import build_hand_chain, skew_matrices

ALL_KEYPOINTS = list(range(1, 21))


def per_frame_reference(chain, q, indices):
    """The former implementation: ``pin.getFrameJacobian`` for each keypoint frame."""
    pin.computeJointJacobians(chain.model, chain.data, q)
    pin.updateFramePlacements(chain.model, chain.data)
    palm = chain.data.oMf[chain.palm_frame]
    rotation_t = palm.rotation.T
    points = np.zeros((21, 3))
    jacobians = np.zeros((21, 3, chain.model.nv))
    for k in indices:
        frame = chain.keypoint_frames[k - 1]
        points[k] = rotation_t @ (chain.data.oMf[frame].translation - palm.translation)
        jacobian = pin.getFrameJacobian(chain.model, chain.data, frame, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        jacobians[k] = rotation_t @ jacobian[:3]
    return points, jacobians


def random_configurations(chain, count, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(chain.lower, chain.upper, size=(count, chain.model.nq))


def check_equals_per_frame_reference(chain):
    used = HandRetargeter(chain)._used  # the 15 keypoints the solver asks for
    for q in random_configurations(chain, 20, seed=1):
        for indices in (ALL_KEYPOINTS, used, [4, 12], []):
            points, jacobians = chain.keypoints_and_jacobians(q, indices)
            ref_points, ref_jacobians = per_frame_reference(chain, q, indices)
            np.testing.assert_allclose(points, ref_points, rtol=0, atol=1e-10)
            np.testing.assert_allclose(jacobians, ref_jacobians, rtol=0, atol=1e-10)
            unused = [k for k in range(21) if k not in indices]
            assert not points[unused].any() and not jacobians[unused].any()
        points, jacobians = chain.keypoints_and_jacobians(q, ALL_KEYPOINTS)
        assert np.abs(jacobians[ALL_KEYPOINTS]).max() > 0.01  # non-trivial Jacobians were compared


@pytest.mark.parametrize("side", ["left", "right"])
def test_keypoint_jacobians_equal_pinocchio_per_frame_jacobians(robot_model, robot_limits, side):
    check_equals_per_frame_reference(build_hand_chain(robot_model, side, robot_limits))


def test_real_wuji_urdf_keypoint_jacobians_equal_per_frame_jacobians(wuji_right_hand):
    check_equals_per_frame_reference(wuji_right_hand)


@pytest.mark.parametrize("side", ["left", "right"])
def test_keypoint_jacobians_match_finite_differences(robot_model, robot_limits, side):
    chain = build_hand_chain(robot_model, side, robot_limits)
    step = 1e-5
    for q in random_configurations(chain, 5, seed=2):
        points, jacobians = chain.keypoints_and_jacobians(q, ALL_KEYPOINTS)
        np.testing.assert_allclose(points, chain.keypoints(q), rtol=0, atol=1e-12)
        numeric = np.zeros_like(jacobians)
        for joint in range(chain.model.nv):
            offset = np.zeros(chain.model.nv)
            offset[joint] = step
            numeric[:, :, joint] = (chain.keypoints(q + offset) - chain.keypoints(q - offset)) / (2 * step)
        np.testing.assert_allclose(jacobians, numeric, rtol=0, atol=1e-6)


def test_tip_frames_move_with_their_finger_joints_only(robot_model, robot_limits):
    """The fixed tip-link frames take the support of their parent joint (finger joints 1-4)."""
    chain = build_hand_chain(robot_model, "right", robot_limits)
    _, jacobians = chain.keypoints_and_jacobians((chain.lower + chain.upper) / 2, ALL_KEYPOINTS)
    for finger in range(5):
        tip = 4 * finger + 4
        moving = np.flatnonzero(np.abs(jacobians[tip]).max(axis=0) > 1e-9)
        assert list(moving) == [4 * finger + j for j in range(4)]


def test_skew_matrices_are_cross_products():
    rng = np.random.default_rng(0)
    vectors, others = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    np.testing.assert_allclose((skew_matrices(vectors) @ others[:, :, None])[:, :, 0], np.cross(vectors, others))
