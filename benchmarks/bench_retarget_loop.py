"""200 Hz output period jitter with 120 Hz operator input, measured two ways side by side:

1. the real node graph: tracker_node + glove_node (synthetic, 120 Hz) and retarget_node,
   each its own process over DDS; periods from the stamps of /rynn/action as received;
2. a single-thread Python loop doing the same work (the naive design the node avoids).

    .venv/bin/python benchmarks/bench_retarget_loop.py [--seconds 5]
"""

import argparse
import os
import platform
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src" / "rynn_retarget"))

from rynn_retarget.config import load_retarget_config  # noqa: E402
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig  # noqa: E402
from rynn_retarget.pipeline import RetargetPipeline  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "retarget.yaml"


def summarize(name: str, stamps: list, seconds: float, extra: str = "") -> None:
    periods = np.diff(stamps) * 1e3
    jitter = np.abs(periods - 5.0)
    print(
        f"{name}: {len(stamps)} outputs in {seconds:.0f} s ({len(stamps) / seconds:.1f} Hz); period p50 "
        f"{np.median(periods):.3f} ms; |period - 5 ms| p50 {np.median(jitter):.3f} ms, p99 "
        f"{np.percentile(jitter, 99):.3f} ms, max {jitter.max():.3f} ms{extra}"
    )


def node_graph(seconds: float) -> None:
    """Start the three nodes, record /rynn/action stamps for ``seconds``."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rynn_teleop_msgs.msg import RobotAction

    env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
    env["PYTHONPATH"] = os.pathsep.join(str(REPO / "src" / p) for p in ("rynn_retarget",))
    nodes = [
        subprocess.Popen([sys.executable, "-m", f"rynn_retarget.nodes.{name}", "--ros-args", "-p", "rate_hz:=120.0"]
                         if name != "retarget_node" else [sys.executable, "-m", f"rynn_retarget.nodes.{name}"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for name in ("tracker_node", "glove_node", "retarget_node")
    ]
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    rclpy.init()
    node = rclpy.create_node("bench_retarget_loop")
    stamps = []
    node.create_subscription(
        RobotAction, "/rynn/action",
        lambda m: stamps.append(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9),
        QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE),
    )
    try:
        deadline = time.monotonic() + 60.0
        while len(stamps) < 200 and time.monotonic() < deadline:  # discovery + warm-up
            rclpy.spin_once(node, timeout_sec=0.05)
        stamps.clear()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        summarize("retarget_node over DDS (node stamps)", stamps, seconds)
    finally:
        for proc in nodes:
            proc.send_signal(signal.SIGINT)
        for proc in nodes:
            proc.wait(timeout=10)
        node.destroy_node()
        rclpy.shutdown()


def single_thread_loop(seconds: float) -> None:
    pipeline = RetargetPipeline(load_retarget_config(CONFIG))
    smoother = pipeline.make_smoother()
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=0))
    output_period, input_period = 1 / 200.0, 1 / 120.0
    start = time.monotonic()
    next_output, next_input = start, start
    stamps, step_times = [], []
    while True:
        now = time.monotonic()
        if now - start > seconds:
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
    summarize(
        "single-thread loop (reference)", stamps, seconds,
        f"; retarget step (both arms + hands) median {1e3 * np.median(step_times):.2f} ms, "
        f"p99 {1e3 * np.percentile(step_times, 99):.2f} ms",
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"inputs: synthetic operator at 120 Hz; output target 200 Hz")
    node_graph(args.seconds)
    single_thread_loop(args.seconds)


if __name__ == "__main__":
    main()
