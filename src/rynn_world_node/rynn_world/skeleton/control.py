"""The control frame: one operator skeleton sample -> the image the world model is conditioned on.

The one path from a ``BimanualSkeleton`` (live from the retarget node, or read back from an
episode bag) to the rendered control frame: the live node, the training and evaluation readers and
the episode tests all call ``ControlSample.from_message`` and ``render_control``, so the model is
trained on exactly the frames it gets live (hands and the forearm bars from the robot's elbows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rynn_common.skeleton_arrays import bimanual_skeleton_to_arrays

from .renderer import SkeletonRenderer
from .topology import NUM_HAND_JOINTS, WRIST


@dataclass(frozen=True)
class ControlSample:
    """One skeleton sample in the robot camera's optical frame [m]."""

    joints: np.ndarray  # (2, 21, 3) [left, right]; NaN = missing joint
    valid: np.ndarray  # (2,) bool per hand
    elbows: np.ndarray  # (2, 3) robot elbows; NaN = unknown (no forearm bar)

    @classmethod
    def from_message(cls, msg) -> "ControlSample":
        """From a BimanualSkeleton, an rclpy message or one a bag reader deserialized."""
        arrays = bimanual_skeleton_to_arrays(msg)
        return cls(arrays["joints"], arrays["valid"], arrays["elbows"])

    @classmethod
    def from_joints(cls, joints) -> "ControlSample":
        """Both hands valid, no elbows (synthetic input in tests and benchmarks)."""
        joints = np.asarray(joints, dtype=np.float64)
        if joints.shape != (2, NUM_HAND_JOINTS, 3):
            raise ValueError(f"joints must be (2, {NUM_HAND_JOINTS}, 3), got {joints.shape}")
        return cls(joints, np.ones(2, dtype=bool), np.full((2, 3), np.nan))


def render_control(renderer: SkeletonRenderer, joints, valid, elbows=None, out: np.ndarray | None = None) -> np.ndarray:
    """Control frame(s): joints (T, 2, 21, 3) or (2, 21, 3), valid per hand or per joint, elbows
    (T, 2, 3) or (2, 3) with NaN where unknown (None: no forearm bars, e.g. human video)."""
    joints = np.asarray(joints, dtype=np.float64)
    forearms = None
    if elbows is not None:
        forearms = np.stack([np.asarray(elbows, dtype=np.float64), joints[..., WRIST, :]], axis=-2)  # [elbow, wrist]
    return renderer.render(joints, forearms=forearms, valid=valid, out=out)


def render_samples(renderer: SkeletonRenderer, samples: list[ControlSample]) -> np.ndarray:
    """(T, H, W, 3) control frames of a sequence of samples (a bag's skeleton stream)."""
    return render_control(renderer, np.stack([s.joints for s in samples]), np.stack([s.valid for s in samples]),
                          np.stack([s.elbows for s in samples]))
