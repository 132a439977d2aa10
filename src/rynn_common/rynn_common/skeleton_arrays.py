"""Read a BimanualSkeleton into arrays, ROS-free.

Attribute access only, so the same function reads a live rclpy message and one
deserialized from a bag by rosbags: the live world-model node, the retarget
node and the bag readers (training, export) decode a skeleton one way.
"""

from __future__ import annotations

import numpy as np

NUM_HAND_JOINTS = 21
SIDES = ("left", "right")


def hand_skeleton_to_arrays(hand) -> tuple[np.ndarray, np.ndarray, bool]:
    """(21, 3) points with NaN where confidence is 0, (21,) confidence, valid."""
    points = np.array([[p.x, p.y, p.z] for p in hand.joints], dtype=np.float64).reshape(-1, 3)
    confidence = np.asarray(hand.confidence, dtype=np.float32)
    if points.shape != (NUM_HAND_JOINTS, 3) or confidence.shape != (NUM_HAND_JOINTS,):
        raise ValueError(f"a hand skeleton needs {NUM_HAND_JOINTS} joints and confidences, "
                         f"got {len(points)} and {confidence.size}")
    return hand_arrays(points, confidence, hand.valid)


def hand_arrays(points: np.ndarray, confidence: np.ndarray, valid: bool) -> tuple[np.ndarray, np.ndarray, bool]:
    """A hand's fields as the readers use them: NaN where the confidence is 0 (``points`` is changed)."""
    points[confidence <= 0.0] = np.nan
    return points, confidence, bool(valid)


def bimanual_arrays(hands) -> dict[str, np.ndarray]:
    """``bimanual_skeleton_to_arrays``'s dict from [left, right] (points, confidence, valid) already through
    ``hand_arrays``; elbows unknown (NaN)."""
    return {
        "joints": np.stack([h[0] for h in hands]),
        "confidence": np.stack([h[1] for h in hands]),
        "valid": np.array([h[2] for h in hands]),
        "elbows": np.full((2, 3), np.nan),
    }


def bimanual_skeleton_to_arrays(msg) -> dict[str, np.ndarray]:
    """joints (2, 21, 3) [left, right] with NaN for missing, confidence (2, 21),
    valid (2,), elbows (2, 3) with NaN where unknown."""
    arrays = bimanual_arrays([hand_skeleton_to_arrays(getattr(msg, side)) for side in SIDES])
    for i, side in enumerate(SIDES):
        if getattr(msg, f"{side}_elbow_valid"):
            p = getattr(msg, f"{side}_elbow")
            arrays["elbows"][i] = (p.x, p.y, p.z)
    return arrays
