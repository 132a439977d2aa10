"""A parametric human hand producing 21 MediaPipe keypoints (hand frame, metres).

Adult proportions; finger curl and thumb opposition are the only inputs, so
scripted motions can say "grasp" or "pinch" and tests know what to expect.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Right hand. Knuckle (MCP) positions and phalanx lengths (proximal, middle, distal).
FINGER_MCP = {
    "index": (0.0, 0.024, 0.092),
    "middle": (0.0, 0.003, 0.096),
    "ring": (0.0, -0.016, 0.090),
    "little": (0.0, -0.033, 0.080),
}
FINGER_BONES = {
    "index": (0.042, 0.025, 0.021),
    "middle": (0.046, 0.028, 0.023),
    "ring": (0.043, 0.027, 0.022),
    "little": (0.034, 0.021, 0.019),
}
FINGER_SPLAY = {"index": 0.12, "middle": 0.0, "ring": -0.1, "little": -0.2}  # rad about x
THUMB_CMC = np.array([0.012, 0.020, 0.028])
THUMB_BONES = (0.042, 0.032, 0.027)  # metacarpal, proximal, distal
THUMB_OPEN_DIRECTION = np.array([0.25, 0.72, 0.65])


@dataclass(frozen=True)
class HandPose:
    """0 = open flat hand; 1 = full fist / full opposition."""

    finger_curl: tuple = (0.0, 0.0, 0.0, 0.0)  # index, middle, ring, little
    thumb_flex: float = 0.0
    thumb_opposition: float = 0.0


def _rot(axis: np.ndarray, angle: float) -> np.ndarray:
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)


def keypoints(pose: HandPose, side: str) -> np.ndarray:
    """(21, 3) MediaPipe keypoints; the left hand is the mirror image in y."""
    points = np.zeros((21, 3))
    flex_axis = np.array([0.0, 1.0, 0.0])  # rotating +z towards +x (the palm side)
    for index, name in enumerate(FINGER_MCP):
        curl = float(np.clip(pose.finger_curl[index], 0.0, 1.0))
        joint_angles = (1.45 * curl, 1.6 * curl, 1.0 * curl)
        splay = _rot(np.array([1.0, 0.0, 0.0]), -FINGER_SPLAY[name] * (1.0 - 0.7 * curl))
        position = np.array(FINGER_MCP[name])
        base = 5 + 4 * index
        points[base] = position
        rotation = splay
        for bone, (length, angle) in enumerate(zip(FINGER_BONES[name], joint_angles)):
            rotation = rotation @ _rot(flex_axis, angle)
            position = position + rotation @ np.array([0.0, 0.0, length])
            points[base + 1 + bone] = position
    opposition = _rot(np.array([0.0, 0.0, 1.0]), -1.7 * np.clip(pose.thumb_opposition, 0.0, 1.0))
    direction = opposition @ (THUMB_OPEN_DIRECTION / np.linalg.norm(THUMB_OPEN_DIRECTION))
    bend_axis = np.cross(direction, np.array([1.0, 0.0, 0.0]))
    flex = float(np.clip(pose.thumb_flex, 0.0, 1.0))
    position = THUMB_CMC.copy()
    points[1] = position
    for bone, (length, angle) in enumerate(zip(THUMB_BONES, (0.2 * flex, 0.45 * flex, 0.6 * flex))):
        direction = _rot(bend_axis, angle) @ direction
        position = position + length * direction
        points[2 + bone] = position
    if side == "left":
        points[:, 1] *= -1.0
    return points


def grasp_pose(closure: float) -> HandPose:
    """Power grasp: all fingers curl together, the thumb wraps over them."""
    c = float(np.clip(closure, 0.0, 1.0))
    return HandPose(finger_curl=(c, c, c, c), thumb_flex=0.5 * c, thumb_opposition=0.7 * c)


def pinch_pose(closure: float) -> HandPose:
    """Thumb-index pinch; the other fingers stay relaxed."""
    c = float(np.clip(closure, 0.0, 1.0))
    return HandPose(finger_curl=(0.6 * c, 0.15 * c, 0.1 * c, 0.1 * c), thumb_flex=0.0, thumb_opposition=0.7 * c)


def tripod_pose(closure: float) -> HandPose:
    """Thumb against index and middle together (how a knob is lifted): three contacts, so the held
    object cannot swing about the line between two fingertips as it does in a pinch."""
    c = float(np.clip(closure, 0.0, 1.0))
    return HandPose(finger_curl=(0.6 * c, 0.6 * c, 0.1 * c, 0.1 * c), thumb_flex=0.0, thumb_opposition=0.7 * c)
