"""The retargeter's configuration (this package's config/retarget.yaml), one typed tree.

Every stage keeps its own dataclass next to its code; this module only
composes them and adds what belongs to the whole pipeline (URDF choice,
neutral pose, tracker axis alignment, calibration).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rynn_common.config_io import load_config
from rynn_common.ros_names import CAMERA_FRAME, HANDS_TOPIC
from rynn_retarget.input_guard import InputGuardConfig
from rynn_retarget.kinematics.arm_ik import ArmIkConfig
from rynn_retarget.kinematics.calibration import Calibration, load_calibration
from rynn_retarget.kinematics.hand_retarget import HandRetargetConfig
from rynn_retarget.operator.frame import OperatorFrames
from rynn_retarget.smoothing import SmoothingConfig


@dataclass(frozen=True)
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
    calibration_file: str = ""  # if set and present, loaded instead of ``calibration``; ~/calibrate saves there

    def neutral_arm(self, side: str) -> np.ndarray:
        return np.asarray(self.neutral_arm_left if side == "left" else self.neutral_arm_right, dtype=np.float64)

    def resolved_calibration(self) -> Calibration:
        """The saved calibration when ``calibration_file`` exists (not yet captured: the inline one)."""
        if self.calibration_file and Path(self.calibration_file).expanduser().is_file():
            return load_calibration(Path(self.calibration_file).expanduser())
        return self.calibration


@dataclass(frozen=True)
class RetargetNodeSettings(RetargetConfig):
    """The retarget node: the pipeline's configuration plus what only the node needs (retarget.yaml
    holds both; every flat key is a parameter of the same dotted name)."""

    hands_topic: str = HANDS_TOPIC
    hands_timeout_s: float = 0.25
    status_rate_hz: float = 2.0
    # IK + hand retargeting cost ~5 ms of CPU a sample; solving every 120 Hz tracker sample took a
    # third of a core and 60 Hz took the world model's share on two cores (issue 12). The newest
    # sample is solved at most this often (<= 0: every sample); Ruckig still interpolates the 200 Hz
    # command, and 30 Hz stays above the world model's 16 FPS and the camera's 30 FPS.
    max_solve_rate_hz: float = 30.0
    # /rynn/command/joint_states (the commanded joints for viewers: the console's ghost robot, RViz) at
    # most this often (<= 0: with every 200 Hz command). A 54-name JointState at 200 Hz cost the
    # command thread more than the command itself; /rynn/action carries every command.
    command_state_rate_hz: float = 50.0
    frames: OperatorFrames = field(default_factory=OperatorFrames)


def load_retarget_config(path: str | Path) -> RetargetConfig:
    return load_config(RetargetConfig, path)
