"""The task operator: an ``OperatorSource`` that does a scene's task, as trackers and gloves.

The plan (``task_plan``) says where the robot palm should be; an operator who has calibrated
knows how their wrist maps onto the robot (T_target = T_base . Scale_s(T_chest^-1 T_wrist) . T_ee),
so the wrist tracker that puts the palm there is that chain inverted. On top, what a human adds:
a slow smooth wander of the wrist (a few millimetres, < 1.5 Hz) and a faint physiological tremor
(~9 Hz), and the body sway of the synthetic operator's chest, which the chain cancels as it would
for a real operator. The glove carries the hand model's grasp or pinch at the plan's closure.
Every frame is a pure function of (time, plan, seed).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from rynn_retarget.kinematics.transforms import invert, pose
from rynn_retarget.operator.frame import HandSkeleton, OperatorFrame, SampledSource
from rynn_retarget.operator.hand_model import grasp_pose, keypoints, pinch_pose, tripod_pose
from rynn_retarget.operator.synthetic import FRAME_PARTS, SHOULDER, SyntheticOperator, SyntheticOperatorConfig, elbow_position
from rynn_retarget.operator.task_plan import SIDES, HandKey, TaskPlan, axis_angle_matrix

GRIP_STEPS = 50  # glove closure is quantised to 2 %, so keypoints are computed once per level
_GRIP_POSES = {"power": grasp_pose, "pinch": pinch_pose, "tripod": tripod_pose}


@functools.lru_cache(maxsize=512)
def _hand_points(kind: str, level: int, side: str) -> np.ndarray:
    return keypoints(_GRIP_POSES[kind](level / GRIP_STEPS), side)


@dataclass(frozen=True)
class ArmMapping:
    """The calibrated retarget chain of one arm and the palm -> end-effector offset of the robot."""

    base: np.ndarray  # T_base (4x4)
    ee: np.ndarray  # T_ee (4x4)
    palm_to_ee: np.ndarray  # robot palm frame -> end-effector frame (4x4)
    scale: float

    def wrist_in_chest(self, palm: np.ndarray) -> np.ndarray:
        """Operator wrist pose (chest frame) whose retarget target puts the robot palm at ``palm``."""
        relative = invert(self.base) @ palm @ self.palm_to_ee @ invert(self.ee)
        relative[:3, 3] /= self.scale
        return relative


@dataclass
class HumanNoiseConfig:
    wander_m: float = 0.003  # amplitude of the slow wrist wander (per axis, per component)
    wander_rad: float = 0.02  # slow wrist rotation wander
    tremor_m: float = 0.0004  # physiological tremor amplitude
    grip_jitter: float = 0.03  # glove closure noise (fraction of a full closure)


class TaskOperator(SampledSource):
    """Trackers and gloves doing ``plan``; ``frame_at(t)`` is deterministic for a seed."""

    def __init__(self, plan: TaskPlan, mappings: dict, seed: int = 0, rate_hz: float = 120.0,
                 duration_s: float = 0.0, realtime: bool = False, noise: HumanNoiseConfig | None = None):
        self.plan = plan
        self.mappings = mappings
        self.rate_hz = rate_hz
        self.duration_s = duration_s or plan.duration
        self.realtime = realtime
        self.noise = noise or HumanNoiseConfig()
        self._body = SyntheticOperator(SyntheticOperatorConfig(motion="reach", seed=seed))
        rng = np.random.default_rng([seed, 7])
        # per side: 3 slow components x (position 3 + rotation 3) and one tremor component
        self._wander_freq = rng.uniform(0.15, 1.4, size=(2, 3, 6))
        self._wander_phase = rng.uniform(0, 2 * np.pi, size=(2, 3, 6))
        self._tremor_freq = rng.uniform(8.0, 11.0, size=(2, 3))
        self._tremor_phase = rng.uniform(0, 2 * np.pi, size=(2, 3))
        self._grip_freq = rng.uniform(0.5, 2.0, size=2)

    def _wander(self, index: int, t: float) -> tuple[np.ndarray, np.ndarray]:
        waves = np.sin(2 * np.pi * self._wander_freq[index] * t + self._wander_phase[index]).sum(axis=0) / 3
        tremor = np.sin(2 * np.pi * self._tremor_freq[index] * t + self._tremor_phase[index])
        return waves[:3] * self.noise.wander_m + tremor * self.noise.tremor_m, waves[3:] * self.noise.wander_rad

    def wrist_in_chest(self, side: str, t: float) -> np.ndarray:
        """The operator's wrist (chest frame) at ``t``, human noise included."""
        key = self.plan.hand_at(side, t)
        wrist = self.mappings[side].wrist_in_chest(pose(key.rotation, key.position))
        shift, turn = self._wander(SIDES.index(side), t)
        wrist[:3, 3] += shift
        wrist[:3, :3] = axis_angle_matrix(turn) @ wrist[:3, :3]
        return wrist

    def glove(self, side: str, t: float) -> HandSkeleton:
        key: HandKey = self.plan.hand_at(side, t)
        jitter = self.noise.grip_jitter * np.sin(2 * np.pi * self._grip_freq[SIDES.index(side)] * t)
        level = int(round(np.clip(key.grip + jitter * (key.grip > 0.05), 0.0, 1.0) * GRIP_STEPS))
        return HandSkeleton(_hand_points(key.grip_kind, level, side).copy(), np.ones(21), True)

    def frame_at(self, t: float, parts: frozenset = FRAME_PARTS) -> OperatorFrame:
        frame = OperatorFrame(stamp=t, trackers={})
        chest = self._body.chest_pose(t)
        if "trackers" in parts:
            frame.trackers["chest"] = chest
        for side in SIDES:
            if "hands" in parts:
                setattr(frame, f"{side}_hand", self.glove(side, t))
            if "trackers" in parts:
                wrist = self.wrist_in_chest(side, t)
                frame.trackers[f"{side}_wrist"] = chest @ wrist
                elbow = elbow_position(SHOULDER[side], wrist[:3, 3], side)
                frame.trackers[f"{side}_upper_arm"] = chest @ pose(None, 0.5 * (SHOULDER[side] + elbow))
        return frame


def rest_hands(pipeline) -> dict:
    """The robot's neutral palms (open hands): where every plan starts and ends."""
    return {side: HandKey(*_split(pipeline.arms[side].palm_pose(pipeline.config.neutral_arm(side))))
            for side in SIDES}


def arm_mappings(pipeline) -> dict:
    """The chain ``pipeline`` is calibrated with, per arm, as the operator inverts it."""
    mappings = {}
    for side in SIDES:
        q = pipeline.config.neutral_arm(side)
        arm = pipeline.arms[side]
        calibration = pipeline.calibration.side(side)
        mappings[side] = ArmMapping(calibration.base_matrix(), calibration.ee_matrix(),
                                    invert(arm.palm_pose(q)) @ arm.ee_pose(q), pipeline.config.arm_ik.scale)
    return mappings


def _split(transform: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return transform[:3, 3].copy(), transform[:3, :3].copy()
