"""A BimanualSkeleton's fields from arrays and back into arrays, ROS-free.

The field rules (``hand_skeleton_fields``, ``elbow_fields``) are what every writer puts in a skeleton:
the live nodes (through ``ros_conversions``) and the episode bag writer, whose rosbags messages need no
ROS install. Reading is attribute access only, so the same function reads a live rclpy message and
one deserialized from a bag by rosbags: the live world-model node, the retarget node and the bag readers
(training, export) decode a skeleton one way.
"""

from __future__ import annotations

import numpy as np

NUM_HAND_JOINTS = 21
SIDES = ("left", "right")


def hand_skeleton_fields(joints, confidence=None, valid: bool = True) -> tuple[np.ndarray, np.ndarray, bool]:
    """What a HandSkeleton of these inputs carries: (21, 3) float64 points (0 where not finite), (21,)
    float32 confidence in [0, 1] (0 there), valid (False without a finite joint). The glove node hands
    these to the retarget node in-process, make_hand_skeleton writes them into the message and the
    episode bag writer into its rosbags one."""
    pts = np.asarray(joints, dtype=np.float64)
    if pts.shape != (NUM_HAND_JOINTS, 3):
        raise ValueError(f"a hand skeleton needs (21, 3) joint positions, got {pts.shape}")
    conf = (
        np.ones(NUM_HAND_JOINTS, np.float32)
        if confidence is None
        else np.asarray(confidence, dtype=np.float32).copy()
    )
    if conf.shape != (NUM_HAND_JOINTS,):
        raise ValueError(f"confidence needs 21 values, got shape {conf.shape}")
    finite = np.isfinite(pts).all(axis=1)
    conf[~finite] = 0.0
    conf = np.clip(np.nan_to_num(conf, nan=0.0), 0.0, 1.0)
    pts = np.where(finite[:, None], pts, 0.0)
    return pts, conf, bool(valid and finite.any())


def elbow_fields(values) -> tuple[np.ndarray, bool]:
    """What an optional elbow carries: its (x, y, z) and valid; zeros and False when absent or not finite."""
    if values is None:
        return np.zeros(3), False
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (3,) or not np.isfinite(arr).all():
        return np.zeros(3), False
    return arr, True


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
