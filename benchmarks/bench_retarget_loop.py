"""200 Hz output period jitter with 120 Hz operator input, measured two ways side by side:

1. the real node graph: tracker_node + glove_node (synthetic, 120 Hz) and retarget_node over DDS,
   in each layout (one process per node, all three in one container process, both on the node
   runner's C++ EventsExecutor, or one process per node on rclpy's Python SingleThreadedExecutor, what the
   runner used before), side by side; periods from the stamps of /rynn/action
   as received, and the CPU share of each process;
2. a single-thread Python loop doing the same work (the naive design the node avoids).

    .venv/bin/python benchmarks/bench_retarget_loop.py [--seconds 5] [--layouts python_executor processes container]
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

from bench_digital_latency import CpuMeter  # also sets up sys.path
from rynn_common.ros_names import ACTION_TOPIC
from rynn_retarget.config import load_retarget_config
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig
from rynn_retarget.pipeline import RetargetPipeline

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "src" / "rynn_retarget" / "config" / "retarget.yaml"


def summarize(name: str, stamps: list, seconds: float, extra: str = "") -> None:
    periods = np.diff(stamps) * 1e3
    jitter = np.abs(periods - 5.0)
    print(
        f"{name}: {len(stamps)} outputs in {seconds:.0f} s ({len(stamps) / seconds:.1f} Hz); period p50 "
        f"{np.median(periods):.3f} ms; |period - 5 ms| p50 {np.median(jitter):.3f} ms, p99 "
        f"{np.percentile(jitter, 99):.3f} ms, max {jitter.max():.3f} ms{extra}"
    )


OPERATOR_NODES = ("tracker_node", "glove_node", "retarget_node")
RATE_ARGS = {"tracker_node": ["-p", "rate_hz:=120.0"], "glove_node": ["-p", "rate_hz:=120.0"], "retarget_node": []}
# Each node on rclpy's Python SingleThreadedExecutor instead of the runner's C++ EventsExecutor.
PYTHON_EXECUTOR = ("import runpy, sys, rclpy.executors, rynn_common.node_runner as runner; "
                   "runner.EventsExecutor = rclpy.executors.SingleThreadedExecutor; "
                   "runpy.run_module(sys.argv[1], run_name='__main__')")


def layout_commands(layout: str) -> dict[str, list[str]]:
    """Process name -> command: each node its own process (events or Python executor), or one container."""
    ros_args = {name: ["--ros-args", "-r", f"__node:={name}", *RATE_ARGS[name]] for name in OPERATOR_NODES}
    if layout == "container":
        command = [sys.executable, "-m", "rynn_world.launcher.container", "operator"]
        for name in OPERATOR_NODES:
            command += ["--node", f"rynn_retarget.nodes.{name}", *ros_args[name]]
        return {"operator container": command}
    prefix = ["-c", PYTHON_EXECUTOR] if layout == "python_executor" else ["-m"]
    return {name: [sys.executable, *prefix, f"rynn_retarget.nodes.{name}", *ros_args[name]] for name in OPERATOR_NODES}


def node_graph(seconds: float, layout: str) -> None:
    """Start the three operator nodes in ``layout``, record /rynn/action stamps and CPU for ``seconds``."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rynn_teleop_msgs.msg import RobotAction

    env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env["ROS_DOMAIN_ID"] = str(random.randint(101, 200))
    packages = ("rynn_common", "rynn_retarget", "rynn_robot_bridge", "rynn_world_node")
    env["PYTHONPATH"] = os.pathsep.join(str(REPO / "src" / p) for p in packages)
    processes = {name: subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for name, command in layout_commands(layout).items()}
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("bench_retarget_loop", context=context)
    stamps = []
    node.create_subscription(
        RobotAction, ACTION_TOPIC,
        lambda m: stamps.append(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9),
        QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE),
    )
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + 60.0
        while len(stamps) < 200 and time.monotonic() < deadline:  # discovery + warm-up
            executor.spin_once(timeout_sec=0.05)
        stamps.clear()
        cpu = CpuMeter({name: proc.pid for name, proc in processes.items()})
        cpu.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        shares = cpu.shares()
        summarize(f"{layout}: retarget_node over DDS (node stamps)", stamps, seconds,
                  "\n    CPU % of one core: " + ", ".join(f"{n} {v:.1f}" for n, v in shares.items())
                  + f"; total {sum(shares.values()):.1f}")
    finally:
        for proc in processes.values():
            proc.send_signal(signal.SIGINT)
        for proc in processes.values():
            proc.wait(timeout=10)
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


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
    parser.add_argument("--layouts", nargs="+", default=["processes", "container", "python_executor"],
                        choices=["processes", "container", "python_executor"],
                        help="processes: one process per node (the node runner's EventsExecutor); container: all "
                             "three in one process; python_executor: one per node on rclpy's SingleThreadedExecutor")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"inputs: synthetic operator at 120 Hz; output target 200 Hz")
    print(f"load avg {os.getloadavg()[0]:.2f} (shared machine: compare the layouts of one run, not across runs)")
    for layout in args.layouts:
        node_graph(args.seconds, layout)
    single_thread_loop(args.seconds)


if __name__ == "__main__":
    main()
