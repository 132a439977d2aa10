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
Warm-started, EMA-filtered.
"""

from __future__ import annotations

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
    ema_alpha: float = 0.6  # weight of the new solution in the output filter (1 = no filter)


def build_vector_pairs() -> np.ndarray:
    """(origin, end) keypoint index pairs of the fitted vectors."""
    pairs = [(0, tip) for tip in TIPS] + [(0, joint) for joint in MIDDLE_KEYPOINTS]
    pairs += [(0, joint) for joint in DISTAL_KEYPOINTS]
    pairs += [(4, tip) for tip in TIPS[1:]]
    return np.array(pairs)


class HandRetargeter:
    """Stateful per-hand retargeter; ``reset`` forgets the warm start and filter."""

    def __init__(self, chain: HandChain, config: HandRetargetConfig | None = None):
        self.chain = chain
        self.config = config or HandRetargetConfig()
        self.pairs = build_vector_pairs()
        self._used = sorted(set(self.pairs.ravel()) - {0})
        self._open = np.clip(np.zeros(chain.model.nq), chain.lower, chain.upper)  # output before any skeleton
        self._start = (chain.lower + chain.upper) / 2  # solver start: mid-range bends every finger forwards
        self.reset()

    def reset(self) -> None:
        self._solution = self._start.copy()
        self._filtered = self._open.copy()

    @property
    def output(self) -> np.ndarray:
        return self._filtered.copy()

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

    def retarget(self, human_points: np.ndarray) -> np.ndarray:
        """Filtered joint angles (20,): solve, then EMA with the previous output."""
        solution = self.solve(human_points)
        alpha = self.config.ema_alpha
        self._filtered = alpha * solution + (1.0 - alpha) * self._filtered
        return self._filtered.copy()
