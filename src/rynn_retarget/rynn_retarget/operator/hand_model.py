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


_MCP = np.array(list(FINGER_MCP.values()))  # (4, 3), index .. little
_BONES = np.array(list(FINGER_BONES.values()))  # (4, 3) proximal, middle, distal
_SPLAY = np.array(list(FINGER_SPLAY.values()))
_FLEX_GAINS = np.array([1.45, 1.6, 1.0])  # joint angle per unit curl, MCP .. DIP
_THUMB_GAINS = np.array([0.2, 0.45, 0.6])  # bone bend per unit flex
_THUMB_BONES = np.array(THUMB_BONES)
_THUMB_OPEN = THUMB_OPEN_DIRECTION / np.linalg.norm(THUMB_OPEN_DIRECTION)


def _unit_clip(value: float) -> float:
    return min(max(float(value), 0.0), 1.0)


def keypoints(pose: HandPose, side: str) -> np.ndarray:
    """(21, 3) MediaPipe keypoints; the left hand is the mirror image in y.

    A finger is a planar chain: the splay rotates it about the palm's x axis by phi, then its joints
    bend it about y by cumulative angles theta, so bone k points along Rx(phi) (sin theta_k, 0,
    cos theta_k). The thumb bends about the axis normal to its opening direction d and x, so bone k
    points along d cos(Phi_k) + (axis x d) sin(Phi_k). Closed forms, as arrays: a synthetic operator
    computes a changing hand 120 times a second per glove."""
    points = np.zeros((21, 3))
    curl = np.clip(np.asarray(pose.finger_curl, dtype=np.float64), 0.0, 1.0)
    theta = np.cumsum(curl[:, None] * _FLEX_GAINS, axis=1)  # (4 fingers, 3 joints)
    phi = -_SPLAY * (1.0 - 0.7 * curl)
    along = _BONES * np.cos(theta)
    bones = np.stack([_BONES * np.sin(theta), -along * np.sin(phi)[:, None], along * np.cos(phi)[:, None]], axis=-1)
    chains = np.concatenate([_MCP[:, None], _MCP[:, None] + np.cumsum(bones, axis=1)], axis=1)  # (4, 4, 3)
    points[5:] = chains.reshape(16, 3)
    angle = -1.7 * _unit_clip(pose.thumb_opposition)
    c, s = np.cos(angle), np.sin(angle)
    direction = np.array([c * _THUMB_OPEN[0] - s * _THUMB_OPEN[1], s * _THUMB_OPEN[0] + c * _THUMB_OPEN[1], _THUMB_OPEN[2]])
    axis = np.array([0.0, direction[2], -direction[1]])  # direction x (1, 0, 0)
    axis /= np.linalg.norm(axis)
    bend = np.cumsum(_THUMB_GAINS * _unit_clip(pose.thumb_flex))
    directions = np.cos(bend)[:, None] * direction + np.sin(bend)[:, None] * np.cross(axis, direction)
    points[1] = THUMB_CMC
    points[2:5] = THUMB_CMC + np.cumsum(_THUMB_BONES[:, None] * directions, axis=0)
    if side == "left":
        points[:, 1] *= -1.0
    return points


def grasp_pose(closure: float) -> HandPose:
    """Power grasp: all fingers curl together, the thumb wraps over them."""
    c = _unit_clip(closure)
    return HandPose(finger_curl=(c, c, c, c), thumb_flex=0.5 * c, thumb_opposition=0.7 * c)


def pinch_pose(closure: float) -> HandPose:
    """Thumb-index pinch; the other fingers stay relaxed."""
    c = _unit_clip(closure)
    return HandPose(finger_curl=(0.6 * c, 0.15 * c, 0.1 * c, 0.1 * c), thumb_flex=0.0, thumb_opposition=0.7 * c)


def tripod_pose(closure: float) -> HandPose:
    """Thumb against index and middle together (how a knob is lifted): three contacts, so the held
    object cannot swing about the line between two fingertips as it does in a pinch."""
    c = _unit_clip(closure)
    return HandPose(finger_curl=(0.6 * c, 0.6 * c, 0.1 * c, 0.1 * c), thumb_flex=0.0, thumb_opposition=0.7 * c)
