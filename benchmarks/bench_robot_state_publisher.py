"""Robot state publisher figures: FK cost per /joint_states, and the node's CPU share in the graph's setting.

    .venv/bin/python benchmarks/bench_robot_state_publisher.py [--seconds 10] [--rate 100]

The node runs as its own process (as in the graph); this process publishes /joint_states at the
bridge's rate (100 Hz) with moving positions and counts /tf messages. CPU share = the node's
user+system time over the window / wall time (one core = 100 %; bench_digital_latency.CpuMeter). Prints the
machine and its load.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time

import numpy as np

from bench_digital_latency import SOURCES, CpuMeter, machine_info  # also sets up sys.path
from rynn_common.action_layout import joint_names
from rynn_common.description import default_urdf_path
from rynn_common.ros_names import JOINT_STATES_TOPIC, TF_TOPIC
from rynn_robot_bridge.robot_state import RobotStatePublisherCore


def core_figures(calls: int = 2000) -> None:
    core = RobotStatePublisherCore(default_urdf_path())
    names, rng = joint_names(), np.random.default_rng(0)
    positions = rng.uniform(-0.5, 0.5, size=(calls, len(names)))
    times = []
    for row in positions:
        start = time.perf_counter()
        core.update(names, row)
        times.append(time.perf_counter() - start)
    print(f"core update (54 joints, FK + 54 transforms): p50 {np.median(times) * 1e6:.0f} us, "
          f"p99 {np.percentile(times, 99) * 1e6:.0f} us over {calls} calls")


def node_figures(seconds: float, rate_hz: float) -> None:
    import rclpy
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, SOURCES), os.environ.get("PYTHONPATH", "")]),
               ROS_DOMAIN_ID=str(random.randint(120, 200)), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")})
    node_proc = subprocess.Popen([sys.executable, "-m", "rynn_robot_bridge.nodes.robot_state_publisher_node"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    rclpy.init()
    node = rclpy.create_node("bench_robot_state_publisher")
    received = []
    node.create_subscription(TFMessage, TF_TOPIC, received.append, 100)
    publisher = node.create_publisher(JointState, JOINT_STATES_TOPIC, 10)
    try:
        deadline = time.monotonic() + 60
        while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
        names = joint_names()
        cpu = CpuMeter({"robot_state_publisher": node_proc.pid})
        cpu.start()
        received.clear()
        period, next_send, tick = 1.0 / rate_hz, time.monotonic(), 0
        while cpu.used()[0] < seconds:
            msg = JointState(name=names, position=list(0.3 * np.sin(tick * 0.01 + np.arange(len(names)))))
            msg.header.stamp = node.get_clock().now().to_msg()
            publisher.publish(msg)
            tick += 1
            next_send += period
            while time.monotonic() < next_send:
                rclpy.spin_once(node, timeout_sec=max(0.0, next_send - time.monotonic()))
        wall, used = cpu.used()
        print(f"node: /joint_states {tick / wall:.0f} Hz in, /tf {len(received) / wall:.1f} Hz out "
              f"({len(received[-1].transforms) if received else 0} transforms each), "
              f"CPU {100 * used['robot_state_publisher'] / wall:.1f} % of one core over {wall:.1f} s")
    finally:
        node.destroy_node()
        rclpy.shutdown()
        node_proc.terminate()
        node_proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=100.0, help="/joint_states rate (the bridge publishes 100 Hz)")
    args = parser.parse_args()
    print(f"machine: {machine_info()}")
    core_figures()
    node_figures(args.seconds, args.rate)


if __name__ == "__main__":
    main()
