"""Where the operator's trackers drive the robot, for the console's 3D view (ROS-free).

The trackers arrive in the operator's own room frame (``operator_world``), a metre or more from
the robot and not scaled like it. What moves the robot is their image through the calibration:
each wrist tracker becomes its arm's IK target, T_target = T_base . Scale_s(T_chest^-1 . T_wrist) .
T_ee, and each upper-arm tracker the elbow reference of the null-space prior, both in base_link.
The view draws those, computed by the retarget pipeline itself (``RetargetPipeline.arm_target``,
the function the retarget node solves for) with the retarget node's configuration: its package's
retarget.yaml and, when set and present, its ``calibration_file``. A calibration the console asks
for is mirrored here on the newest tracker sample with ``RetargetPipeline.calibrate``, the node's own.
"""

from __future__ import annotations

import numpy as np
from transforms3d.quaternions import mat2quat, quat2mat

from rynn_common.action_layout import SIDES
from rynn_common.config_io import load_config
from rynn_common.config_paths import find_config
from rynn_retarget.config import RetargetNodeSettings
from rynn_retarget.kinematics.transforms import pose
from rynn_retarget.operator.frame import TRACKER_NAMES, OperatorFrame
from rynn_retarget.pipeline import RetargetPipeline

IDENTITY_WXYZ = np.array([1.0, 0.0, 0.0, 0.0])


def target_label(side: str) -> str:
    return f"{side}_ik_target"


def elbow_label(side: str) -> str:
    return f"{side}_elbow_reference"


class TrackerTargets:
    """Tracker poses (frame id -> (xyz, quaternion wxyz) in the operator's world frame) -> the arm
    IK targets and elbow references (label -> (xyz, wxyz) in base_link)."""

    def __init__(self, settings: RetargetNodeSettings):
        self.pipeline = RetargetPipeline(settings)
        self.world_frame = settings.frames.world
        self.tracker_by_frame = {getattr(settings.frames, name): name for name in TRACKER_NAMES}

    @classmethod
    def from_retarget_config(cls) -> "TrackerTargets":
        """With the configuration the retarget node starts with by default (its package's file)."""
        return cls(load_config(RetargetNodeSettings, find_config("rynn_retarget", "retarget.yaml")))

    def _matrices(self, trackers: dict) -> dict[str, np.ndarray]:
        matrices = {}
        for frame_id, (xyz, wxyz) in trackers.items():
            name = self.tracker_by_frame.get(frame_id)
            if name is not None and np.all(np.isfinite(xyz)) and np.all(np.isfinite(wxyz)):
                matrices[name] = pose(quat2mat(wxyz), xyz)
        return matrices

    def targets(self, trackers: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each arm's IK target and elbow reference, for the arms whose chest, wrist and upper-arm
        trackers are all in ``trackers``."""
        matrices = self._matrices(trackers)
        shown = {}
        for side in SIDES:
            if not {"chest", f"{side}_wrist", f"{side}_upper_arm"} <= matrices.keys():
                continue
            target, elbow = self.pipeline.arm_target(side, matrices)
            shown[target_label(side)] = (target[:3, 3].copy(), mat2quat(target[:3, :3]))
            shown[elbow_label(side)] = (np.asarray(elbow, dtype=np.float64), IDENTITY_WXYZ)
        return shown

    def calibrate(self, trackers: dict) -> bool:
        """Take this tracker sample as the operator's neutral pose, as the retarget node's
        ``~/calibrate`` does with its newest sample; False when a tracker is missing."""
        matrices = self._matrices(trackers)
        if not set(TRACKER_NAMES) <= matrices.keys():
            return False
        self.pipeline.calibrate(OperatorFrame(stamp=0.0, trackers=matrices))
        return True
