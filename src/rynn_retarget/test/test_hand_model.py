"""The parametric hand's closed-form keypoints equal composing its joint rotations one by one."""

import numpy as np

from rynn_retarget.operator.hand_model import (
    FINGER_BONES,
    FINGER_MCP,
    FINGER_SPLAY,
    THUMB_BONES,
    THUMB_CMC,
    THUMB_OPEN_DIRECTION,
    HandPose,
    keypoints,
)


def rotation(axis, angle):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)


def keypoints_by_composition(pose: HandPose, side: str) -> np.ndarray:
    """Bone by bone: each finger joint bends about y after the splay about x; the thumb bends about
    the normal of its opening direction and x."""
    points = np.zeros((21, 3))
    for index, name in enumerate(FINGER_MCP):
        curl = np.clip(pose.finger_curl[index], 0.0, 1.0)
        frame = rotation([1, 0, 0], -FINGER_SPLAY[name] * (1.0 - 0.7 * curl))
        position = np.array(FINGER_MCP[name])
        points[5 + 4 * index] = position
        for bone, (length, gain) in enumerate(zip(FINGER_BONES[name], (1.45, 1.6, 1.0))):
            frame = frame @ rotation([0, 1, 0], gain * curl)
            position = position + frame @ np.array([0.0, 0.0, length])
            points[6 + 4 * index + bone] = position
    direction = rotation([0, 0, 1], -1.7 * np.clip(pose.thumb_opposition, 0, 1)) @ (
        THUMB_OPEN_DIRECTION / np.linalg.norm(THUMB_OPEN_DIRECTION))
    axis = np.cross(direction, [1.0, 0.0, 0.0])
    position = THUMB_CMC.copy()
    points[1] = position
    for bone, (length, gain) in enumerate(zip(THUMB_BONES, (0.2, 0.45, 0.6))):
        direction = rotation(axis, gain * np.clip(pose.thumb_flex, 0, 1)) @ direction
        position = position + length * direction
        points[2 + bone] = position
    if side == "left":
        points[:, 1] *= -1
    return points


def test_keypoints_equal_the_bone_by_bone_composition_for_random_poses():
    rng = np.random.default_rng(3)
    for _ in range(300):
        pose = HandPose(tuple(rng.uniform(-0.3, 1.3, 4)), rng.uniform(-0.3, 1.3), rng.uniform(-0.3, 1.3))
        for side in ("left", "right"):
            np.testing.assert_allclose(keypoints(pose, side), keypoints_by_composition(pose, side), atol=1e-12)


def test_bones_keep_their_lengths_when_the_hand_closes():
    closed = keypoints(HandPose((1.0, 1.0, 1.0, 1.0), 1.0, 1.0), "right")
    for index, name in enumerate(FINGER_MCP):
        chain = closed[5 + 4 * index: 9 + 4 * index]
        np.testing.assert_allclose(np.linalg.norm(np.diff(chain, axis=0), axis=1), FINGER_BONES[name], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(np.diff(closed[1:5], axis=0), axis=1), THUMB_BONES, atol=1e-12)
    open_tip = keypoints(HandPose(), "right")[8]
    assert abs(open_tip[0]) < 1e-12 and closed[8, 0] > 0.02  # a curling index tip moves to the palm side (+x)
