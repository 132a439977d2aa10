"""200 Hz output period jitter with 120 Hz operator input, plain Python loop at real time.

    .venv/bin/python benchmarks/bench_retarget_loop.py [--seconds 5]
"""

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src" / "rynn_retarget"))

from rynn_retarget.config import load_retarget_config  # noqa: E402
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig  # noqa: E402
from rynn_retarget.pipeline import RetargetPipeline  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "config" / "retarget.yaml"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    pipeline = RetargetPipeline(load_retarget_config(CONFIG))
    smoother = pipeline.make_smoother()
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=0))
    output_period, input_period = 1 / 200.0, 1 / 120.0
    start = time.monotonic()
    next_output, next_input = start, start
    stamps, step_times = [], []
    while True:
        now = time.monotonic()
        if now - start > args.seconds:
            break
        if now >= next_input:  # input due: retarget (may delay the output tick, which is what we measure)
            t0 = time.perf_counter()
            result = pipeline.step(operator.frame_at(now - start), now)
            if result is not None:
                smoother.set_target(result.action)
            step_times.append(time.perf_counter() - t0)
            next_input += input_period
        if now >= next_output:
            smoother.step()
            stamps.append(now)
            next_output += output_period
        time.sleep(max(0.0, min(next_output, next_input) - time.monotonic()))
    periods = np.diff(stamps) * 1e3
    jitter = np.abs(periods - 5.0)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{args.seconds:.0f} s: {len(stamps)} outputs ({len(stamps) / args.seconds:.1f} Hz), {len(step_times)} inputs; "
          f"output period p50 {np.median(periods):.3f} ms, |period-5 ms| p50 {np.median(jitter):.3f} ms, "
          f"p99 {np.percentile(jitter, 99):.3f} ms, max {jitter.max():.3f} ms; "
          f"retarget step (both arms + hands) median {1e3 * np.median(step_times):.2f} ms, p99 {1e3 * np.percentile(step_times, 99):.2f} ms")


if __name__ == "__main__":
    main()
