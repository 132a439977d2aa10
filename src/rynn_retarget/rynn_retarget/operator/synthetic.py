"""A scripted, seedable operator: trackers and hand skeletons for reach, grasp,
pinch, push and a bimanual lift.

Every frame is a pure function of (time, seed), so tests, demos and the data
generator get identical streams; the seed only changes a small smooth body
sway and the operator's heading in the tracking world.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from rynn_retarget.kinematics.transforms import pose
from rynn_retarget.operator.frame import HandSkeleton, OperatorFrame, SampledSource
from rynn_retarget.operator.hand_model import HandPose, grasp_pose, keypoints, pinch_pose

MOTIONS = ("reach", "grasp", "pinch", "push", "bimanual_lift")
FRAME_PARTS = frozenset({"trackers", "hands"})  # what frame_at computes; a tracker source needs no hands

# Hand keypoints are most of a frame's cost (~0.25 ms a hand) and a hand holds one pose for most of a
# motion (open, or fully closed): the same pose is computed once.
_hand_keypoints = functools.lru_cache(maxsize=64)(keypoints)

# Operator body in the chest-tracker frame (x forward, y left, z up), metres.
SHOULDER = {"left": np.array([-0.05, 0.18, 0.10]), "right": np.array([-0.05, -0.18, 0.10])}
NEUTRAL_WRIST = {"left": np.array([0.30, 0.20, -0.30]), "right": np.array([0.30, -0.20, -0.30])}
UPPER_ARM_LENGTH = 0.29
FOREARM_LENGTH = 0.27
# Palm down, fingers forward: hand z = chest x, hand x (palm normal) = -chest z.
NEUTRAL_HAND_ROTATION = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
ELBOW_OUTWARD = {"left": np.array([0.0, 0.35, -1.0]), "right": np.array([0.0, -0.35, -1.0])}  # where elbows hang


@dataclass
class SyntheticOperatorConfig:
    motion: str = "all"  # one of MOTIONS, or "all" to cycle through them
    period_s: float = 4.0  # one repetition of a motion
    rate_hz: float = 120.0
    duration_s: float = 0.0  # 0 = endless
    seed: int = 0
    sway_m: float = 0.008  # amplitude of the seeded smooth body sway
    realtime: bool = False  # pace frames() at rate_hz on the wall clock


def smoothstep(x: float) -> float:
    """Minimum-jerk 0 -> 1 profile on [0, 1]."""
    x = min(max(x, 0.0), 1.0)
    return x * x * x * (10.0 - 15.0 * x + 6.0 * x * x)


def window(phase: float, start: float, end: float, ramp: float) -> float:
    """0 outside [start, end], 1 inside, smooth ramps of width ``ramp``."""
    return smoothstep((phase - start) / ramp) * (1.0 - smoothstep((phase - end + ramp) / ramp))


def _rotation_y(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _rotation_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@dataclass
class ArmState:
    """One arm of the script, in the chest frame."""

    wrist_offset: np.ndarray
    wrist_pitch: float  # rad, positive lifts the fingers up
    hand: HandPose


def script(motion: str, phase: float) -> dict[str, ArmState]:
    """The scripted motion at ``phase`` in [0, 1): per-arm wrist offsets and hand poses."""
    zero = np.zeros(3)
    open_hand = grasp_pose(0.0)
    state = {side: ArmState(zero.copy(), 0.0, open_hand) for side in ("left", "right")}
    if motion == "reach":
        out = window(phase, 0.1, 0.9, 0.35)
        state["right"] = ArmState(out * np.array([0.08, 0.03, 0.04]), 0.0, open_hand)
    elif motion == "grasp":
        down = window(phase, 0.05, 0.95, 0.25)
        lift = window(phase, 0.45, 0.8, 0.12)
        closure = window(phase, 0.3, 0.9, 0.12)
        offset = down * np.array([0.06, 0.02, -0.08]) + lift * np.array([0.0, 0.0, 0.06])
        state["right"] = ArmState(offset, 0.0, grasp_pose(closure))
    elif motion == "pinch":
        near = window(phase, 0.05, 0.95, 0.25)
        closure = window(phase, 0.3, 0.8, 0.15)
        state["right"] = ArmState(near * np.array([0.05, 0.0, -0.05]), -0.3 * near, pinch_pose(closure))
    elif motion == "push":
        forward = window(phase, 0.1, 0.9, 0.35)
        for side in ("left", "right"):
            state[side] = ArmState(forward * np.array([0.06, 0.0, 0.03]), 0.5 * forward, open_hand)
    elif motion == "bimanual_lift":
        approach = window(phase, 0.05, 0.95, 0.2)
        lift = window(phase, 0.4, 0.75, 0.12)
        closure = window(phase, 0.25, 0.85, 0.1)
        for side, sign in (("left", 1.0), ("right", -1.0)):
            offset = approach * np.array([0.05, -sign * 0.05, -0.06]) + lift * np.array([0.0, 0.0, 0.08])
            state[side] = ArmState(offset, 0.0, grasp_pose(0.85 * closure))
    else:
        raise ValueError(f"unknown motion {motion!r}; choose from {MOTIONS} or 'all'")
    return state


def elbow_position(shoulder: np.ndarray, wrist: np.ndarray, side: str) -> np.ndarray:
    """Two-link human arm: the elbow hangs down and slightly outwards."""
    reach = wrist - shoulder
    length = math.sqrt(reach @ reach)
    distance = min(length, UPPER_ARM_LENGTH + FOREARM_LENGTH - 1e-6)
    axis = reach / length
    along = (UPPER_ARM_LENGTH**2 - FOREARM_LENGTH**2 + distance**2) / (2.0 * distance)
    radius = math.sqrt(max(UPPER_ARM_LENGTH**2 - along**2, 0.0))
    outward = ELBOW_OUTWARD[side]
    swivel = outward - axis * (outward @ axis)
    return shoulder + along * axis + (radius / math.sqrt(swivel @ swivel)) * swivel


class SyntheticOperator(SampledSource):
    """``OperatorSource`` of scripted motions; ``frame_at(t)`` is deterministic."""

    def __init__(self, config: SyntheticOperatorConfig | None = None):
        self.config = config or SyntheticOperatorConfig()
        if self.config.motion != "all" and self.config.motion not in MOTIONS:
            raise ValueError(f"unknown motion {self.config.motion!r}; choose from {MOTIONS} or 'all'")
        rng = np.random.default_rng(self.config.seed)
        self._heading = rng.uniform(-np.pi, np.pi)
        self._chest_origin = np.array([rng.uniform(-1, 1), rng.uniform(-1, 1), 1.3])
        self._sway_freq = rng.uniform(0.1, 0.5, size=(3, 3))  # (body part, axis)
        self._sway_phase = rng.uniform(0, 2 * np.pi, size=(3, 3))
        self._chest_rotation = _rotation_z(self._heading)

    def motion_at(self, t: float) -> tuple[str, float]:
        cycle, phase = divmod(t / self.config.period_s, 1.0)
        if self.config.motion == "all":
            return MOTIONS[int(cycle) % len(MOTIONS)], phase
        return self.config.motion, phase

    def _sway(self, part: int, t: float) -> np.ndarray:
        return self.config.sway_m * np.sin(2 * np.pi * self._sway_freq[part] * t + self._sway_phase[part])

    def chest_pose(self, t: float) -> np.ndarray:
        return pose(self._chest_rotation, self._chest_origin + self._sway(0, t))

    def frame_at(self, t: float, parts: frozenset = FRAME_PARTS) -> OperatorFrame:
        """The operator at ``t``; ``parts`` limits it to the trackers or the hands (a source that
        publishes only one of them need not compute the other)."""
        motion, phase = self.motion_at(t)
        arms = script(motion, phase)
        frame = OperatorFrame(stamp=t, trackers={})
        if "trackers" in parts:
            chest = frame.trackers["chest"] = self.chest_pose(t)
        for part, side in ((1, "left"), (2, "right")):
            arm = arms[side]
            if "hands" in parts:
                skeleton = HandSkeleton(_hand_keypoints(arm.hand, side).copy(), np.ones(21), True)
                if side == "left":
                    frame.left_hand = skeleton
                else:
                    frame.right_hand = skeleton
            if "trackers" not in parts:
                continue
            wrist_local = NEUTRAL_WRIST[side] + arm.wrist_offset + self._sway(part, t)
            rotation_local = _rotation_y(-arm.wrist_pitch) @ NEUTRAL_HAND_ROTATION
            frame.trackers[f"{side}_wrist"] = chest @ pose(rotation_local, wrist_local)
            elbow = elbow_position(SHOULDER[side], wrist_local, side)
            upper_arm_local = 0.5 * (SHOULDER[side] + elbow)
            frame.trackers[f"{side}_upper_arm"] = chest @ pose(None, upper_arm_local)
        return frame

    @property
    def rate_hz(self) -> float:
        return self.config.rate_hz

    @property
    def duration_s(self) -> float:
        return self.config.duration_s

    @property
    def realtime(self) -> bool:
        return self.config.realtime


def neutral_frame(seed: int = 0) -> OperatorFrame:
    """The operator standing in the neutral pose (for calibration)."""
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="reach", seed=seed, sway_m=0.0))
    return operator.frame_at(0.0)
