"""The retargeter's configuration (config/retarget.yaml), one typed tree.

Every stage keeps its own dataclass next to its code; this module only
composes them and adds what belongs to the whole pipeline (URDF choice,
neutral pose, tracker axis alignment, calibration).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rynn_common.config_io import from_dict, load_yaml
from rynn_common.ros_names import CAMERA_FRAME
from rynn_retarget.input_guard import InputGuardConfig
from rynn_retarget.kinematics.arm_ik import ArmIkConfig
from rynn_retarget.kinematics.calibration import Calibration, load_calibration
from rynn_retarget.kinematics.hand_retarget import HandRetargetConfig
from rynn_retarget.smoothing import SmoothingConfig


@dataclass
class RetargetConfig:
    urdf_path: str = ""  # empty: the packaged rynn_bimanual.urdf
    camera_frame: str = CAMERA_FRAME
    # Rotation from the chest-tracker axes to base_link axes (rotation part of T_base).
    base_rotation: list = field(default_factory=lambda: np.eye(3).tolist())
    neutral_arm_left: tuple = (-0.4, -0.05, 0.0, -1.5, -1.5, 0.0, 0.0)
    neutral_arm_right: tuple = (-0.4, 0.05, 0.0, -1.5, -1.5, 0.0, 0.0)
    arm_ik: ArmIkConfig = field(default_factory=ArmIkConfig)
    hand: HandRetargetConfig = field(default_factory=HandRetargetConfig)
    guard: InputGuardConfig = field(default_factory=InputGuardConfig)
    smoothing: SmoothingConfig = field(default_factory=SmoothingConfig)
    calibration: Calibration = field(default_factory=Calibration)
    calibration_file: str = ""  # if set, loaded instead of ``calibration``

    def neutral_arm(self, side: str) -> np.ndarray:
        return np.asarray(self.neutral_arm_left if side == "left" else self.neutral_arm_right, dtype=np.float64)

    def resolved_calibration(self) -> Calibration:
        if self.calibration_file:
            return load_calibration(Path(self.calibration_file).expanduser())
        return self.calibration


def load_retarget_config(path: str | Path) -> RetargetConfig:
    return from_dict(RetargetConfig, load_yaml(path))
