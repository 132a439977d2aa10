"""Arm inverse kinematics as the paper (App. 8), on a 7-DoF Pinocchio chain, robust at the limits.

Damped least squares with the SVD pseudo-inverse and adaptive damping
lambda = lambda_min + 0.01 / (1 + sigma_max) and a null-space shoulder prior
from the upper-arm tracker, as the paper. Where the paper clips to the joint
limits after each step (a joint pinned at a limit then swallows its share of
every step and the solve stalls), the limits here are inside the step: a
clamping-aware DLS re-solves the error a limited joint leaves with the other
joints, a joint closes only part of its distance to a limit per step, and a
solve that stops making progress moves the joints pinned at a limit back to
mid-range (escape) instead of needing random restarts. The best iterate is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dgesdd

from rynn_retarget.kinematics.box_least_squares import clamp
from rynn_retarget.kinematics.robot_model import ArmChain


@dataclass(frozen=True)
class ArmIkConfig:
    scale: float = 1.5  # Scale_s on the chest->wrist translation
    lambda_min: float = 1e-3
    max_iterations: int = 30  # per solve; warm starts usually need 1-3
    position_tolerance: float = 1e-4  # m
    orientation_tolerance: float = 1e-3  # rad
    max_step: float = 0.8  # rad, largest joint change in one DLS step (keeps far starts stable)
    nullspace_weights: tuple = (0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0)  # paper: w = 0.5 on the shoulder
    nullspace_tolerance: float = 2e-3  # rad; the prior keeps iterating until its step is this small
    elbow_iterations: int = 3  # Gauss-Newton steps of the 3x2 shoulder partial IK
    limit_gain: float = 0.5  # a step closes at most this fraction of a joint's distance to its limit
    stall_ratio: float = 0.9  # progress = the error norm falling below this fraction of the last progress
    escape_after: int = 3  # iterations without progress before joints pinned at a limit go to mid-range
    pinned_margin: float = 0.05  # fraction of a joint's range from a limit that counts as pinned
    # A stall after this many escapes in a row that did not lower the best error ends the solve; 0: never.
    # Off: an out-of-reach solve cycles through escapes to max_iterations, but a later escape still
    # lowers the best error often enough that every setting measured loses solves
    # (benchmarks/bench_ik.py --stop-rule).
    fruitless_escapes: int = 0
    restarts: int = 0  # extra solves from seeded random joint configurations when one does not converge
    restart_seed: int = 0
    unreachable_position_error: float = 0.01  # m; a residual above this is reported unreachable
    unreachable_orientation_error: float = 0.1  # rad


@dataclass
class IkResult:
    q: np.ndarray
    position_error: float
    orientation_error: float
    iterations: int
    reachable: bool
    shoulder_reference: np.ndarray | None = field(default=None)


def damped_pseudo_inverse(jacobian: np.ndarray, lambda_min: float) -> np.ndarray:
    """J#_lambda = V diag(s / (s^2 + lambda^2)) U^T with lambda growing near singularities.

    LAPACK's gesdd called directly: the routine np.linalg.svd runs, without its wrapper, which
    took half of each call's time here (~40 calls per retargeted sample)."""
    u, sigma, vt, info = dgesdd(jacobian, compute_uv=1, full_matrices=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"SVD did not converge (LAPACK gesdd info {info})")
    damping = lambda_min + 0.01 / (1.0 + sigma[0])
    return (vt.T * (sigma / (sigma**2 + damping**2))) @ u.T


def bounded_damped_step(
    jacobian: np.ndarray, error: np.ndarray, low: np.ndarray, high: np.ndarray, lambda_min: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DLS step J#_lambda e with the joint limits inside the solve: low <= step <= high.

    A joint whose step would cross its limit is held at the limit and the task
    error it leaves is re-solved by the remaining joints (clamping loop), so a
    joint pinned at a limit no longer swallows the step as clipping after the
    step does; a pinned joint whose step points inwards is free again at once.
    Returns the step, the mask of joints left free and their damped pseudo-inverse.
    """
    pinv = damped_pseudo_inverse(jacobian, lambda_min)
    step = pinv @ error
    crossing = (step > high) | (step < low)
    free = ~crossing
    while crossing.any():
        step[crossing] = clamp(step[crossing], low[crossing], high[crossing])
        if not free.any():
            return step, free, pinv[:0]
        pinv = damped_pseudo_inverse(jacobian[:, free], lambda_min)
        step[free] = pinv @ (error - jacobian[:, ~free] @ step[~free])
        crossing = free & ((step > high) | (step < low))
        free &= ~crossing
    return step, free, pinv


class ArmIkSolver:
    """DLS IK for one arm; ``solve`` is warm-started by the caller's ``q_start``."""

    def __init__(self, chain: ArmChain, config: ArmIkConfig | None = None):
        self.chain = chain
        self.config = config or ArmIkConfig()
        self._weights = np.asarray(self.config.nullspace_weights, dtype=np.float64)
        if self._weights.shape != (chain.model.nv,):
            raise ValueError(f"nullspace_weights needs {chain.model.nv} entries")
        self._identity = np.eye(chain.model.nv)
        self._middle = 0.5 * (chain.lower + chain.upper)
        self._pinned_margin = self.config.pinned_margin * (chain.upper - chain.lower)
        self._restart_rng = np.random.default_rng(self.config.restart_seed)
        # Both tolerances can only hold below this error norm (a hair above it, so rounding drops no solve).
        self._done_norm = (1 + 1e-9) * np.hypot(self.config.position_tolerance, self.config.orientation_tolerance)

    def shoulder_reference(self, q: np.ndarray, elbow_target: np.ndarray) -> np.ndarray:
        """q with joints 1-2 moved so the elbow points at ``elbow_target`` (3x2 partial IK)."""
        q_ref = q.copy()
        for _ in range(self.config.elbow_iterations):
            elbow, jacobian = self.chain.elbow_jacobian(q_ref)
            step = damped_pseudo_inverse(jacobian[:, :2], self.config.lambda_min) @ (elbow_target - elbow)
            q_ref[:2] = clamp(q_ref[:2] + step, self.chain.lower[:2], self.chain.upper[:2])
        return q_ref

    def solve(self, target: np.ndarray, q_start: np.ndarray, elbow_target: np.ndarray | None = None) -> IkResult:
        """Joint angles reaching the 4x4 ``target`` (base_link) from ``q_start``.

        With ``restarts`` > 0 a non-converged solve is retried from random
        configurations (a different arm branch) and the best result is kept.
        """
        best = self._descend(target, q_start, elbow_target)
        for _ in range(self.config.restarts):
            if self._converged(best):
                break
            seed = self._restart_rng.uniform(self.chain.lower, self.chain.upper)
            candidate = self._descend(target, seed, elbow_target)
            if candidate.position_error + candidate.orientation_error < best.position_error + best.orientation_error:
                best = candidate
        return best

    def _converged(self, result: IkResult) -> bool:
        return (
            result.position_error < self.config.position_tolerance
            and result.orientation_error < self.config.orientation_tolerance
        )

    @staticmethod
    def _pose_error(target_rotation, target_position, pose: np.ndarray, out: np.ndarray) -> None:
        """[position; rotation vector] error of the 4x4 ``pose`` to the target, written into ``out``
        (views of the one homogeneous matrix: no SE3 member copies per iteration)."""
        out[:3] = target_position - pose[:3, 3]
        out[3:] = pin.log3(target_rotation @ pose[:3, :3].T)

    def _descend(self, target: np.ndarray, q_start: np.ndarray, elbow_target: np.ndarray | None) -> IkResult:
        cfg = self.config
        chain = self.chain
        q = clamp(np.asarray(q_start, dtype=np.float64), chain.lower, chain.upper)
        target_rotation, target_position = target[:3, :3], target[:3, 3]
        q_ref = self.shoulder_reference(q, elbow_target) if elbow_target is not None else None
        error = np.zeros(6)
        best_q, best_error, best_norm = q, np.full(6, np.inf), np.inf
        progress, stalled = np.inf, 0
        best_norm_at_escape, fruitless_escapes = np.inf, 0
        iterations = 0
        for iterations in range(1, cfg.max_iterations + 1):
            current, jacobian = chain.ee_jacobian(q)
            self._pose_error(target_rotation, target_position, current.homogeneous, error)
            error_norm = np.sqrt(error @ error)
            if error_norm < best_norm:
                best_q, best_error, best_norm = q, error.copy(), error_norm
            task_done = (
                error_norm < self._done_norm  # skips the two norms while the solve is far from done
                and np.linalg.norm(error[:3]) < cfg.position_tolerance
                and np.linalg.norm(error[3:]) < cfg.orientation_tolerance
            )
            # Limits inside the step; a joint may close only part of its distance to a limit per step.
            low, high = cfg.limit_gain * (chain.lower - q), cfg.limit_gain * (chain.upper - q)
            step, free, pinv = bounded_damped_step(jacobian, error, low, high, cfg.lambda_min)
            if q_ref is not None:
                posture = np.zeros_like(q)
                n_free = pinv.shape[0]
                posture[free] = (self._identity[:n_free, :n_free] - pinv @ jacobian[:, free]) @ (
                    self._weights[free] * (q_ref[free] - q[free])
                )
                step = clamp(step + posture, low, high)
                task_done = task_done and np.abs(posture).max() < cfg.nullspace_tolerance
            if task_done:
                iterations -= 1
                best_q, best_error = q, error.copy()
                break
            if error_norm < cfg.stall_ratio * progress:
                progress, stalled = error_norm, 0
            else:
                stalled += 1
            if stalled >= cfg.escape_after:
                progress, stalled = np.inf, 0
                pinned = np.minimum(q - chain.lower, chain.upper - q) < self._pinned_margin
                if pinned.any():  # escape: pinned joints back to mid-range, the others keep their values
                    fruitless_escapes = fruitless_escapes + 1 if best_norm >= best_norm_at_escape else 0
                    if 0 < cfg.fruitless_escapes <= fruitless_escapes:
                        break  # keeps the best so far; a later escape might still have lowered it
                    best_norm_at_escape = best_norm
                    q = np.where(pinned, self._middle, q)
                    continue
            largest = np.abs(step).max()
            if largest > cfg.max_step:
                step *= cfg.max_step / largest
            q = clamp(q + step, chain.lower, chain.upper)
        else:
            self._pose_error(target_rotation, target_position, chain.ee_pose(q), error)
            if np.sqrt(error @ error) < best_norm:
                best_q, best_error = q, error.copy()
        position_error = float(np.linalg.norm(best_error[:3]))
        orientation_error = float(np.linalg.norm(best_error[3:]))
        return IkResult(
            q=best_q.copy(),
            position_error=position_error,
            orientation_error=orientation_error,
            iterations=iterations,
            reachable=position_error <= cfg.unreachable_position_error
            and orientation_error <= cfg.unreachable_orientation_error,
            shoulder_reference=None if q_ref is None else q_ref[:2].copy(),
        )
