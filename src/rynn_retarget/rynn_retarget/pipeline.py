"""Operator frame -> 54-D joint target + operator hand skeleton in the robot camera.

One ``step`` per operator sample: guard the input, map each arm through the
calibrated chain and solve IK (warm-started), retarget each hand, and place the
operator's skeleton at the commanded robot palm as seen by the head camera.
The smoother (``make_smoother``) then runs at its own fixed rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rynn_common.action_layout import ACTION_DIM, LEFT_ARM, LEFT_HAND, RIGHT_ARM, RIGHT_HAND, SIDES
from rynn_common.description import resolve_urdf_path
from rynn_common.description.joint_limits import joint_limits_from_urdf
from rynn_common.description.kinematic_model import frame_pose, load_model
from rynn_retarget.config import RetargetConfig, load_retarget_config
from rynn_retarget.input_guard import InputGuard
from rynn_retarget.kinematics.arm_ik import ArmIkSolver, IkResult
from rynn_retarget.kinematics.calibration import Calibration, calibrate_arm
from rynn_retarget.kinematics.hand_retarget import HandRetargeter
from rynn_retarget.kinematics.robot_model import build_arm_chain, build_hand_chain
from rynn_retarget.kinematics.transforms import invert, tracker_point, wrist_target
from rynn_retarget.operator.frame import OperatorFrame
from rynn_retarget.smoothing import JointSmoother

ARM_SLICES = {"left": LEFT_ARM, "right": RIGHT_ARM}
HAND_SLICES = {"left": LEFT_HAND, "right": RIGHT_HAND}


@dataclass
class RetargetOutput:
    stamp: float  # the operator frame's stamp, carried to every published message
    action: np.ndarray  # (54,) joint target before smoothing, always finite and within limits
    skeleton_camera: np.ndarray  # (2, 21, 3) left, right operator hand in the camera optical frame
    skeleton_valid: np.ndarray  # (2,) bool: a good skeleton has been seen for that hand
    ik: dict = field(default_factory=dict)  # side -> IkResult of this step (absent if the arm held)


class RetargetPipeline:
    def __init__(self, config: RetargetConfig | None = None):
        self.config = config or RetargetConfig()
        urdf_path = resolve_urdf_path(self.config.urdf_path)
        model = load_model(urdf_path)
        limits = joint_limits_from_urdf(urdf_path)
        self.arms = {side: build_arm_chain(model, side, limits) for side in SIDES}
        self.solvers = {side: ArmIkSolver(self.arms[side], self.config.arm_ik) for side in SIDES}
        self.hands = {side: HandRetargeter(build_hand_chain(model, side, limits), self.config.hand) for side in SIDES}
        self.camera_from_base = invert(frame_pose(model, self.config.camera_frame))
        self.set_calibration(self.config.resolved_calibration())
        self.guard = InputGuard(self.config.guard)
        self.lower, self.upper = limits.lower, limits.upper
        self._action = self.neutral_action()
        self._skeleton_hand = {side: np.zeros((21, 3)) for side in SIDES}

    @classmethod
    def from_yaml(cls, path) -> "RetargetPipeline":
        return cls(load_retarget_config(path))

    @property
    def counters(self) -> dict:
        return dict(self.guard.counters)

    @property
    def action(self) -> np.ndarray:
        """The last joint target (the neutral pose before the first good frame)."""
        return self._action.copy()

    def neutral_action(self) -> np.ndarray:
        action = np.zeros(ACTION_DIM)
        for side in SIDES:
            action[ARM_SLICES[side]] = self.config.neutral_arm(side)
            action[HAND_SLICES[side]] = self.hands[side].output
        return np.clip(action, self.lower, self.upper)

    def make_smoother(self) -> JointSmoother:
        return JointSmoother(self.config.smoothing, self._action, self.lower, self.upper)

    def calibrate(self, frame: OperatorFrame) -> Calibration:
        """Take ``frame`` as the operator's neutral pose (see kinematics.calibration)."""
        rotation = np.asarray(self.config.base_rotation, dtype=np.float64)
        arms = {}
        for side in SIDES:
            q_neutral = self.config.neutral_arm(side)
            arm = self.arms[side]
            arms[side] = calibrate_arm(
                frame.trackers["chest"],
                frame.trackers[f"{side}_wrist"],
                frame.trackers[f"{side}_upper_arm"],
                arm.ee_pose(q_neutral),
                arm.elbow_position(q_neutral),
                self.config.arm_ik.scale,
                rotation,
            )
        calibration = Calibration(**arms)
        self.set_calibration(calibration)
        return calibration

    def set_calibration(self, calibration: Calibration) -> None:
        """Use ``calibration`` from now on; its matrices are validated and parsed once, not per frame."""
        self.calibration = calibration
        self._chain_offsets = {
            side: (
                calibration.side(side).base_matrix(),
                calibration.side(side).ee_matrix(),
                np.asarray(calibration.side(side).elbow_offset, dtype=np.float64),
            )
            for side in SIDES
        }

    def arm_target(self, side: str, trackers: dict) -> tuple[np.ndarray, np.ndarray]:
        """End-effector target (4x4) and reference elbow position in base_link for one arm."""
        base, ee, elbow_offset = self._chain_offsets[side]
        scale = self.config.arm_ik.scale
        target = wrist_target(trackers["chest"], trackers[f"{side}_wrist"], base, ee, scale)
        elbow = tracker_point(trackers["chest"], trackers[f"{side}_upper_arm"], base, scale)
        return target, elbow + elbow_offset

    def step(self, frame: OperatorFrame, now: float) -> RetargetOutput | None:
        """Retarget one operator frame; None if the guard dropped it (the last target stands)."""
        clean = self.guard.accept(frame, now)
        if clean is None:
            return None
        action = self._action.copy()
        results: dict[str, IkResult] = {}
        for side in SIDES:
            if clean.arm_ready(side):
                target, elbow = self.arm_target(side, clean.trackers)
                result = self.solvers[side].solve(target, action[ARM_SLICES[side]], elbow)
                if not np.all(np.isfinite(result.q)):
                    self.guard.count("nonfinite_solution")
                    continue
                if not result.reachable:
                    self.guard.count(f"unreachable_{side}")
                action[ARM_SLICES[side]] = result.q
                results[side] = result
            if side in clean.hands:
                q_hand = self.hands[side].retarget(clean.hands[side], clean.stamp)
                if np.all(np.isfinite(q_hand)):
                    action[HAND_SLICES[side]] = q_hand
                    self._skeleton_hand[side] = clean.hands[side]
                else:
                    self.guard.count("nonfinite_solution")
                    self.hands[side].reset()
        self._action = np.clip(action, self.lower, self.upper)
        return RetargetOutput(
            stamp=clean.stamp,
            action=self._action.copy(),
            skeleton_camera=np.stack([self.skeleton_in_camera(side) for side in SIDES]),
            skeleton_valid=np.array([side in clean.hands for side in SIDES]),
            ik=results,
        )

    def elbows_in_camera(self, action: np.ndarray) -> np.ndarray:
        """(2, 3) robot elbows [left, right] at ``action``, camera optical frame: the forearm bars of
        the world model's control frame (the retarget node publishes them, the generator records them)."""
        elbows = np.stack([self.arms[side].elbow_position(action[ARM_SLICES[side]]) for side in SIDES])
        return elbows @ self.camera_from_base[:3, :3].T + self.camera_from_base[:3, 3]

    def skeleton_in_camera(self, side: str) -> np.ndarray:
        """The operator's hand keypoints placed at the commanded robot palm, camera optical frame."""
        palm = self.arms[side].palm_pose(self._action[ARM_SLICES[side]])
        transform = self.camera_from_base @ palm
        return self._skeleton_hand[side] @ transform[:3, :3].T + transform[:3, 3]
