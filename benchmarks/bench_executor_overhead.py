"""CPU-seconds per received message of a node process, on the node runner's EventsExecutor vs rclpy's
Python SingleThreadedExecutor (what the runner used before), side by side in one run.

A subscriber process (the shared node runner, one RobotAction subscription whose callback only
counts) receives ``--messages`` messages that this process publishes at ``--rate`` Hz. Its CPU
time (utime + stime from /proc) from just before the first to just after the last message,
divided by the messages it received, is the cost of taking one message and running one Python
callback: a per-message figure that holds on a loaded machine, where shares of wall time do not.

    .venv/bin/python benchmarks/bench_executor_overhead.py [--messages 3000] [--rate 400] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = [REPO / "src" / p for p in ("rynn_common", "rynn_retarget", "rynn_robot_bridge", "rynn_world_node")]
sys.path[:0] = [str(p) for p in SOURCES]
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_digital_latency import CpuMeter  # the benchmarks' one CPU reader (test_benchmark_cpu_meter)

# The subscriber: counts messages on /bench/action and publishes the count on /bench/count at 5 Hz.
SUBSCRIBER = """
import sys, rclpy.executors, rynn_common.node_runner as runner
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rynn_teleop_msgs.msg import RobotAction
from std_msgs.msg import Int64
if sys.argv[1] == "python":
    runner.EventsExecutor = rclpy.executors.SingleThreadedExecutor
class Counter(Node):
    def __init__(self):
        super().__init__("bench_counter")
        self.count = 0
        qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
        if sys.argv[1] == "polled":  # taken on the node's own 20 Hz timer, every message
            from rynn_common.polled_input import PolledSubscription
            self.polled = PolledSubscription(self, RobotAction, "/bench/action", qos)
            self.create_timer(0.05, self.take_all)
        else:
            self.create_subscription(RobotAction, "/bench/action", self.on_action, qos, raw=True)
        self.reply = self.create_publisher(Int64, "/bench/count", 10)
        self.create_timer(0.2, lambda: self.reply.publish(Int64(data=self.count)))
    def on_action(self, _msg):
        self.count += 1
    def take_all(self):
        while self.polled.take() is not None:
            self.count += 1
runner.run_node(Counter)
"""


def measure(executor_kind: str, messages: int, rate_hz: float) -> tuple[float, int]:
    """(CPU seconds of the subscriber process over the burst, messages it received)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rynn_teleop_msgs.msg import RobotAction
    from std_msgs.msg import Int64

    from rynn_common.ros_conversions import make_robot_action

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, SOURCES)))
    process = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, executor_kind], env=env)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("bench_executor_publisher", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    counts = []
    node.create_subscription(Int64, "/bench/count", lambda msg: counts.append(msg.data), 10)
    publisher = node.create_publisher(RobotAction, "/bench/action", QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE))
    action = make_robot_action([0.0] * 54, node.get_clock().now().to_msg())
    try:
        deadline = time.monotonic() + 120
        while (not counts or publisher.get_subscription_count() == 0) and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        if not counts:
            sys.exit(f"the {executor_kind} subscriber did not come up")
        time.sleep(1.0)
        meter = CpuMeter({"subscriber": process.pid})
        meter.start()
        period = 1.0 / rate_hz
        next_at = time.monotonic()
        for _ in range(messages):
            publisher.publish(action)
            next_at += period
            time.sleep(max(0.0, next_at - time.monotonic()))
        while counts[-1] < messages and time.monotonic() < deadline + 300:
            executor.spin_once(timeout_sec=0.05)
        used = meter.used()[1]["subscriber"]
        return used, counts[-1]
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        node.destroy_node()
        rclpy.shutdown(context=context)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--rate", type=float, default=400.0, help="publishing rate, Hz")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of each executor")
    parser.add_argument("--kinds", default="events,python,polled",
                        help="comma-separated: events (EventsExecutor, a raw callback per message), python (rclpy's "
                             "SingleThreadedExecutor), polled (rynn_common.polled_input: taken on a 20 Hz timer)")
    options = parser.parse_args()
    print(f"load avg {os.getloadavg()[0]:.1f} (CPU per message holds under load; the idle spin of the runner, "
          f"10 wake-ups a second, is included)")
    for _ in range(options.rounds):
        for kind in options.kinds.split(","):
            used, received = measure(kind, options.messages, options.rate)
            print(f"  {kind:6s} executor: {received} messages, {1e6 * used / max(received, 1):7.1f} us CPU per message "
                  f"({used:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
