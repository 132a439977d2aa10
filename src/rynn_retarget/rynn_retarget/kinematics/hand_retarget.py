"""21-point MediaPipe skeleton -> 20 WUJI hand joint angles.

Vector retargeting in the hand's own kinematics: the robot's keypoint vectors
(wrist -> fingertip, wrist -> middle joint, wrist -> distal joint, thumb tip ->
fingertip) are fitted to the operator's, scaled, by box-bounded
Levenberg-Marquardt with Pinocchio's analytic Jacobians.

Tips and middle joints alone leave each finger's middle/distal pair with two
solutions, one of them bent backwards (and the solver, started straight, finds
it); the distal-joint vectors (weak: human and robot phalanx lengths differ)
and a start at mid-range keep the finger shape human. Thumb-to-finger vectors weigh more when
the operator's tips are close, so pinches close on the robot too.
Warm-started; the output is low-pass filtered over the operator samples' stamps
(``StampedEma``), so the lag is the same in seconds however irregularly a loaded
process gets to solve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rynn_retarget.kinematics.box_least_squares import solve_box_least_squares
from rynn_retarget.kinematics.robot_model import HandChain

# MediaPipe keypoint indices.
TIPS = (4, 8, 12, 16, 20)
MIDDLE_KEYPOINTS = (2, 6, 10, 14, 18)  # thumb MCP, finger PIPs
DISTAL_KEYPOINTS = (3, 7, 11, 15, 19)  # thumb IP, finger DIPs
# Indices in the 20-joint vector (4 per finger: joint1..joint4).
DISTAL_JOINT_INDICES = (3, 7, 11, 15, 19)  # joint4: DIP (thumb IP)


@dataclass(frozen=True)
class HandRetargetConfig:
    scale: float = 1.0  # operator -> robot hand size
    iterations: int = 4  # LM iterations per frame (warm-started)
    damping: float = 1e-4
    smoothness_weight: float = 1e-5  # pull towards the previous solution, removes null-space drift
    tip_weight: float = 1.0
    middle_weight: float = 0.2
    distal_weight: float = 0.05  # wrist -> distal joint: picks the forward middle/distal solution
    pinch_weight: float = 0.3  # thumb -> fingertip vectors, far apart
    pinch_close_weight: float = 4.0  # ... when the operator's tips are within pinch_distance
    pinch_distance: float = 0.03  # m
    # Output filter: ema_alpha is the weight of a new solution when samples come at ema_reference_rate_hz
    # (the nominal solve rate, max_solve_rate_hz); a sample dt seconds after the previous one weighs
    # 1 - (1 - ema_alpha) ** (dt * ema_reference_rate_hz). 1 = no filter.
    ema_alpha: float = 0.6
    ema_reference_rate_hz: float = 60.0


def build_vector_pairs() -> np.ndarray:
    """(origin, end) keypoint index pairs of the fitted vectors."""
    pairs = [(0, tip) for tip in TIPS] + [(0, joint) for joint in MIDDLE_KEYPOINTS]
    pairs += [(0, joint) for joint in DISTAL_KEYPOINTS]
    pairs += [(4, tip) for tip in TIPS[1:]]
    return np.array(pairs)


class StampedEma:
    """Exponential filter in time: ``alpha`` is a new sample's weight at ``reference_rate_hz``, so
    the same signal sampled at any rate is filtered to the same value at the same time (per-call
    weights lagged more when a starved solver called less often).

    The first sample after construction or ``reset`` passes through. A sample whose stamp is not
    finite or not later than the last filtered one carries no known elapsed time: it gets no
    weight (the output holds) and the last stamp stays."""

    def __init__(self, alpha: float, reference_rate_hz: float):
        if not 0.0 <= alpha <= 1.0 or not reference_rate_hz > 0.0:
            raise ValueError(f"need 0 <= alpha <= 1 and reference_rate_hz > 0, got {alpha}, {reference_rate_hz}")
        self.alpha = alpha
        self.reference_rate_hz = reference_rate_hz
        self.reset()

    def reset(self) -> None:
        self.value: np.ndarray | None = None
        self.stamp: float | None = None

    def weight(self, dt: float) -> float:
        """The new sample's weight after ``dt`` seconds (0 for a dt that is not finite and positive)."""
        if not (math.isfinite(dt) and dt > 0.0):
            return 0.0
        return 1.0 - (1.0 - self.alpha) ** (dt * self.reference_rate_hz)

    def update(self, sample: np.ndarray, stamp: float) -> np.ndarray:
        if self.value is None or self.stamp is None:
            self.value = np.array(sample, dtype=np.float64)
            self.stamp = float(stamp) if math.isfinite(stamp) else None
            return self.value.copy()
        weight = self.weight(stamp - self.stamp)
        if weight > 0.0:
            self.value = weight * np.asarray(sample, dtype=np.float64) + (1.0 - weight) * self.value
            self.stamp = float(stamp)
        return self.value.copy()


class HandRetargeter:
    """Stateful per-hand retargeter; ``reset`` forgets the warm start and filter."""

    def __init__(self, chain: HandChain, config: HandRetargetConfig | None = None):
        self.chain = chain
        self.config = config or HandRetargetConfig()
        self.pairs = build_vector_pairs()
        self._used = sorted(set(self.pairs.ravel()) - {0})
        self._open = np.clip(np.zeros(chain.model.nq), chain.lower, chain.upper)  # output before any skeleton
        self._start = (chain.lower + chain.upper) / 2  # solver start: mid-range bends every finger forwards
        self._filter = StampedEma(self.config.ema_alpha, self.config.ema_reference_rate_hz)
        self.reset()

    def reset(self) -> None:
        self._solution = self._start.copy()
        self._filter.reset()

    @property
    def output(self) -> np.ndarray:
        """The last filtered joint angles (the open hand before any skeleton)."""
        return self._open.copy() if self._filter.value is None else self._filter.value.copy()

    def vector_weights(self, human_points: np.ndarray) -> np.ndarray:
        cfg = self.config
        weights = np.concatenate(
            [
                np.full(5, cfg.tip_weight),
                np.full(5, cfg.middle_weight),
                np.full(5, cfg.distal_weight),
                np.full(4, cfg.pinch_weight),
            ]
        )
        thumb_gaps = np.linalg.norm(human_points[list(TIPS[1:])] - human_points[4], axis=1)
        weights[15:] = np.where(thumb_gaps < cfg.pinch_distance, cfg.pinch_close_weight, cfg.pinch_weight)
        return weights

    def solve(self, human_points: np.ndarray) -> np.ndarray:
        """Unfiltered joint angles for one skeleton (21, 3), hand frame, metres."""
        cfg = self.config
        points = np.asarray(human_points, dtype=np.float64)
        origins, ends = self.pairs[:, 0], self.pairs[:, 1]
        targets = cfg.scale * (points[ends] - points[origins])
        row_weights = np.repeat(np.sqrt(self.vector_weights(points)), 3)

        def residual(q: np.ndarray):
            robot, jacobians = self.chain.keypoints_and_jacobians(q, self._used)
            r = (robot[ends] - robot[origins] - targets).reshape(-1)
            jacobian = (jacobians[ends] - jacobians[origins]).reshape(-1, q.size)
            return r * row_weights, jacobian * row_weights[:, None]

        self._solution, _ = solve_box_least_squares(
            residual,
            self._solution,
            self.chain.lower,
            self.chain.upper,
            cfg.iterations,
            cfg.damping,
            prior=self._solution,
            prior_weight=cfg.smoothness_weight,
        )
        return self._solution.copy()

    def retarget(self, human_points: np.ndarray, stamp: float) -> np.ndarray:
        """Filtered joint angles (20,): solve, then filter over the time since the previous
        skeleton (``stamp``: the operator sample's stamp, seconds)."""
        return self._filter.update(self.solve(human_points), stamp)
