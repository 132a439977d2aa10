"""Hand retargeting figures: fingertip error and time per hand (project hand and real WUJI URDF).

    .venv/bin/python benchmarks/bench_hand.py
"""

import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src" / p) for p in ("rynn_common", "rynn_retarget")]

from rynn_common.description import default_urdf_path
from rynn_retarget.kinematics.hand_retarget import TIPS, HandRetargeter
from rynn_retarget.kinematics.robot_model import hand_chain_from_urdf
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig

WUJI = Path("/work/shared/robots/wuji_hand_description/urdf/right.urdf")


def run(name, chain, side):
    retargeter = HandRetargeter(chain)
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=0))
    errors, times = [], []
    for index in range(int(20 * 120)):
        skeleton = operator.frame_at(index / 120).hand(side).points
        start = time.perf_counter()
        q = retargeter.retarget(skeleton, index / 120)
        times.append(time.perf_counter() - start)
        errors.append(np.linalg.norm(chain.keypoints(q)[list(TIPS)] - skeleton[list(TIPS)], axis=1))
    errors = np.array(errors)
    print(f"{name}: synthetic human hand (20 s, all motions): fingertip error median {1e3 * np.median(errors):.1f} mm, "
          f"p95 {1e3 * np.percentile(errors, 95):.1f} mm; time per hand median {1e3 * np.median(times):.2f} ms, "
          f"p99 {1e3 * np.percentile(times, 99):.2f} ms")
    rng = np.random.default_rng(0)
    mid = (chain.lower + chain.upper) / 2
    own = []
    for _ in range(200):
        target = chain.keypoints(np.clip(mid + rng.uniform(-0.35, 0.35, 20), chain.lower, chain.upper))
        retargeter.reset()
        own.append(np.linalg.norm(chain.keypoints(retargeter.solve(target))[list(TIPS)] - target[list(TIPS)], axis=1).max())
    print(f"{name}: skeletons from the hand's own FK (cold start, 4 LM iterations): worst-tip error median "
          f"{1e3 * np.median(own):.1f} mm, p95 {1e3 * np.percentile(own, 95):.1f} mm")


def main():
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    run("project hand (right)", hand_chain_from_urdf(default_urdf_path(), "right"), "right")
    if WUJI.exists():
        run("real WUJI right.urdf", hand_chain_from_urdf(WUJI, "right"), "right")


if __name__ == "__main__":
    main()
