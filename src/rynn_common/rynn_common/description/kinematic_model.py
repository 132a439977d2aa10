"""The robot's Pinocchio model, for every package that computes its kinematics.

The retargeting cuts its arm and hand chains out of it and places the head camera with it; the
robot-state publisher computes the link transforms with it. Joint limits are not taken from it (``joint_limits`` is their one reader).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin


def load_model(urdf_path: str | Path) -> pin.Model:
    """Kinematic model only: meshes are neither needed nor loaded."""
    return pin.buildModelFromUrdf(str(urdf_path))


def placement_views(data: pin.Data, frames) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Rotation (3x3) and translation (3) of each of ``frames`` in ``data.oMf``, as numpy views of Pinocchio's own
    storage (eigenpy hands out references), which every forward kinematics rewrites in place: read together in one
    ``np.array`` each call instead of an SE3 object fetched per frame, which cost ~1 us each in hot loops. Valid
    while ``data`` lives and is not replaced: keep them beside it."""
    placements = [data.oMf[frame] for frame in frames]
    return [p.rotation for p in placements], [p.translation for p in placements]


def frame_pose(model: pin.Model, name: str, q: np.ndarray | None = None) -> np.ndarray:
    """4x4 pose of frame ``name`` in the model root at ``q`` (default: neutral)."""
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model) if q is None else q)
    return data.oMf[frame_id(model, name)].homogeneous.copy()


def frame_id(model: pin.Model, name: str) -> int:
    """``ValueError`` naming the frame when the description lacks it."""
    if not model.existFrame(name):
        raise ValueError(f"the robot description has no frame {name!r}")
    return model.getFrameId(name)
