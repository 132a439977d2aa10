"""Arm IK figures: accuracy on random reachable targets, synthetic streams, solve time, shoulder prior.

    .venv/bin/python benchmarks/bench_ik.py [--targets 500]
"""

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src" / p) for p in ("rynn_common", "rynn_retarget")]

from rynn_retarget.config import load_retarget_config
from rynn_retarget.kinematics.arm_ik import ArmIkSolver
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig
from rynn_retarget.pipeline import RetargetPipeline

CONFIG = Path(__file__).resolve().parents[1] / "src" / "rynn_retarget" / "config" / "retarget.yaml"


def machine() -> str:
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def random_targets(pipeline, count):
    config = pipeline.config.arm_ik
    rng = np.random.default_rng(0)
    for restarts in (0, 10):
        config_r = type(config)(**{**config.__dict__, "max_iterations": 100, "restarts": restarts})
        pos, ang = [], []
        for side in ("left", "right"):
            arm = pipeline.arms[side]
            solver = ArmIkSolver(arm, config_r)
            for _ in range(count // 2):
                q_true = rng.uniform(arm.lower, arm.upper)
                result = solver.solve(arm.ee_pose(q_true), pipeline.config.neutral_arm(side))
                pos.append(result.position_error)
                ang.append(np.rad2deg(result.orientation_error))
        pos, ang = np.array(pos), np.array(ang)
        ok = np.mean((pos < 1e-3) & (ang < 1.0))
        print(f"random reachable targets (FK of uniform q, cold start from neutral, restarts={restarts}): "
              f"{100 * ok:.1f}% within 1 mm / 1 deg; median {1e3 * np.median(pos):.3f} mm / {np.median(ang):.3f} deg")


def stream(pipeline, seconds, use_prior=True):
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=0))
    weights = {side: pipeline.solvers[side]._weights.copy() for side in ("left", "right")}
    if not use_prior:
        for solver in pipeline.solvers.values():
            solver._weights[:] = 0.0
    q = {side: pipeline.config.neutral_arm(side) for side in ("left", "right")}
    times, pos, ang, elbow_gap = [], [], [], []
    for index in range(int(seconds * 120)):
        frame = operator.frame_at(index / 120)
        elapsed = 0.0
        for side in ("left", "right"):
            start = time.perf_counter()
            target, elbow = pipeline.arm_target(side, frame.trackers)
            result = pipeline.solvers[side].solve(target, q[side], elbow)
            elapsed += time.perf_counter() - start
            q[side] = result.q
            pos.append(result.position_error)
            ang.append(np.rad2deg(result.orientation_error))
            shoulder = pipeline.arms[side].elbow_position(np.zeros(7)) + np.array([0, 0, 0.30])
            reference_dir = (elbow - shoulder) / np.linalg.norm(elbow - shoulder)
            robot_dir = pipeline.arms[side].elbow_position(result.q) - shoulder
            elbow_gap.append(np.linalg.norm(shoulder + 0.30 * reference_dir - shoulder - robot_dir))
        times.append(elapsed)
    for side in ("left", "right"):
        pipeline.solvers[side]._weights[:] = weights[side]
    return np.array(times), np.array(pos), np.array(ang), np.array(elbow_gap)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    pipeline = RetargetPipeline(load_retarget_config(CONFIG))
    print(f"machine: {machine()}; config {CONFIG.name}; arm_ik {pipeline.config.arm_ik}")
    random_targets(pipeline, args.targets)
    times, pos, ang, gap = stream(pipeline, args.seconds)
    ok = np.mean((pos < 1e-3) & (ang < 1.0))
    print(f"synthetic operator stream ({args.seconds:.0f} s at 120 Hz, all motions, warm start): "
          f"{100 * ok:.1f}% within 1 mm / 1 deg, max {1e3 * pos.max():.2f} mm / {ang.max():.2f} deg")
    print(f"solve time both arms per frame: median {1e3 * np.median(times):.3f} ms, p99 {1e3 * np.percentile(times, 99):.3f} ms "
          f"(per arm median {0.5e3 * np.median(times):.3f} ms)")
    _, _, _, gap_off = stream(pipeline, args.seconds, use_prior=False)
    print(f"elbow distance to tracker-derived reference: with prior median {1e3 * np.median(gap):.1f} mm "
          f"(p95 {1e3 * np.percentile(gap, 95):.1f}); without median {1e3 * np.median(gap_off):.1f} mm "
          f"(p95 {1e3 * np.percentile(gap_off, 95):.1f})")


if __name__ == "__main__":
    main()
